"""A wizard on hundreds of fake hosts: discovery facts written to the state directory (rail 0 cabled to one leaf per
32 hosts) and runner events sent through the engine's bus, as a run would send them. No lab, no SSH: used by the
scaled page tests and by bench/tui_scale.py."""

from __future__ import annotations

import json
from pathlib import Path

from screens.app import WizardApp
from screens.engine_link import EngineLink
from steps.discovery.facts import DiscoveryFacts
from tests.steps.facts_builder import reference_host
from wizard.engine.state import StateStore
from wizard.engine.step import Change, FileWrite, HostPlan, Impact, RemoteCommand
from wizard.parsers.lldp import LldpNeighbor

HOSTS_PER_LEAF = 32
DISCOVERY_CHECKS = (
    "ConnectX ports found",
    "RDMA device per port",
    "link state of every rail",
    "link speed",
    "MTU on rails",
    "RoCE v2 GID",
    "rail cabling (LLDP)",
    "switch PFC",
    "switch MTU",
    "firmware matches",
    "PCIe links",
    "IOMMU / ACS",
)
NETWORK_CHECKS = ("rail addresses", "netplan file", "routes per rail", "ARP flux sysctls", "reverse path filter")


def host_names(count: int) -> list[str]:
    return [f"gpu-{i:04d}" for i in range(1, count + 1)]


def leaf_of(index: int) -> str:
    """The leaf switch of the index-th host (0-based): 32 hosts per leaf."""
    return f"leaf-{index // HOSTS_PER_LEAF + 1:02d}"


def fake_facts(name: str, index: int, *, port_down: bool = False) -> DiscoveryFacts:
    """The reference server with every rail's LLDP neighbour; rail 0's switch is the host's leaf."""
    facts = reference_host(name, ssh_address=f"10.1.{index // 250}.{index % 250 + 1}")
    for rail, port in enumerate(facts.rdma_ports()):
        port.lldp = LldpNeighbor(
            local_port=port.netdev or "",
            chassis_name=leaf_of(index) if rail == 0 else f"rail{rail}-{leaf_of(index)}",
            port_id=f"swp{index % HOSTS_PER_LEAF + 1}",
        )
        if port_down and rail == 1:
            port.rdma_state, port.physical_state, port.link_detected = "DOWN", "DISABLED", False
    return facts


def make_fleet_app(state: Path, count: int, *, failing: tuple[int, ...] = (), facts: bool = True) -> WizardApp:
    """A wizard whose answers list ``count`` hosts; ``failing`` (0-based indexes) have rail 1 down."""
    engine = EngineLink(state, demo=False)
    data = engine.data()
    names = host_names(count)
    data["hosts"] = [{"name": n, "address": f"10.1.{i // 250}.{i % 250 + 1}"} for i, n in enumerate(names)]
    for k, rail in enumerate(data["network"]["rails"]):
        rail["subnet"] = f"172.{16 + k}.0.0/20"  # a /24 rail holds 254 hosts
    engine.replace(data)
    if facts:
        # As StateStore.save_facts writes them, without its fsync per file (1,000 fsyncs take seconds here).
        folder = StateStore(state).root / "facts"
        folder.mkdir(parents=True, exist_ok=True)
        for i, name in enumerate(names):
            dumped = fake_facts(name, i, port_down=i in failing).model_dump(mode="json")
            (folder / f"{name}.json").write_text(json.dumps({"discovery": dumped}, indent=1, sort_keys=True))
    return WizardApp(engine)


def send_discovery(app: WizardApp, *, failing: tuple[int, ...] = ()) -> None:
    """What a discovery run on every host reports: running, 12 checks, done (failed where rail 1 is down)."""
    bus = app.engine.bus
    bus.emit("stage_started", stage="discovery", title="Discovery")
    for i, host in enumerate(app.engine.host_names):
        bus.emit("host_status", stage="discovery", host=host, status="running", reason="probing")
        for n, title in enumerate(DISCOVERY_CHECKS):
            down = i in failing and title == "link state of every rail"
            bus.emit(
                "check",
                stage="discovery",
                host=host,
                id=f"d{n}",
                title=title,
                status="fail" if down else "pass",
                evidence="ens1f1np1: DOWN (DISABLED), switch swp3" if down else f"{host}: as expected ({n})",
                fix="reseat the cable of rail 1" if down else None,
            )
        bus.emit(
            "host_status",
            stage="discovery",
            host=host,
            status="failed" if i in failing else "done",
            reason="link state of every rail: DOWN" if i in failing else "verified",
        )


def network_plan(host: str, *, own_file: bool) -> HostPlan:
    """The network stage's plan: the same netplan on every host unless ``own_file`` (then it names the host)."""
    body = f"# rails of {host}\n" if own_file else "# rails\n"
    body += "network:\n  version: 2\n  ethernets:\n" + "".join(
        f"    ens{c}f{f}np{f}:\n      mtu: 9000\n" for c in (1, 2) for f in (0, 1)
    )
    return HostPlan(
        stage="network",
        host=host,
        changes=[
            Change(
                summary="write the rail netplan",
                why="one subnet per rail",
                impact=Impact.DISRUPTIVE,
                files=[FileWrite(path="/etc/netplan/60-roce-rails.yaml", content=body, mode=0o600)],
                commands=[RemoteCommand(argv=["netplan", "apply"])],
            )
        ],
    )


def send_network(app: WizardApp, *, done: int, failed: int, own_plans: tuple[int, ...] = ()) -> None:
    """A network apply under way: plans for every host (``own_plans`` differ), ``done`` hosts verified, ``failed``
    failed, the rest running with their checks so far."""
    bus = app.engine.bus
    hosts = app.engine.host_names
    app.plans["network"] = {h: network_plan(h, own_file=i in own_plans) for i, h in enumerate(hosts)}
    bus.emit("stage_started", stage="network", title="Network rails")
    for i, host in enumerate(hosts):
        bus.emit("plan", stage="network", host=host, **app.plans["network"][host].payload())
        bus.emit("host_status", stage="network", host=host, status="running", reason="applying")
        bus.emit("output", host=host, stream="stdout", line=f"{host}: netplan apply")
        finished = i < done + failed
        for n, title in enumerate(NETWORK_CHECKS if finished else NETWORK_CHECKS[:2]):
            bad = done <= i < done + failed and n == 2
            bus.emit(
                "check",
                stage="network",
                host=host,
                id=f"n{n}",
                title=title,
                status="fail" if bad else "pass",
                evidence=f"{host}: no route for 192.168.{12}.0/24" if bad else f"{host}: ok",
                fix=None,
            )
        if finished:
            status = "done" if i < done else "failed"
            bus.emit("host_status", stage="network", host=host, status=status, reason="verified")
