"""Stage 1, discovery: what every host has (OS, ConnectX ports, RDMA devices, GIDs, GPUs), read-only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from steps.discovery import facts as df
from steps.discovery.checks import describe_host, discovery_checks, host_differences
from steps.discovery.gid_read import GID_ATTRS_PATTERN, GID_ATTRS_WHY, GID_VALUES, read_gid_text
from steps.discovery.ib_checks import infiniband_checks
from steps.discovery.infiniband import PKEYS, PORT_ATTRS, probe_infiniband
from steps.discovery.links import flap_checks, probe_links
from steps.discovery.lldp import LLDPCTL, lldp_cluster_checks, lldp_host_checks, probe_lldp
from steps.platform.facts import named_endpoints, platform_prefetch, probe_platform
from wizard.engine.step import CheckItem, ClusterView, HostPlan, ProbeContext, Step
from wizard.executors.base import SudoRefused

GPU_QUERY = "--query-gpu=index,name,pci.bus_id,memory.total,driver_version"

# The probe's read-only commands, defined once: the probe runs them and ``prefetch`` declares them.
OS_RELEASE = ["cat", "/etc/os-release"]
UNAME = ["uname", "-r"]
HOSTNAME = ["hostname"]
SSH_CONNECTION = ["printenv", "SSH_CONNECTION"]
SUDO_CHECK = ["true"]
LSPCI = ["lspci", "-D", "-nn", "-d", "15b3:"]
# every PCI device's node, not only the ConnectX functions lspci finds: no dependency, so it is in the first batch
NUMA = "grep -sH . /sys/bus/pci/devices/*/numa_node"
IP_ADDR = ["ip", "-j", "-d", "addr", "show"]
RDMA_LINK = ["rdma", "link", "show"]
OFED_INFO = ["ofed_info", "-s"]
LSMOD = ["lsmod"]
DPKG = ["dpkg-query", "-W"]
GPU_LIST = ["nvidia-smi", GPU_QUERY, "--format=csv"]
GPU_TOPO = ["nvidia-smi", "topo", "-m"]
PLAIN = (OS_RELEASE, UNAME, HOSTNAME, SSH_CONNECTION, LSPCI, NUMA, IP_ADDR, RDMA_LINK, GID_VALUES, OFED_INFO, LSMOD,
         DPKG, GPU_LIST, GPU_TOPO, PORT_ATTRS, PKEYS)  # fmt: skip


def ethtool_argvs(netdev: str) -> list[list[str]]:
    return [["ethtool", netdev], ["ethtool", "-i", netdev]]


class Discovery(Step):
    id = "discovery"
    title = "Discovery"
    summary = "Read OS, ConnectX ports, RDMA devices, GID tables, drivers and GPUs on every host; change nothing."
    dependent_probes: ClassVar[dict[str, str]] = {
        GID_ATTRS_PATTERN: GID_ATTRS_WHY,
        "ethtool *": "per netdev of a ConnectX port (ethtool, ethtool -i, ethtool -S), known only once lspci, "
        "ip and rdma link of this read have answered",
        "grep -sH . /proc/uptime /sys/class/net/*": "the link counters of the RDMA ports' netdevs, known only once "
        "lspci, ip and rdma link of this read have answered",
        "mlxconfig -d *": "per ConnectX card that lspci of this read found",
        "mstconfig -d *": "per ConnectX card that lspci of this read found, where mlxconfig is not installed",
        "grep -sH . /sys/bus/pci/devices/*/iommu_group/type": "only where ls /sys/kernel/iommu_groups lists groups",
        "sminfo": "with sudo, only where sysfs shows an InfiniBand port",
        "iblinkinfo": "with sudo, only where sysfs shows an InfiniBand port",
    }

    def __init__(self, *, platform: bool = True) -> None:
        # Validation reads a host's ports again before every test run and has no use for the PCIe chains, ACS and
        # firmware settings (lspci -vvv and one firmware query per card, seconds on a real host): it skips them.
        self.read_platform = platform

    def prefetch(self, ctx: ProbeContext) -> list[tuple[Sequence[str] | str, bool]]:
        """Everything but the per-port and per-card reads. nvidia-smi topo -m (run when GPUs are listed) and the
        platform reads (run when a ConnectX function or GPU is found) are taken on every host: the wizard has
        nothing to do on a host with neither. lldpctl runs with sudo unless sudo is refused; then the sudo
        batch is refused too and the probe reads it itself."""
        platform = platform_prefetch() if self.read_platform else []
        return [(c, False) for c in PLAIN] + [(SUDO_CHECK, True), (LLDPCTL, True)] + platform

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        ex = ctx.executor
        notes: list[str] = []
        facts = df.DiscoveryFacts(notes=notes)

        async def out(argv: list[str] | str) -> str:
            result = await ex.run(argv)
            name = argv[0] if isinstance(argv, list) else argv.split()[0]
            if result.exit_status == 127:
                notes.append(f"{name}: not installed")
                return ""
            # grep exits 2 when some files could not be read (unused GID entries read as EINVAL) yet prints the rest.
            if result.ok or (name == "grep" and result.exit_status == 2):
                return result.stdout
            # nvidia-smi(1): "Return code 14 - infoROM is corrupted"; it still prints every GPU after a WARNING line.
            if name == "nvidia-smi" and result.exit_status == 14:
                notes.append("nvidia-smi: exit 14, a GPU's infoROM is corrupted (reflash it; see nvidia-smi -q)")
                return result.stdout
            return ""

        osr = df.try_parse("os_release", await out(OS_RELEASE), notes)
        if osr:
            facts.os_id, facts.os_version, facts.os_pretty = osr.id or "", osr.version_id or "", osr.pretty_name or ""
            facts.simulated = (osr.variant_id or "") == "roce-wizard-sim"
        facts.kernel = (await out(UNAME)).strip()
        facts.hostname = (await out(HOSTNAME)).strip()
        connection = (await out(SSH_CONNECTION)).split()
        facts.ssh_server_address = connection[2] if len(connection) >= 3 else None
        try:
            await ex.run(SUDO_CHECK, sudo=True)
        except SudoRefused as exc:
            facts.sudo_ok, facts.sudo_error = False, exc.detail

        lspci = df.try_parse("lspci", await out(LSPCI), notes)
        facts.ports = df.ports_from_lspci(lspci, {})
        addresses = [p.pci for p in facts.ports if df.PCI_ADDRESS_RE.match(p.pci)]
        if addresses:
            numa = df.parse_numa(await out(NUMA))
            for port in facts.ports:
                port.numa_node = numa.get(port.pci)
        interfaces = df.try_parse("ip_json", await out(IP_ADDR), notes)
        links = df.try_parse("rdma_link", await out(RDMA_LINK), notes)
        facts.other_interfaces = df.link_netdevs(facts.ports, interfaces, links)
        facts.soft_rdma = df.soft_rdma_ports(facts.ports, interfaces, links)
        gids = df.try_parse("sysfs_gids", await read_gid_text(out), notes)
        df.attach_gids(facts.ports + facts.soft_rdma, gids)
        for port in facts.ports + facts.soft_rdma:
            if port.netdev:
                await self._probe_ethtool(port, out, notes)
        await probe_infiniband(ex, facts, out)
        await probe_links(ex, facts.ports, ctx.facts.get("discovery"))  # against the previous discovery's read
        facts.ssh_interface = df.ssh_interface(facts.ssh_server_address, facts.ports, facts.other_interfaces)

        ofed = df.try_parse("ofed_info", await out(OFED_INFO), notes)
        if ofed:
            facts.ofed_stack, facts.ofed_version = ofed.stack, ofed.version
        modules = df.try_parse("lsmod", await out(LSMOD), notes)
        loaded = {m.name for m in modules.modules} if modules else set()
        facts.modules = sorted(loaded & set(df.RELEVANT_MODULES))
        packages = df.try_parse("dpkg_query", await out(DPKG), notes)
        if packages:
            facts.packages = {k: v for k, v in packages.packages.items() if k in df.RELEVANT_PACKAGES and v}
            facts.nccl_version = (facts.packages.get("libnccl2") or "").split("-")[0] or None
        await self._probe_gpus(facts, out, notes)
        await probe_lldp(ex, facts)
        if self.read_platform:
            facts.platform = await probe_platform(ex, *named_endpoints(facts))
        return facts.model_dump(mode="json")

    async def _probe_ethtool(self, port: df.NicPort, out: Any, notes: list[str]) -> None:
        link_argv, driver_argv = ethtool_argvs(port.netdev or "")
        link = df.try_parse("ethtool", await out(link_argv), notes)
        if link:
            port.link_detected, port.speed_mbps = link.link_detected, link.speed_mbps
        driver = df.try_parse("ethtool_i", await out(driver_argv), notes)
        if driver:
            port.driver, port.firmware = driver.driver, driver.firmware_version
        if port.rdma_device:
            port.link_layer = "Ethernet" if port.gids or port.netdev else None

    async def _probe_gpus(self, facts: df.DiscoveryFacts, out: Any, notes: list[str]) -> None:
        listing = await out(GPU_LIST)
        query = df.try_parse("nvidia_smi_query", listing, notes)
        for row in query.rows if query else []:
            memory = (row.get("memory.total [MiB]") or row.get("memory.total") or "").split()[0:1]
            facts.gpus.append(
                df.Gpu(
                    index=int(row.get("index", len(facts.gpus))),
                    name=row.get("name", ""),
                    bus_id=row.get("pci.bus_id"),
                    memory_mib=int(memory[0]) if memory and memory[0].isdigit() else None,
                )
            )
            facts.gpu_driver = row.get("driver_version") or facts.gpu_driver
        if not facts.gpus:
            return
        topo = df.try_parse("nvidia_smi_topo", await out(GPU_TOPO), notes)
        if topo:
            for gpu in facts.gpus:
                nics = topo.nearest_nics(f"GPU{gpu.index}")
                gpu.nearest_nics = [topo.nic_names.get(n, n) for n in nics]

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        return HostPlan(stage=self.id, host=host, noop_reason="discovery only reads; it never changes a host")

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        raw = view.stage_facts(host, self.id)
        if raw is None:
            return [CheckItem(id="facts", title="facts collected", status="fail", evidence="no facts")]
        facts = df.DiscoveryFacts.model_validate(raw)
        answers = view.answers
        # a node group's link rate replaces discovery's (V100 on EDR, A100 on HDR in one cluster)
        expect = answers.discovery.model_copy(update={"expect_link_speed_gbps": answers.expect_speed_gbps(host)})
        want = answers.fabric.link_layer_of(host)
        # the link layer item first: a VPI port in the wrong mode explains its missing link
        checks = infiniband_checks(facts, want, expect.expect_link_speed_gbps, answers.fabric.ib_pkey)
        checks += discovery_checks(facts, expect, want) + lldp_host_checks(view, facts)
        return checks + flap_checks(host, facts.rdma_ports())

    def describe(self, view: ClusterView, host: str) -> list[str]:
        raw = view.stage_facts(host, self.id)
        return describe_host(df.DiscoveryFacts.model_validate(raw)) if raw else []

    def cluster_checks(self, view: ClusterView) -> dict[str, list[CheckItem]]:
        facts = {
            h.name: df.DiscoveryFacts.model_validate(view.stage_facts(h.name, self.id))
            for h in view.answers.hosts
            if view.stage_facts(h.name, self.id)
        }
        # hosts are compared within their node group: V100 and A100 nodes differ by design
        groups: dict[str, dict[str, df.DiscoveryFacts]] = {}
        for name, f in facts.items():
            groups.setdefault(view.answers.fabric.group_name(name), {})[name] = f
        result: dict[str, list[CheckItem]] = {}
        for members in groups.values():
            result.update(host_differences(members))
        for host, items in lldp_cluster_checks(view, facts).items():
            result.setdefault(host, []).extend(items)
        return result


__all__ = ["Discovery", "describe_host", "discovery_checks", "host_differences"]
