"""Stage 1, discovery: what every host has (OS, ConnectX ports, RDMA devices, GIDs, GPUs), read-only."""

from __future__ import annotations

from typing import Any

from steps import discovery_facts as df
from steps.discovery_checks import describe_host, discovery_checks, host_differences
from steps.discovery_links import flap_checks, probe_links
from steps.discovery_lldp import lldp_cluster_checks, lldp_host_checks, probe_lldp
from steps.platform_facts import named_endpoints, probe_platform
from wizard.executors.base import SudoRefused
from wizard.step import CheckItem, ClusterView, HostPlan, ProbeContext, Step

GID_GLOBS = (
    "/sys/class/infiniband/*/ports/*/gids/* "
    "/sys/class/infiniband/*/ports/*/gid_attrs/types/* "
    "/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*"
)
GPU_QUERY = "--query-gpu=index,name,pci.bus_id,memory.total,driver_version"


class Discovery(Step):
    id = "discovery"
    title = "Discovery"
    summary = "Read OS, ConnectX ports, RDMA devices, GID tables, drivers and GPUs on every host; change nothing."

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

        osr = df.try_parse("os_release", await out(["cat", "/etc/os-release"]), notes)
        if osr:
            facts.os_id, facts.os_version, facts.os_pretty = osr.id or "", osr.version_id or "", osr.pretty_name or ""
            facts.simulated = (osr.variant_id or "") == "roce-wizard-sim"
        facts.kernel = (await out(["uname", "-r"])).strip()
        facts.hostname = (await out(["hostname"])).strip()
        connection = (await out(["printenv", "SSH_CONNECTION"])).split()
        facts.ssh_server_address = connection[2] if len(connection) >= 3 else None
        try:
            await ex.run(["true"], sudo=True)
        except SudoRefused as exc:
            facts.sudo_ok, facts.sudo_error = False, exc.detail

        lspci = df.try_parse("lspci", await out(["lspci", "-D", "-nn", "-d", "15b3:"]), notes)
        facts.ports = df.ports_from_lspci(lspci, {})
        addresses = [p.pci for p in facts.ports if df.PCI_ADDRESS_RE.match(p.pci)]
        if addresses:
            numa = df.parse_numa(
                await out(["grep", "-sH", ".", *(f"/sys/bus/pci/devices/{a}/numa_node" for a in addresses)])
            )
            for port in facts.ports:
                port.numa_node = numa.get(port.pci)
        interfaces = df.try_parse("ip_json", await out(["ip", "-j", "-d", "addr", "show"]), notes)
        links = df.try_parse("rdma_link", await out(["rdma", "link", "show"]), notes)
        facts.other_interfaces = df.link_netdevs(facts.ports, interfaces, links)
        facts.soft_rdma = df.soft_rdma_ports(facts.ports, interfaces, links)
        gids = df.try_parse("sysfs_gids", await out(f"grep -sH . {GID_GLOBS}"), notes)
        df.attach_gids(facts.ports + facts.soft_rdma, gids)
        for port in facts.ports + facts.soft_rdma:
            if port.netdev:
                await self._probe_ethtool(port, out, notes)
        await probe_links(ex, facts.ports, ctx.facts.get("discovery"))  # against the previous discovery's read
        facts.ssh_interface = df.ssh_interface(facts.ssh_server_address, facts.ports, facts.other_interfaces)

        ofed = df.try_parse("ofed_info", await out(["ofed_info", "-s"]), notes)
        if ofed:
            facts.ofed_stack, facts.ofed_version = ofed.stack, ofed.version
        modules = df.try_parse("lsmod", await out(["lsmod"]), notes)
        loaded = {m.name for m in modules.modules} if modules else set()
        facts.modules = sorted(loaded & set(df.RELEVANT_MODULES))
        packages = df.try_parse("dpkg_query", await out(["dpkg-query", "-W"]), notes)
        if packages:
            facts.packages = {k: v for k, v in packages.packages.items() if k in df.RELEVANT_PACKAGES and v}
            facts.nccl_version = (facts.packages.get("libnccl2") or "").split("-")[0] or None
        await self._probe_gpus(facts, out, notes)
        await probe_lldp(ex, facts)
        facts.platform = await probe_platform(ex, *named_endpoints(facts))
        return facts.model_dump(mode="json")

    async def _probe_ethtool(self, port: df.NicPort, out: Any, notes: list[str]) -> None:
        link = df.try_parse("ethtool", await out(["ethtool", port.netdev]), notes)
        if link:
            port.link_detected, port.speed_mbps = link.link_detected, link.speed_mbps
        driver = df.try_parse("ethtool_i", await out(["ethtool", "-i", port.netdev]), notes)
        if driver:
            port.driver, port.firmware = driver.driver, driver.firmware_version
        if port.rdma_device:
            port.link_layer = "Ethernet" if port.gids or port.netdev else None

    async def _probe_gpus(self, facts: df.DiscoveryFacts, out: Any, notes: list[str]) -> None:
        listing = await out(["nvidia-smi", GPU_QUERY, "--format=csv"])
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
        topo = df.try_parse("nvidia_smi_topo", await out(["nvidia-smi", "topo", "-m"]), notes)
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
        checks = discovery_checks(facts, view.answers.discovery) + lldp_host_checks(view, facts)
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
        result = host_differences(facts)
        for host, items in lldp_cluster_checks(view, facts).items():
            result.setdefault(host, []).extend(items)
        return result


__all__ = ["GID_GLOBS", "Discovery", "describe_host", "discovery_checks", "host_differences"]
