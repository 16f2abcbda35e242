"""Simulated NCCL jobs: mpirun running nccl-tests' all_reduce_perf across lab hosts, and torchrun."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wizard.lab import nccl_sim as sim
from wizard.lab.commands import command
from wizard.lab.shell.interp import MARKER
from wizard.lab.streams import CommandFailed, Ctx

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

MPI_ABORT = """--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[40311,1],{rank}]
  Exit code:    1
--------------------------------------------------------------------------"""
ROOT_REFUSED = """--------------------------------------------------------------------------
mpirun has detected an attempt to run as root.

Running as root is *strongly* discouraged as any mistake (e.g., in
defining TMPDIR) or bug can result in catastrophic damage to the OS
file system, leaving your system in an unusable state.

We strongly suggest that you run mpirun as a non-root user.

You can override this protection by adding the --allow-run-as-root option
to the cmd line or by setting two environment variables in the following way:
the variable OMPI_ALLOW_RUN_AS_ROOT=1 to allow execution as root and
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 to confirm the choice.
--------------------------------------------------------------------------"""


def find_host(origin: SimHost, name: str) -> SimHost | None:
    """A lab host by management address or host name, as seen from ``origin``."""
    lab = origin.lab
    if lab is None:
        return origin if name in (origin.name, str(origin.mgmt.ip), "localhost") else None
    for host in lab.hosts.values():
        if name in (host.name, host.hostname, str(host.mgmt.ip)) and host.state == "running":
            return host
    return None


def binary_kind(host: SimHost, path: str) -> str | None:
    """'mpi' / 'plain' for a simulated all_reduce_perf build, None when absent or something else."""
    node = host.fs.lookup(path)
    data = node.read() if node is not None and node.kind == "file" else b""  # type: ignore[attr-defined]
    if not data.startswith(MARKER + b"all_reduce_perf"):
        return None
    return "mpi" if b"mpi=1" in data else "plain"


@dataclass
class MpiArgs:
    np: int = 1
    per_node: int | None = None
    hosts: list[tuple[str, int]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    as_root: bool = False
    program: list[str] = field(default_factory=list)


def parse_mpirun(ctx: Ctx) -> MpiArgs:
    args, out, i = ctx.args, MpiArgs(), 0
    while i < len(args):
        a = args[i]
        if a in ("-np", "-n", "--np"):
            out.np, i = int(args[i + 1]), i + 2
        elif a in ("-N", "--npernode", "-npernode"):
            out.per_node, i = int(args[i + 1]), i + 2
        elif a in ("-H", "--host", "-host"):
            for item in args[i + 1].split(","):
                name, _, slots = item.partition(":")
                out.hosts.append((name, int(slots or 1)))
            i += 2
        elif a == "-x":
            key, eq, value = args[i + 1].partition("=")
            if eq:
                out.env[key] = value
            elif key in ctx.env:
                out.env[key] = ctx.env[key]
            i += 2
        elif a in ("--mca", "-mca"):
            i += 3
        elif a in ("--bind-to", "--map-by", "--hostfile", "-hostfile"):
            i += 2
        elif a == "--allow-run-as-root":
            out.as_root, i = True, i + 1
        elif a.startswith("-"):
            i += 1
        else:
            out.program = args[i:]
            break
    return out


@command("mpirun", "mpiexec", "orterun")
async def mpirun(ctx: Ctx) -> int:
    if "--version" in ctx.args or "-V" in ctx.args:
        ctx.print("mpirun (Open MPI) 4.1.2\n\nReport bugs to http://www.open-mpi.org/community/help/")
        return 0
    opts = parse_mpirun(ctx)
    if ctx.root and not opts.as_root:
        raise CommandFailed(ROOT_REFUSED, 1)
    if not opts.program:
        raise CommandFailed("mpirun: no executable specified", 1)
    hosts: list[SimHost] = []
    for name, _slots in opts.hosts or [(ctx.host.name, opts.np)]:
        target = find_host(ctx.host, name)
        if target is None:
            raise CommandFailed(f"ssh: connect to host {name} port 22: No route to host\n" + _daemon_failure(), 1)
        if "openmpi-bin" not in target.packages:
            raise CommandFailed("bash: line 1: orted: command not found\n" + _daemon_failure(), 1)
        hosts.append(target)
    program = opts.program[0]
    for rank_host, target in enumerate(hosts):
        kind = binary_kind(target, program)
        if kind is None:
            raise CommandFailed(_not_found(program, target.name, rank_host * (opts.per_node or 1)), 1)
        if "libnccl2" not in target.packages:
            raise CommandFailed(
                f"{program}: error while loading shared libraries: libnccl.so.2: cannot open shared object file: "
                "No such file or directory\n" + MPI_ABORT.format(rank=rank_host * (opts.per_node or 1)),
                1,
            )
    await asyncio.sleep(2.0 * ctx.host.time_scale)
    text, ok = all_reduce_output(hosts, opts, binary_kind(hosts[0], program) == "mpi", ctx.cred.user)
    ctx.out.write(text)
    if not ok:
        ctx.eprint(MPI_ABORT.format(rank=0))
        return 1
    return 0


def _daemon_failure() -> str:
    return (
        "--------------------------------------------------------------------------\n"
        "ORTE was unable to reliably start one or more daemons.\n"
        "This usually is caused by:\n\n"
        "* not finding the required libraries and/or binaries on\n"
        "  one or more nodes.\n"
        "--------------------------------------------------------------------------"
    )


def _not_found(program: str, node: str, rank: int) -> str:
    return (
        "--------------------------------------------------------------------------\n"
        "mpirun was unable to launch the specified application as it could not access\n"
        "or execute an executable:\n\n"
        f"Executable: {program}\nNode: {node}\n\n"
        f"while attempting to start process rank {rank}.\n"
        "--------------------------------------------------------------------------"
    )


def all_reduce_output(hosts: list[SimHost], opts: MpiArgs, mpi_build: bool, user: str = "root") -> tuple[str, bool]:
    """all_reduce_perf's stdout for the job, in nccl-tests 2.17 format, and whether it succeeded."""
    gpus = opts.per_node or max(1, opts.np // max(1, len(hosts)))
    nranks = gpus * len(hosts)
    views = [sim.host_view(h, opts.env, user) for h in hosts]
    job = sim.plan_job(views)
    version = views[0].version or "2.21.5"
    code = _version_code(version)
    lines = [sim.SIMULATED]
    if not mpi_build:  # every process is its own one-GPU job: the tell-tale duplicated header
        for h in hosts:
            lines += _header(code, [(0, h, 0)])
        return "\n".join(lines) + "\n", True
    placement = [(r, h, r % gpus) for r, h in enumerate(h for h in hosts for _ in range(gpus))]
    lines += _header(code, placement)
    debug = opts.env.get("NCCL_DEBUG", views[0].env.get("NCCL_DEBUG", "")).upper() in ("INFO", "TRACE")
    if debug:
        for index, view in enumerate(views):
            lines += sim.info_lines(view, job, index * gpus, nranks, 41000 + 97 * index)
    lines.append(f"NCCL version {version}+cuda{sim.nccl_cuda(hosts[0])}")
    if job.failure:
        for h, warn in job.failure.items():
            if not debug:
                lines.append(warn)
            lines.append(
                f"{h}: Test NCCL failure common.cu:1279 'unhandled system error (run with NCCL_DEBUG=INFO "
                "for details) / Call to ibv_modify_qp failed with error Network is unreachable'"
            )
        return "\n".join(lines) + "\n", False
    lines += _table(job, nranks)
    return "\n".join(lines) + "\n", True


def _version_code(version: str) -> int:
    major, minor, patch = (int(x) for x in (version.split(".") + ["0", "0"])[:3])
    return major * 10000 + minor * 100 + patch


def _header(code: int, placement: list[tuple[int, SimHost, int]]) -> list[str]:
    lines = [
        f"# nccl-tests version 2.17.9 nccl-headers={code} nccl-library={code}",
        "# Collective test starting: all_reduce_perf",
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 "
        "validation: 1 graph: 0 unalign: 0",
        "#",
        "# Using devices",
    ]
    for rank, host, dev in placement:
        gpu = host.profile.gpus[dev]
        pid = 41000 + 97 * host.index + dev
        name = host.hostname.split(".")[0]
        lines.append(
            f"#  Rank {rank:2d} Group  0 Pid {pid:6d} on {name:>10} device {dev:2d} [{gpu.pci[:-2]}] {gpu.name}"
        )
    return lines


def _table(job: sim.Job, nranks: int) -> list[str]:
    lines = [
        "#",
        "#                                                              out-of-place                       in-place",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   "
        "busbw  #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  "
        "(GB/s)",
    ]
    factor = 2 * (nranks - 1) / nranks
    total = 0.0
    sizes = [8 << i for i in range(31)]  # 8 B .. 8 GiB
    for size in sizes:
        time_us = job.latency_us + size * factor / (job.busbw * 1e3)
        algbw = size / time_us / 1e3
        busbw = algbw * factor
        total += busbw
        cell = f"{_time(time_us)} {algbw:7.2f} {busbw:7.2f} {0:7d}"
        lines.append(f"{size:12d}  {size // 4:12d}     float     sum      -1 {cell} {cell}")
    lines += [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {total / len(sizes):.4f}",
        "#",
        "# Collective test concluded: all_reduce_perf",
        "#",
    ]
    return lines


def _time(us: float) -> str:
    text = f"{us:.2f}" if us < 1e4 else f"{us:.1f}" if us < 1e5 else f"{us:.0f}"
    return f"{text:>8}"


import wizard.lab.cmd_nccl_tools  # noqa: E402,F401  - git, make, nvcc, ldd, ssh and torchrun register there
