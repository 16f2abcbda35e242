"""Network topology decision: which interface carries which rail or RoCE LAG bond, with what address, and why."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from steps.discovery.facts import DiscoveryFacts
from steps.network.facts import NetworkFacts
from wizard.answers.model import Answers
from wizard.answers.sections import BondSection, RailSection

# Modes in which mlx5 builds a RoCE LAG device (mlx5_bond_N) from the two ports of one card.
LAG_MODES = ("802.3ad", "active-backup", "balance-xor")
SECTION0 = "roce-correctness.md §0"


@dataclass(frozen=True)
class Port:
    """An RDMA-capable Ethernet interface a rail or a LAG can use."""

    netdev: str
    pci: str | None
    card: str | None
    model: str
    rdma_device: str | None
    numa: int | None = None
    soft: bool = False  # Soft-RoCE (rxe) or another non-ConnectX RDMA device
    ib: bool = False  # an IPoIB interface of an InfiniBand port

    @property
    def label(self) -> str:
        dev = f", {self.rdma_device}" if self.rdma_device else ""
        return f"{self.netdev} ({self.model}{', ' + self.pci if self.pci else ''}{dev})"


@dataclass
class Endpoint:
    """The interface that carries one rail's (or one bond's) address on this host."""

    key: str  # the same key on every host names the same rail: "rail0", "bond:bond0"
    label: str
    netdev: str
    subnet: ipaddress.IPv4Network | ipaddress.IPv6Network
    address: str  # "192.168.11.1/24"
    members: list[str] = field(default_factory=list)
    gateway: str | None = None
    table: int | None = None
    rdma_device: str | None = None
    lag: bool = False
    bond: BondSection | None = None
    port: Port | None = None
    ipoib: bool = False  # a bond of IPoIB interfaces (active-backup, IP only)

    @property
    def ip(self) -> str:
        return self.address.split("/")[0]

    @property
    def rdma(self) -> bool:
        return self.lag or self.port is not None


@dataclass
class Design:
    fabric: str
    endpoints: list[Endpoint] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ssh_interface: str | None = None

    @property
    def sysctl_netdevs(self) -> list[str]:
        return [e.netdev for e in self.endpoints]


def fabric_of(answers: Answers) -> str:
    """back_to_back or switched: explicit, or switched for more than two hosts or any rail gateway."""
    net = answers.network
    if net.fabric != "auto":
        return net.fabric
    if len(answers.hosts) > 2 or any(r.gateway for r in net.rails):
        return "switched"
    return "back_to_back"


def rdma_ports(disc: DiscoveryFacts, net: NetworkFacts, notes: list[str], link_layer: str = "ethernet") -> list[Port]:
    """The rail ports in PCI order: RDMA Ethernet ports on a RoCE fabric, IPoIB interfaces on an InfiniBand one
    (fabric.link_layer; auto takes either). The other kind and VFs are left out with the reason noted."""
    ports: list[Port] = []
    for p in disc.ports:
        if not p.netdev:
            continue
        iface = net.interfaces.get(p.netdev)
        live = net.rdma_of(p.netdev)
        ib = (iface is not None and iface.link_type == "infiniband") or p.link_layer == "InfiniBand"
        if ib and link_layer == "ethernet":
            notes.append(f"{p.netdev} ({p.rdma_device or p.pci}) is an InfiniBand port: skipped, rails are RoCE")
            continue
        if not ib and link_layer == "infiniband":
            notes.append(f"{p.netdev} ({p.rdma_device or p.pci}) runs Ethernet: skipped, rails are InfiniBand (IPoIB)")
            continue
        if p.model.endswith("VF"):
            notes.append(f"{p.netdev} is a virtual function ({p.model}): skipped, rails use physical ports")
            continue
        device = live.device if live else p.rdma_device
        ports.append(Port(p.netdev, p.pci, p.card, p.model, device, p.numa_node, ib=ib))
    known = {p.netdev for p in disc.ports}
    for link in net.rdma:
        iface = net.interfaces.get(link.netdev or "")
        if iface is None or iface.name in known or iface.kind == "bond" or iface.master:
            continue
        if iface.link_type == "infiniband" and link_layer == "ethernet":
            notes.append(f"{iface.name} ({link.device}) is an InfiniBand port: skipped, rails are RoCE")
            continue
        if iface.link_type != "infiniband" and link_layer == "infiniband":
            continue
        model = "Soft-RoCE (rxe)" if link.device.startswith("rxe") else "RDMA device"
        ports.append(Port(iface.name, iface.parent_dev, None, model, link.device, soft=True))
    return sorted(ports, key=lambda p: (p.pci or "~", p.netdev))


def design(answers: Answers, host: str, disc: DiscoveryFacts, net: NetworkFacts) -> Design:
    """Pure decision for one host from the answers and this host's facts."""
    result = Design(fabric=fabric_of(answers), ssh_interface=disc.ssh_interface)
    section = answers.network
    ports = rdma_ports(disc, net, result.notes, answers.fabric.link_layer_of(host))
    by_name = {p.netdev: p for p in ports}
    host_id = answers.host_id(host)
    used: set[str] = set()
    if section.topology == "rails" and section.bonds:
        result.blockers.append(
            f"{host}: network.bonds lists {', '.join(b.name for b in section.bonds)} but topology is rails; "
            "set topology: roce_lag (one LAG per card) or bond to build them, or remove network.bonds"
        )
    for bond in section.bonds:
        endpoint = _bond_endpoint(answers, host, bond, by_name, net, result)
        used.update(bond.members)
        if endpoint is not None:
            result.endpoints.append(endpoint)
    if section.topology == "rails" and not section.rails:
        listing = ", ".join(p.netdev for p in ports) or "none"
        result.blockers.append(f"{host}: network.rails is empty; give one subnet per rail (rail ports here: {listing})")
    explicit = {r.netdev for r in section.rails if r.netdev}
    auto = [p for p in ports if p.netdev not in used and p.netdev not in explicit]
    for index, rail in enumerate(section.rails):
        endpoint = _rail_endpoint(index, rail, host, host_id, by_name, net, auto, used, result)
        if endpoint is not None:
            used.add(endpoint.netdev)
            result.endpoints.append(endpoint)
    _guard_management(result, section.management_changes_allowed(host), host)
    if result.fabric == "switched":
        for position, endpoint in enumerate(result.endpoints):
            endpoint.table = section.route_table_base + position
    for p in ports:
        if p.netdev not in used:
            result.notes.append(f"{p.label} is in no rail or bond: left as it is")
    return result


def _address(subnet: str, host_id: int) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str]:
    net = ipaddress.ip_network(subnet)
    return net, f"{net.network_address + host_id}/{net.prefixlen}"


def _rail_endpoint(
    index: int,
    rail: RailSection,
    host: str,
    host_id: int,
    by_name: dict[str, Port],
    net: NetworkFacts,
    auto: list[Port],
    used: set[str],
    result: Design,
) -> Endpoint | None:
    if rail.netdev:
        port = by_name.get(rail.netdev)
        if port is None:
            what = "exists but has no RDMA device" if rail.netdev in net.interfaces else "does not exist"
            result.blockers.append(
                f"{host}: rails[{index}].netdev {rail.netdev} {what} on this host; rail ports here: "
                f"{', '.join(by_name) or 'none'}"
            )
            return None
        if rail.netdev in used:
            result.blockers.append(f"{host}: rails[{index}].netdev {rail.netdev} is already used by a bond or rail")
            return None
    elif auto:
        port = auto.pop(0)
    else:
        result.blockers.append(
            f"{host}: rail {index} ({rail.subnet}) has no port left: this host has {len(by_name)} RDMA Ethernet "
            f"port(s) ({', '.join(by_name) or 'none'}); remove the rail or set rails[{index}].netdev"
        )
        return None
    subnet, address = _address(rail.subnet, host_id)
    if rail.gateway and address.split("/")[0] == rail.gateway:
        result.blockers.append(
            f"{host}: its rail {index} address {address} is the rail gateway {rail.gateway}; change host_id or gateway"
        )
        return None
    return Endpoint(
        key=f"rail{index}",
        label=f"rail {index}",
        netdev=port.netdev,
        subnet=subnet,
        address=address,
        gateway=rail.gateway,
        rdma_device=port.rdma_device,
        port=port,
    )


def _bond_endpoint(
    answers: Answers, host: str, bond: BondSection, by_name: dict[str, Port], net: NetworkFacts, result: Design
) -> Endpoint | None:
    missing = [m for m in bond.members if m not in net.interfaces]
    if missing:
        result.blockers.append(
            f"{host}: bond {bond.name} member(s) {', '.join(missing)} do not exist on this host "
            f"(rail ports: {', '.join(by_name) or 'none'})"
        )
        return None
    rdma_members = [by_name[m] for m in bond.members if m in by_name]
    subnet, address = _address(bond.subnet, answers.host_id(host))
    if not rdma_members:
        if answers.network.topology == "roce_lag":
            result.blockers.append(
                f"{host}: bond {bond.name} ({', '.join(bond.members)}) has no RDMA port; a RoCE LAG bond is the two "
                "ports of one ConnectX card"
            )
            return None
        result.notes.append(f"{bond.name}: Linux bond of non-RDMA interfaces ({bond.mode}) for IP traffic only")
        return Endpoint(
            f"bond:{bond.name}", f"bond {bond.name}", bond.name, subnet, address, list(bond.members), bond=bond
        )
    if all(m.ib for m in rdma_members):
        return _ipoib_bond(host, bond, rdma_members, subnet, address, result)
    problems = lag_problems(bond, rdma_members, by_name)
    if problems:
        result.blockers.append(_refusal(host, bond, rdma_members, problems, by_name))
        return None
    card = rdma_members[0]
    result.notes.append(
        f"{bond.name}: RoCE LAG of {card.model} card {card.card} ({', '.join(bond.members)}, {bond.mode}); the "
        f"HCA aggregates both ports into one RDMA device (mlx5_bond_N), checked after apply"
    )
    return Endpoint(
        key=f"bond:{bond.name}",
        label=f"LAG {bond.name}",
        netdev=bond.name,
        subnet=subnet,
        address=address,
        members=list(bond.members),
        rdma_device=live.device if (live := net.lag_of(list(bond.members))) else None,
        lag=True,
        bond=bond,
    )


def _ipoib_bond(
    host: str,
    bond: BondSection,
    members: list[Port],
    subnet: ipaddress.IPv4Network | ipaddress.IPv6Network,
    address: str,
    result: Design,
) -> Endpoint | None:
    """An IPoIB bond: active-backup only (the kernel refuses other modes for IPoIB slaves since Linux 4.8,
    net/bonding commit 1533e77315 "Enforce active-backup policy for IPoIB bonds"), for IP failover. RDMA never goes
    through it: NCCL and perftest keep using the member ports' HCAs, each on its own LID."""
    if bond.mode != "active-backup":
        result.blockers.append(
            f"{host}: bond {bond.name} ({', '.join(bond.members)}) holds IPoIB interfaces with mode {bond.mode}: the"
            " bonding driver takes IPoIB slaves in active-backup only; set mode: active-backup"
        )
        return None
    result.notes.append(
        f"{bond.name}: IPoIB active-backup bond of {', '.join(bond.members)}: carries IP only and fails over between"
        " the ports; RDMA (NCCL, perftest) keeps using the HCAs of the ports themselves, never the bond"
    )
    return Endpoint(
        f"bond:{bond.name}", f"bond {bond.name}", bond.name, subnet, address, list(bond.members), bond=bond, ipoib=True
    )


def lag_problems(bond: BondSection, members: list[Port], by_name: dict[str, Port]) -> list[str]:
    """Why RDMA could not use this bond; empty when it forms a RoCE LAG (two ports of one card, LAG mode)."""
    problems = []
    others = [m for m in bond.members if m not in by_name]
    if others:
        problems.append(f"it mixes RDMA ports with other interfaces ({', '.join(others)})")
    if any(m.soft for m in members):
        problems.append("Soft-RoCE (rxe) devices have no LAG: RDMA would keep using one port")
    cards = sorted({m.card or m.netdev for m in members})
    if len(cards) > 1:
        problems.append(f"its ports sit on {len(cards)} different cards ({', '.join(cards)})")
    if len(bond.members) > 2:
        problems.append(f"it has {len(bond.members)} members; RoCE LAG takes exactly the two ports of one card")
    elif len(cards) == 1 and not any(m.soft for m in members):
        card_ports = [p.netdev for p in by_name.values() if p.card == cards[0]]
        if sorted(card_ports) != sorted(bond.members):
            problems.append(f"card {cards[0]} has ports {', '.join(card_ports)}; the bond must hold both and only them")
    if bond.mode not in LAG_MODES:
        problems.append(f"mode {bond.mode} is not a RoCE LAG mode ({', '.join(LAG_MODES)})")
    return problems


def _refusal(host: str, bond: BondSection, members: list[Port], problems: list[str], by_name: dict[str, Port]) -> str:
    cards: dict[str, list[str]] = {}
    for port in by_name.values():
        if port.card:
            cards.setdefault(port.card, []).append(port.netdev)
    per_card = "; ".join(f"bond{i} = {' + '.join(v)}" for i, v in enumerate(cards.values()) if len(v) == 2)
    return (
        f"{host}: refusing bond {bond.name} ({', '.join(bond.members)}, {bond.mode}): {'; '.join(problems)}. RDMA "
        "never passes through the Linux bonding driver: only RoCE LAG (the two ports of one card, alone in a bond, "
        "mode 802.3ad/active-backup/balance-xor) gives an mlx5_bond device. This bond would leave every port its "
        "own RDMA device advertising the bond's GIDs while sending only on its own cable, so NCCL and perftest "
        f"stall when they cross ports ({SECTION0}). Instead use topology: rails (one subnet per port: "
        f"{', '.join(by_name)}), or one LAG per card ({per_card or 'two ports of one card per bond'})"
    )


def _guard_management(result: Design, allowed: bool, host: str) -> None:
    ssh = result.ssh_interface
    if not ssh:
        result.notes.append("the interface carrying SSH is unknown (discovery could not match it); no rail may use it")
        return
    touched = [e for e in result.endpoints if ssh == e.netdev or ssh in e.members]
    if not touched:
        result.notes.append(f"{ssh} carries SSH and is not in the netplan file")
        return
    if allowed:
        result.notes.append(
            f"{ssh} carries SSH and is reconfigured ({touched[0].label}) because network.allow_management_changes "
            "allows it on this host: the host rolls the change back by itself if SSH does not come back"
        )
        return
    result.blockers.append(
        f"{host}: {touched[0].label} would reconfigure {ssh}, the interface carrying this SSH session; choose "
        "another port (rails[i].netdev / bond members) or list this host in network.allow_management_changes "
        "(keep console access)"
    )


def expected_roce_mtu(mtu: int) -> int:
    """RoCE active MTU the kernel derives from an Ethernet MTU (iboe_get_mtu: minus 96 bytes of headers)."""
    usable = mtu - 96
    return next((m for m in (4096, 2048, 1024, 512, 256) if m <= usable), 256)
