"""Locate or build nccl-tests (all_reduce_perf with MPI=1), or install the PyTorch smoke test script."""

from __future__ import annotations

from dataclasses import dataclass, field

from steps.nccl.facts import Binary, NcclFacts, cuda_of_package, multiarch_triplet
from steps.nccl.run import smoke_script
from wizard.answers.sections import NcclSection
from wizard.engine.step import Change, FileWrite, Impact, RemoteCommand

NCCL_TESTS_GIT = "https://github.com/NVIDIA/nccl-tests.git"
SMOKE_SCRIPT = "/opt/roce-wizard/nccl_allreduce_smoke.py"
CUDA_REPO_HINT = (
    "add NVIDIA's CUDA apt repository (install the cuda-keyring package for this distribution from "
    "https://developer.download.nvidia.com/compute/cuda/repos/, then apt-get update)"
)


@dataclass
class TestsPlan:
    """Changes that make the cross-host test runnable, with notes and blockers."""

    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    nccl_version_after: str | None = None  # libnccl2 upstream version once the plan ran (candidate if installed)
    ready: str | None = None  # why nothing is needed, for the plan's noop reason


def mpi_home(cfg: NcclSection, facts: NcclFacts) -> str:
    """Open MPI prefix: the answer, else Debian's multiarch location."""
    return cfg.mpi_home or f"/usr/lib/{multiarch_triplet(facts.arch)}/openmpi"


def cuda_homes(cfg: NcclSection, libnccl2: str | None) -> list[str]:
    """Where the probe looks for nvcc: the answer only, or /usr/local/cuda then the release libnccl2 was built for."""
    if cfg.cuda_home:
        return [cfg.cuda_home]
    homes = ["/usr/local/cuda"]
    if release := cuda_of_package(libnccl2):
        homes.append(f"/usr/local/cuda-{release}")
    return homes


def plan_tests(cfg: NcclSection, facts: NcclFacts, host: str) -> TestsPlan:
    """What the chosen cross-host test needs on this host."""
    out = TestsPlan()
    if cfg.test == "none":
        out.notes.append("nccl.test is none: the fabric is not exercised by NCCL; only nccl.conf is written")
        out.ready = "no cross-host test requested"
        return out
    if cfg.test == "torch":
        return _plan_torch(cfg, facts, host, out)
    return _plan_nccl_tests(cfg, facts, host, out)


def _plan_torch(cfg: NcclSection, facts: NcclFacts, host: str, out: TestsPlan) -> TestsPlan:
    if not facts.torchrun:
        out.blockers.append(
            f"{host}: `{cfg.torchrun}` not found: install PyTorch with CUDA (e.g. python3 -m venv /opt/torch && "
            f"/opt/torch/bin/pip install torch) and set nccl.torchrun to its torchrun, or use nccl.test: nccl-tests"
        )
    script = smoke_script()
    if facts.smoke_script != script:
        out.changes.append(
            Change(
                summary=f"Install the PyTorch all_reduce smoke test {SMOKE_SCRIPT}",
                why="nccl.test is torch: torchrun starts it on every host to prove NCCL's transport",
                files=[FileWrite(path=SMOKE_SCRIPT, content=script, mode=0o755, before=facts.smoke_script)],
            )
        )
    else:
        out.ready = f"smoke test {SMOKE_SCRIPT} in place"
    out.nccl_version_after = facts.nccl_version
    return out


def _plan_nccl_tests(cfg: NcclSection, facts: NcclFacts, host: str, out: TestsPlan) -> TestsPlan:
    binary = facts.all_reduce_perf or Binary(path=f"{cfg.tests_path}/all_reduce_perf")
    build = not binary.exists or not binary.mpi
    if binary.exists and build:
        out.notes.append(
            f"{binary.path} is not linked against MPI: under mpirun every rank would run its own one-GPU job "
            "(duplicated headers); rebuilding with MPI=1"
        )
    system_nccl = cfg.nccl_home == "/usr"
    libnccl2 = facts.packages.get("libnccl2")
    wanted: list[str] = []
    if system_nccl and not libnccl2 and (build or "libnccl.so.2" in binary.missing):
        wanted.append("libnccl2")
        if facts.libnccl2_candidate is None:
            out.blockers.append(f"{host}: libnccl2 is not installed and apt has no candidate for it: {CUDA_REPO_HINT}")
    package_version = libnccl2 or facts.libnccl2_candidate
    out.nccl_version_after = (package_version or "").split("-")[0] or None
    if cfg.mpirun == "mpirun" and facts.mpirun is None:
        wanted.append("openmpi-bin")  # mpirun starts orted on every host over ssh: needed everywhere
    elif facts.mpirun is None:
        out.blockers.append(f"{host}: {cfg.mpirun} not found; install that MPI or set nccl.mpirun")
    cuda_home = facts.nvcc
    if build:
        wanted += ["libopenmpi-dev", "build-essential"] + (["libnccl-dev"] if system_nccl else [])
        if cuda_home is None:
            cuda_home = _plan_nvcc(cfg, package_version, host, wanted, out)
        if facts.tests_source is None and cfg.tests_git_ref:
            wanted.append("git")
    missing = [p for p in dict.fromkeys(wanted) if p not in facts.packages]
    if missing:
        out.changes.append(
            Change(
                summary="Install " + ", ".join(missing),
                why="nccl-tests needs NCCL, Open MPI on every host (mpirun starts its daemons there over ssh) "
                "and, to build, the NCCL/MPI headers, a compiler and nvcc",
                commands=[_apt(missing)],
            )
        )
    if build:
        _plan_build(cfg, facts, host, cuda_home, out)
    elif not missing:
        out.ready = f"all_reduce_perf at {cfg.tests_path} is an MPI build linked to {binary.libnccl}"
    return out


def _plan_nvcc(cfg: NcclSection, package_version: str | None, host: str, wanted: list[str], out: TestsPlan) -> str:
    if cfg.cuda_home:
        out.blockers.append(f"{host}: no nvcc at {cfg.cuda_home}/bin/nvcc (nccl.cuda_home); install the CUDA toolkit")
        return cfg.cuda_home
    release = cuda_of_package(package_version)
    if release is None:
        out.blockers.append(
            f"{host}: no nvcc under /usr/local/cuda and no CUDA release to match; install the CUDA toolkit "
            "and set nccl.cuda_home"
        )
        return "/usr/local/cuda"
    suffix = release.replace(".", "-")
    wanted += [f"cuda-nvcc-{suffix}", f"cuda-cudart-dev-{suffix}"]
    out.notes.append(
        f"nvcc not found: installing only the CUDA {release} compiler and runtime headers (the release libnccl2 "
        "was built for), not the whole toolkit or another driver"
    )
    return f"/usr/local/cuda-{release}"


def _plan_build(cfg: NcclSection, facts: NcclFacts, host: str, cuda_home: str | None, out: TestsPlan) -> None:
    source = cfg.tests_source
    if facts.tests_source == "other":
        out.blockers.append(
            f"{host}: {source} exists but is not an nccl-tests source tree (no Makefile and src/); move it away "
            "or point nccl.tests_source at a checkout of https://github.com/NVIDIA/nccl-tests"
        )
        return
    if facts.tests_source is None:
        if not cfg.tests_git_ref:
            out.blockers.append(
                f"{host}: all_reduce_perf is not at {cfg.tests_path} and there is no source at {source}: copy an "
                f"nccl-tests release there, or set nccl.tests_git_ref (e.g. v2.17.9) to let the wizard clone "
                f"{NCCL_TESTS_GIT}, or use nccl.test: torch"
            )
            return
        out.changes.append(
            Change(
                summary=f"Fetch nccl-tests {cfg.tests_git_ref} into {source}",
                why="nccl.tests_git_ref allows cloning NVIDIA's nccl-tests at that pinned tag",
                commands=[
                    RemoteCommand(
                        argv=["git", "clone", "--depth", "1", "--branch", cfg.tests_git_ref, NCCL_TESTS_GIT, source],
                        timeout_s=600,
                    )
                ],
            )
        )
    jobs = str(min(facts.nproc or 8, 32))
    argv = ["make", "-C", source, "-j", jobs, "MPI=1", f"MPI_HOME={mpi_home(cfg, facts)}"]
    argv += [f"CUDA_HOME={cuda_home}", f"NCCL_HOME={cfg.nccl_home}", f"BUILDDIR={cfg.tests_path}"]
    out.changes.append(
        Change(
            summary=f"Build nccl-tests with MPI=1 into {cfg.tests_path}",
            why="mpirun needs an MPI build: without MPI=1 each rank runs alone and nothing crosses the network",
            impact=Impact.SAFE,
            commands=[RemoteCommand(argv=argv, timeout_s=3600)],
        )
    )


def _apt(packages: list[str]) -> RemoteCommand:
    return RemoteCommand(
        argv=["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "--no-install-recommends"]
        + packages,
        timeout_s=1800,
    )
