"""Read-only probe of the nccl stage: RDMA ports now, nccl.conf, packages, nccl-tests, MPI, nvcc, torchrun."""

from __future__ import annotations

from typing import Any

from steps.discovery.gid_read import GID_ATTRS_PATTERN, GID_ATTRS_WHY, GID_VALUES, read_gid_text
from steps.nccl.build import SMOKE_SCRIPT, cuda_homes
from steps.nccl.facts import (
    PACKAGES,
    NcclFacts,
    RdmaPortState,
    parse_apt_candidate,
    parse_ldd,
    parse_link_layers,
    parse_net_sysfs,
    sources_nccl_conf,
)
from wizard.answers.sections import NcclSection
from wizard.engine.prefetch import read_file_argv
from wizard.executors.base import Executor
from wizard.parsers import ParseError, parse

BASHRC = "/etc/bash.bashrc"
ROOT_CONF = "/root/.nccl.conf"

# The probe's read-only commands, defined once: probe_host runs them and nccl_prefetch declares them.
ARCH = ["uname", "-m"]
NPROC = ["nproc"]
RDMA_LINK = ["rdma", "link", "show"]
LINK_LAYERS = "grep -sH . /sys/class/infiniband/*/ports/*/link_layer"
NET_SYSFS = "grep -sH . /sys/class/net/*/mtu /sys/class/net/*/bonding/slaves"
LSMOD = ["lsmod"]
HOME = ["printenv", "HOME"]
USER = ["printenv", "USER"]
MEMLOCK = ["bash", "-c", "ulimit -l"]
DPKG = ["dpkg-query", "-W", *PACKAGES]
CANDIDATE = ["apt-cache", "policy", "libnccl2"]
# Not declared (Nccl.dependent_probes): the nvcc / nccl-tests source tests (only when all_reduce_perf is missing or
# lacks MPI; where nvcc is looked for follows the libnccl2 version this read finds).
DEPENDENT = {
    GID_ATTRS_PATTERN: GID_ATTRS_WHY,
    "cat -- /*/.nccl.conf": "the SSH user's ~/.nccl.conf where printenv HOME of this read is not /home/USER",
    "*/bin/nvcc --version": "only when all_reduce_perf is missing or built without MPI (ldd of this read)",
    "test -* *": "the nccl-tests source tree, only when all_reduce_perf is missing or built without MPI",
}


def tests_argvs(cfg: NcclSection) -> list[list[str]]:
    """ldd of all_reduce_perf and mpirun --version (nccl-tests)."""
    return [["ldd", f"{cfg.tests_path}/all_reduce_perf"], [cfg.mpirun, "--version"]]


def torchrun_argv(cfg: NcclSection) -> list[str]:
    return [cfg.torchrun, "--help"]


def nccl_prefetch(cfg: NcclSection, ssh_user: str, libnccl2_installed: bool) -> list[tuple[list[str] | str, bool]]:
    """What probe_host runs whatever the host shows, given the answers, the SSH user and whether discovery saw
    libnccl2 installed (apt-cache policy runs only without it)."""
    plain: list[list[str] | str] = [ARCH, NPROC, RDMA_LINK, LINK_LAYERS, GID_VALUES, NET_SYSFS, LSMOD]
    plain += [read_file_argv(cfg.conf_path), HOME, USER, MEMLOCK, read_file_argv(BASHRC), DPKG]
    plain += [] if libnccl2_installed else [CANDIDATE]
    if cfg.test == "nccl-tests":
        plain += tests_argvs(cfg)
    elif cfg.test == "torch":
        plain += [torchrun_argv(cfg), read_file_argv(SMOKE_SCRIPT)]
    # ~/.nccl.conf follows printenv HOME of this read: predicted as the usual home, a miss where it is elsewhere
    plain.append(read_file_argv(ROOT_CONF if ssh_user == "root" else f"/home/{ssh_user}/.nccl.conf"))
    declared = [(c, False) for c in plain]
    return declared + ([] if ssh_user == "root" else [(read_file_argv(ROOT_CONF), True)])


async def probe_host(ex: Executor, cfg: NcclSection) -> NcclFacts:
    """Everything the plan and the checks need from one host; changes nothing.

    Port states, GIDs, MTUs, bonds and modules are read here, not taken from discovery: earlier stages of the
    same run (network, gpudirect) change them after discovery ran.
    """
    facts = NcclFacts(conf_path=cfg.conf_path)

    async def text(argv: list[str] | str) -> str:
        result = await ex.run(argv)
        return result.stdout if result.ok else ""

    async def grep(command: str) -> str:
        # Globs need the remote shell, as in discovery; sysfs paths hold no spaces. grep exits 2 when some files
        # cannot be read (empty GID slots give EINVAL) but still prints the others.
        return (await ex.run(command)).stdout

    facts.arch = (await text(ARCH)).strip() or "x86_64"
    nproc = (await text(NPROC)).strip()
    facts.nproc = int(nproc) if nproc.isdigit() else None
    facts.rdma = rdma_ports(await text(RDMA_LINK), await grep(LINK_LAYERS), await read_gid_text(grep))
    facts.mtus, facts.bonds = parse_net_sysfs(await grep(NET_SYSFS))
    modules = _try("lsmod", await text(LSMOD))
    facts.modules = sorted(m.name for m in modules.modules) if modules else []
    facts.conf = await ex.read_file(cfg.conf_path)
    home = (await text(HOME)).strip()
    if home.startswith("/"):
        facts.user_conf_path = f"{home.rstrip('/')}/.nccl.conf"
        facts.user_conf = await ex.read_file(facts.user_conf_path)
    facts.ssh_user = (await text(USER)).strip() or None
    if facts.user_conf_path != ROOT_CONF:
        facts.root_conf_path = ROOT_CONF
        facts.root_conf = await ex.read_file(ROOT_CONF, sudo=True)
    # What mpirun's remote daemons get: a non-interactive session (pam_limits applied, no profile), not a login shell
    facts.memlock = (await text(MEMLOCK)).strip() or None
    bashrc = await ex.read_file(BASHRC)
    if bashrc and any(sources_nccl_conf(line) for line in bashrc.splitlines()):
        facts.bashrc = bashrc
    # dpkg-query exits 1 when one name is unknown but still lists the others.
    packages = _try("dpkg_query", (await ex.run(DPKG)).stdout)
    facts.packages = dict(packages.packages) if packages else {}
    if "libnccl2" not in facts.packages:
        facts.libnccl2_candidate = parse_apt_candidate(await text(CANDIDATE))
    if cfg.test == "nccl-tests":
        await _probe_nccl_tests(ex, cfg, facts)
    elif cfg.test == "torch":
        facts.torchrun = (await ex.run(torchrun_argv(cfg))).ok
        facts.smoke_script = await ex.read_file(SMOKE_SCRIPT)
    return facts


def rdma_ports(links: str, layers: str, gids: str) -> list[RdmaPortState]:
    """`rdma link`, sysfs link_layer and GID listings -> one state per RDMA port (LAG devices included)."""
    table = _try("sysfs_gids", gids)
    layer = parse_link_layers(layers)
    ports = []
    for link in _links(links):
        v2 = [e.index for e in table.roce_v2_ipv4(link.device, link.port)] if table else []
        ports.append(
            RdmaPortState(
                device=link.device,
                port=link.port,
                state=link.state,
                physical_state=link.physical_state,
                netdev=link.netdev,
                link_layer=layer.get((link.device, link.port)),
                roce_v2_ipv4_gids=v2,
            )
        )
    return ports


def _links(text: str) -> list[Any]:
    parsed = _try("rdma_link", text)
    return list(parsed.links) if parsed else []


def _try(tool: str, text: str) -> Any:
    if not text.strip():
        return None
    try:
        return parse(tool, text)
    except ParseError:
        return None


async def _probe_nccl_tests(ex: Executor, cfg: NcclSection, facts: NcclFacts) -> None:
    binary = f"{cfg.tests_path}/all_reduce_perf"
    ldd_argv, version_argv = tests_argvs(cfg)
    ldd = await ex.run(ldd_argv)
    facts.all_reduce_perf = parse_ldd(binary, ldd.stdout, ldd.exit_status)
    version = await ex.run(version_argv)
    facts.mpirun = version.stdout.strip().splitlines()[0] if version.ok and version.stdout.strip() else None
    if facts.all_reduce_perf.exists and facts.all_reduce_perf.mpi:
        return  # nothing to build: compiler and sources do not matter
    for home in cuda_homes(cfg, facts.packages.get("libnccl2") or facts.libnccl2_candidate):
        if (await ex.run([f"{home}/bin/nvcc", "--version"])).ok:
            facts.nvcc = home
            break
    source = cfg.tests_source
    if (await ex.run(["test", "-f", f"{source}/Makefile"])).ok and (await ex.run(["test", "-d", f"{source}/src"])).ok:
        facts.tests_source = "tree"
    elif (await ex.run(["test", "-e", source])).ok:
        facts.tests_source = "other"
