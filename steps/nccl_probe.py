"""Read-only probe of the nccl stage: RDMA ports now, nccl.conf, packages, nccl-tests, MPI, nvcc, torchrun."""

from __future__ import annotations

from typing import Any

from steps.discovery import GID_GLOBS
from steps.nccl_build import SMOKE_SCRIPT, cuda_homes
from steps.nccl_facts import (
    PACKAGES,
    NcclFacts,
    RdmaPortState,
    parse_apt_candidate,
    parse_ldd,
    parse_link_layers,
    parse_net_sysfs,
    sources_nccl_conf,
)
from wizard.answer_sections import NcclSection
from wizard.executors.base import Executor
from wizard.parsers import ParseError, parse

BASHRC = "/etc/bash.bashrc"
ROOT_CONF = "/root/.nccl.conf"


async def probe_host(ex: Executor, cfg: NcclSection) -> NcclFacts:
    """Everything the plan and the checks need from one host; changes nothing.

    Port states, GIDs, MTUs, bonds and modules are read here, not taken from discovery: earlier stages of the
    same run (network, gpudirect) change them after discovery ran.
    """
    facts = NcclFacts(conf_path=cfg.conf_path)

    async def text(argv: list[str] | str) -> str:
        result = await ex.run(argv)
        return result.stdout if result.ok else ""

    async def grep(paths: str) -> str:
        # Globs need the remote shell, as in discovery; sysfs paths hold no spaces. grep exits 2 when some files
        # cannot be read (empty GID slots give EINVAL) but still prints the others.
        return (await ex.run(f"grep -sH . {paths}")).stdout

    facts.arch = (await text(["uname", "-m"])).strip() or "x86_64"
    nproc = (await text(["nproc"])).strip()
    facts.nproc = int(nproc) if nproc.isdigit() else None
    facts.rdma = rdma_ports(
        await text(["rdma", "link", "show"]),
        await grep("/sys/class/infiniband/*/ports/*/link_layer"),
        await grep(GID_GLOBS),
    )
    facts.mtus, facts.bonds = parse_net_sysfs(await grep("/sys/class/net/*/mtu /sys/class/net/*/bonding/slaves"))
    modules = _try("lsmod", await text(["lsmod"]))
    facts.modules = sorted(m.name for m in modules.modules) if modules else []
    facts.conf = await ex.read_file(cfg.conf_path)
    home = (await text(["printenv", "HOME"])).strip()
    if home.startswith("/"):
        facts.user_conf_path = f"{home.rstrip('/')}/.nccl.conf"
        facts.user_conf = await ex.read_file(facts.user_conf_path)
    facts.ssh_user = (await text(["printenv", "USER"])).strip() or None
    if facts.user_conf_path != ROOT_CONF:
        facts.root_conf_path = ROOT_CONF
        facts.root_conf = await ex.read_file(ROOT_CONF, sudo=True)
    # What mpirun's remote daemons get: a non-interactive session (pam_limits applied, no profile), not a login shell
    facts.memlock = (await text(["bash", "-c", "ulimit -l"])).strip() or None
    bashrc = await ex.read_file(BASHRC)
    if bashrc and any(sources_nccl_conf(line) for line in bashrc.splitlines()):
        facts.bashrc = bashrc
    # dpkg-query exits 1 when one name is unknown but still lists the others.
    packages = _try("dpkg_query", (await ex.run(["dpkg-query", "-W", *PACKAGES])).stdout)
    facts.packages = dict(packages.packages) if packages else {}
    if "libnccl2" not in facts.packages:
        facts.libnccl2_candidate = parse_apt_candidate(await text(["apt-cache", "policy", "libnccl2"]))
    if cfg.test == "nccl-tests":
        await _probe_nccl_tests(ex, cfg, facts)
    elif cfg.test == "torch":
        facts.torchrun = (await ex.run([cfg.torchrun, "--help"])).ok
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
    ldd = await ex.run(["ldd", binary])
    facts.all_reduce_perf = parse_ldd(binary, ldd.stdout, ldd.exit_status)
    version = await ex.run([cfg.mpirun, "--version"])
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
