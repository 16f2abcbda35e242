"""Discovery: per host, the ConnectX ports, RDMA devices, links, MTU, GIDs and GPU affinity; differences marked."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, DataTable, Label, Select, Static

from screens.progress import STATUS_MARK
from steps.discovery_facts import DiscoveryFacts, NicPort

if TYPE_CHECKING:
    from screens.app import WizardApp

PORT_COLUMNS = ("netdev", "rdma", "state", "speed", "mtu", "switch/port", "v2 GID", "fw", "numa", "model", "pci")


def port_cells(port: NicPort) -> dict[str, str]:
    """The table's values for one port, as text."""
    speed = f"{port.speed_mbps // 1000}G" if port.speed_mbps else "?"
    gid = port.roce_v2_ipv4_gid
    return {
        "netdev": port.netdev or "-",
        "rdma": f"{port.rdma_device}/{port.rdma_port}" if port.rdma_device else "-",
        "model": port.model,
        "fw": port.firmware or "?",
        "speed": speed,
        "mtu": str(port.mtu or "?"),
        "switch/port": port.lldp.switch_port if port.lldp else "-",  # LLDP neighbour (lldpd), steps/discovery_lldp.py
        "state": (port.rdma_state or ("up" if port.link_detected else "down")).lower(),
        "v2 GID": "-" if gid is None else str(gid),
        "numa": "-" if port.numa_node is None else str(port.numa_node),
        "pci": port.pci,
    }


def host_cells(facts: DiscoveryFacts) -> dict[str, str]:
    return {
        "OS": facts.os_pretty or f"{facts.os_id} {facts.os_version}",
        "kernel": facts.kernel,
        "driver stack": f"{facts.ofed_stack} {facts.ofed_version or ''}".strip()
        if facts.ofed_stack
        else ("inbox (the kernel's own mlx5)" if "mlx5_core" in facts.modules else "none"),
        "RDMA ports": str(len(facts.rdma_ports())),
        "GPUs": f"{len(facts.gpus)} x {facts.gpus[0].name}" if facts.gpus else "none",
        "GPU driver": facts.gpu_driver or "-",
        "SSH arrives on": facts.ssh_interface or "?",
        "platform": platform_cell(facts),
    }


def platform_cell(facts: DiscoveryFacts) -> str:
    """IOMMU mode, ACS redirects, PCIe link downgrades and the firmware tool, in one line (details in the checks)."""
    platform = facts.platform
    if platform is None:
        return "not read"
    types = sorted(set(platform.iommu_types.values()))
    iommu = "IOMMU off" if not platform.iommu_groups else f"IOMMU {'/'.join(types) or 'on'}"
    redirecting = [b for b, bridge in platform.bridges.items() if bridge.redirect]
    acs = f"ACS redirect enabled on {len(redirecting)} PCIe bridge(s)"
    if platform.caps_readable is False:
        acs = "ACS unreadable"
    # An idle GPU lowers its link speed to save power; only its width counts, as in the pcie_links check.
    slow = [
        link
        for link in platform.links
        if link.sta_width < link.cap_width or (link.kind == "nic" and link.sta_speed < link.cap_speed)
    ]
    links = f"{len(slow)} PCIe link(s) downgraded" if slow else "PCIe links at full width/speed"
    return " · ".join([iommu, acs if redirecting or platform.caps_readable is False else "no ACS redirect", links])


def majority(values: list[str]) -> str | None:
    return Counter(values).most_common(1)[0][0] if values else None


class DiscoveryPage(Vertical):
    """Host picker, the host's facts with the cells that differ from most hosts highlighted, and problems."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.host: str | None = None

    @property
    def wizard(self) -> WizardApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Label("Discovery", id="disc-title", classes="page-title")
        with Horizontal(classes="log-bar"):
            yield Select([], allow_blank=True, compact=True, id="disc-host", prompt="host")
            yield Label("  yellow: differs from most hosts · red: a problem · [ ] host", classes="hint")
        with VerticalScroll(id="disc-body"):
            yield Static("", id="disc-host-facts")
            table: DataTable[Any] = DataTable(zebra_stripes=True, id="ports", cursor_type="row")
            yield table
            yield Static("", id="disc-gpus")
            yield Static("", id="disc-problems")
        with Horizontal(classes="actions"):
            yield Button("Discover (a)", id="discover", variant="primary", compact=True)

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(*PORT_COLUMNS)
        self.refresh_view()

    def facts(self) -> dict[str, DiscoveryFacts]:
        found = {}
        store = self.wizard.engine.store
        for host in self.wizard.engine.host_names:
            data = store.load_facts(host).get("discovery")
            if data:
                try:
                    found[host] = DiscoveryFacts.model_validate(data)
                except ValueError:
                    continue
        return found

    def refresh_view(self) -> None:
        progress = self.wizard.progress
        status = progress.stage_status("discovery")
        title = self.query_one("#disc-title", Label)
        title.update(f"{STATUS_MARK.get(status, '')} Discovery  ·  {status}")
        title.set_classes(f"page-title st-{status}")
        all_facts = self.facts()
        select = self.query_one(Select)
        hosts = self.wizard.engine.host_names
        if [o for o in hosts] != getattr(self, "_hosts", None):
            self._hosts = hosts
            select.set_options([(h, h) for h in hosts])
        if self.host not in hosts:
            self.host = hosts[0] if hosts else None
        if self.host and select.value != self.host:
            select.value = self.host
        self._show(all_facts)

    def _show(self, all_facts: dict[str, DiscoveryFacts]) -> None:
        table = self.query_one(DataTable)
        table.clear()
        facts = all_facts.get(self.host or "")
        summary = self.query_one("#disc-host-facts", Static)
        if facts is None:
            summary.update(
                Text("No facts yet for this host: press a to discover (reads only, changes nothing).", style="dim")
            )
            self.query_one("#disc-gpus", Static).update("")
            self._problems()
            return
        others = list(all_facts.values())
        text = Text()
        host_values = [host_cells(f) for f in others]
        for key, value in host_cells(facts).items():
            common = majority([v[key] for v in host_values])
            style = "bold yellow" if len(others) > 1 and value != common else ""
            text.append(f"{key:>15}: ", style="dim")
            text.append(value + (f"  (most hosts: {common})" if style else "") + "\n", style=style)
        summary.update(text)
        rails = [[port_cells(p) for p in f.rdma_ports()] for f in others]
        for index, port in enumerate(facts.rdma_ports()):
            cells = port_cells(port)
            row = []
            for column in PORT_COLUMNS:
                value = cells[column]
                peers = [r[index][column] for r in rails if index < len(r)]
                style = ""
                if column in ("model", "fw", "speed", "mtu") and len(peers) > 1 and value != majority(peers):
                    style = "bold yellow"
                if column == "state" and value not in ("active", "up"):
                    style = "bold red"
                if column == "v2 GID" and value == "-":
                    # Without an IPv4 address there is no IPv4 GID yet (the network stage adds them).
                    style = "bold red" if port.ipv4 else "dim"
                row.append(Text(value, style=style))
            table.add_row(*row)
        gpus = Text()
        for gpu in facts.gpus:
            gpus.append(f"GPU {gpu.index} {gpu.name}", style="bold")
            gpus.append(f"  nearest NIC: {', '.join(gpu.nearest_nics) or '?'}\n")
        self.query_one("#disc-gpus", Static).update(gpus)
        self._problems()

    def _problems(self) -> None:
        cell = self.wizard.progress.cell("discovery", self.host or "")
        text = Text()
        for item in cell.checks:
            if item["status"] in ("fail", "warn"):
                style = "bold red" if item["status"] == "fail" else "yellow"
                text.append(f"{'✘' if item['status'] == 'fail' else '!'} {item['title']}: ", style=style)
                text.append(f"{item.get('evidence', '')}\n")
                if item.get("fix"):
                    text.append(f"   fix: {item['fix']}\n", style="italic")
        if cell.status == "failed" and not text:
            text.append(f"✘ {cell.reason}\n", style="bold red")
        self.query_one("#disc-problems", Static).update(text)

    def step_host(self, delta: int) -> None:
        hosts = self.wizard.engine.host_names
        if hosts:
            index = hosts.index(self.host) if self.host in hosts else 0
            self.host = hosts[(index + delta) % len(hosts)]
            self.refresh_view()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, str) and event.value != self.host:
            self.host = event.value
            self.refresh_view()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.wizard.start_action("apply", "discovery")
