"""Simulated switches of a rail-optimized fabric: leaves per rail (and per scalable unit), spines, their ports' QoS
and LLDP state, the leaf-spine uplinks and the path a flow takes (built by wizard/lab/rail_fabric.py).

Each leaf and the spine run a NOS model (wizard/lab/switch_os: Cumulus Linux, SONiC or EOS): it names the ports,
decides what LLDP advertises, and starts from that NOS's documented defaults, which carry no lossless class for
RoCE. The lossless state comes only from configuration files loaded into a switch the way that NOS loads them
(``roce-wizard lab switch-apply``), so an incast test measures what the operator really applied.
Upstream lldpd never fills the 802.3 maximum-frame-size TLV on Linux (src/daemon/protocols/lldp.c only sends it
when ``p_mfs`` is set, and only the decoder sets it), so these switches do not send it: a small switch MTU shows
on a host only as jumbo frames that get no answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Interface

from wizard.lab.faults import Fault

PortRef = tuple[str, int]  # (host name, index into the host profile's ports)

CUMULUS_DESCR = "Cumulus Linux version 5.9.1 running on Nvidia SN5600"
SWITCH_FAULTS = ("wrong_leaf", "switch_pfc_off", "switch_mtu", "switch_ecn_off", "pfc_storm")


@dataclass
class SwitchPort:
    """One switch port: its effective configuration and what its LLDP agent advertises to the cabled host.

    The QoS fields are never set by hand: ``wizard.lab.switch_os`` derives them from the NOS's defaults and the
    configuration files loaded into the switch (then faults apply on top)."""

    switch: str
    port: str  # the NOS's own name: swp5 (Cumulus), Ethernet32 (SONiC), Ethernet5/1 (EOS)
    descr: str = ""  # the cabling label the site gave the port (its description)
    index: int = 0  # front-panel number
    alias: str = ""  # SONiC's alias (etp5); empty elsewhere
    lldp_id: str = ""  # what LLDP sends as port ID (default: the name)
    lldp_id_type: str = "ifname"  # LLDP port ID subtype as lldpd shows it: ifname, local
    lldp_descr: str = ""  # LLDP port description (default: descr, else the name)
    mtu: int = 9216
    trust: str = "pcp"  # dscp: classify by the DSCP field; pcp: by the 802.1p bits (untagged = 0)
    dscp_prio: dict[int, int] = field(default_factory=lambda: {d: d >> 3 for d in range(64)})
    pfc_priorities: set[int] = field(default_factory=set)
    headroom: set[int] = field(default_factory=set)  # priorities with lossless buffers (headroom) on this port
    pfc_willing: bool = False  # a switch is the DCBX authority: it never accepts the host's PFC settings
    ecn_prios: set[int] = field(default_factory=set)  # priorities whose egress queue marks ECN
    pfc_watchdog: bool = False
    strict_prios: set[int] = field(default_factory=set)  # priorities whose egress queue is served strict priority
    app_dscp: dict[int, int] = field(default_factory=dict)  # APP TLV entries, selector DSCP: DSCP -> priority
    app_udp: dict[int, int] = field(default_factory=dict)  # APP TLV entries, selector UDP port: port -> priority
    peer: PortRef | None = None  # host port cabled here
    send_dcbx: bool = False  # PFC/APP TLVs in LLDP

    @property
    def lldp_mfs(self) -> int | None:
        """802.3 maximum frame size TLV value: not sent by lldpd-based switches (see module docstring)."""
        return None

    def priority(self, dscp: int) -> int:
        """The switch priority a packet with this DSCP gets (untagged and PCP-trusted: 0)."""
        return self.dscp_prio.get(dscp, 0) if self.trust == "dscp" else 0

    def lossless(self, dscp: int) -> bool:
        """Whether packets with this DSCP get PFC and lossless buffers here."""
        prio = self.priority(dscp)
        return prio in self.pfc_priorities and prio in self.headroom

    def marks(self, dscp: int) -> bool:
        """Whether the egress queue of packets with this DSCP marks ECN."""
        return self.priority(dscp) in self.ecn_prios


@dataclass
class Switch:
    """A switch: chassis identity (LLDP chassis TLVs), the NOS it runs, its ports by name, what was loaded."""

    name: str
    chassis_id: str  # MAC, LLDP chassis id subtype mac
    mgmt_ip: str
    role: str  # leaf | spine | mgmt
    rail: int | None = None
    su: int | None = None  # a leaf's scalable unit (0-based)
    segment: str | None = None  # a leaf's L2 segment: its rail's VLAN, or the rail's VNI stretched over its SUs
    gateway: IPv4Interface | None = None  # the rail gateway a leaf answers on (anycast: every leaf of the rail)
    descr: str = CUMULUS_DESCR
    ports: dict[str, SwitchPort] = field(default_factory=dict)
    os: str = "cumulus"
    uplinks: list[str] = field(default_factory=list)  # ports toward the spine (leaves) or the leaves (spine)
    loaded: list[str] = field(default_factory=list)  # configuration files accepted, in order (its saved config)

    def port(self, name: str) -> SwitchPort:
        if name not in self.ports:
            self.ports[name] = SwitchPort(self.name, name)
        return self.ports[name]

    def front(self, index: int) -> SwitchPort:
        """Front-panel port ``index`` under the NOS's own name."""
        from wizard.lab.switch_os import model

        name, alias = model(self.os).port_name(index)
        sp = self.port(name)
        sp.index, sp.alias = index, alias
        return sp


@dataclass
class Uplink:
    """One leaf-spine cable: the leaf's port, the spine's port and the rate the link trained at (both ways)."""

    leaf_port: SwitchPort
    spine_port: SwitchPort
    line_gbps: float
    gbps: float  # below line_gbps under the degraded_uplink fault


@dataclass
class SwitchFabric:
    """The switches of a rail fabric, which switch port every host port is cabled to, and the leaf-spine uplinks."""

    switches: dict[str, Switch] = field(default_factory=dict)
    attach: dict[PortRef, SwitchPort] = field(default_factory=dict)
    mgmt_attach: dict[str, SwitchPort] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    netdevs: list[str] = field(default_factory=list)
    spines: list[str] = field(default_factory=list)  # in ECMP order
    links: dict[tuple[str, str], Uplink] = field(default_factory=dict)  # (leaf, spine) -> their cable

    def storming(self, ref: PortRef) -> bool:
        """Whether the host port sends a PFC pause storm (fault ``pfc_storm``)."""
        return any(
            f.kind == "pfc_storm" and f.host == ref[0] and fault_rail(f, self.netdevs) == ref[1] for f in self.faults
        )

    def leaf(self, rail: int, su: int = 0) -> Switch:
        """The leaf of ``rail`` in scalable unit ``su`` (one-SU fabrics: leaf-r<rail>)."""
        return next(s for s in self.switches.values() if s.role == "leaf" and s.rail == rail and (s.su or 0) == su)

    def port_of(self, ref: PortRef) -> SwitchPort | None:
        return self.attach.get(ref)

    def spine_between(self, a: PortRef, b: PortRef) -> str | None:
        """The spine a flow between two host ports on different leaves crosses (the ECMP hash of
        wizard/lab/rails_plan.py); None when they share a leaf or one is not cabled."""
        from wizard.lab.rails_plan import ecmp_spine

        pa, pb = self.port_of(a), self.port_of(b)
        if pa is None or pb is None or pa.switch == pb.switch or not self.spines:
            return None
        return self.spines[ecmp_spine(a, b, len(self.spines))]

    def uplinks_between(self, a: PortRef, b: PortRef) -> list[Uplink]:
        """The two uplinks (source leaf's, destination leaf's) a flow between two host ports crosses, in path order."""
        spine = self.spine_between(a, b)
        if spine is None:
            return []
        pa, pb = self.attach[a], self.attach[b]
        return [self.links[(pa.switch, spine)], self.links[(pb.switch, spine)]]

    def path(self, a: PortRef, b: PortRef) -> list[SwitchPort]:
        """The switch ports a packet from host port ``a`` to ``b`` crosses: the two leaf ports, and between two
        leaves each leaf's uplink to the spine the pair hashes to and that spine's ports toward both leaves."""
        pa, pb = self.port_of(a), self.port_of(b)
        ports = [p for p in (pa, pb) if p is not None]
        links = self.uplinks_between(a, b)
        if not links:
            return ports
        hops = [port for link in links for port in (link.leaf_port, link.spine_port)]
        return [ports[0], *hops, ports[1]]

    def path_gbps(self, a: PortRef, b: PortRef) -> float | None:
        """The slowest uplink rate on the path when an uplink there trained below its line rate (None otherwise)."""
        slow = [link.gbps for link in self.uplinks_between(a, b) if link.gbps < link.line_gbps]
        return min(slow) if slow else None


def fault_rail(f: Fault, netdevs: list[str]) -> int:
    """The rail a port fault names (its argument is the host netdev; default: rail 0); ValueError if unknown."""
    if f.arg is None:
        return 0
    if f.arg not in netdevs:
        raise ValueError(f"fault {f}: {f.arg!r} is not a data port of the profile ({', '.join(netdevs)})")
    return netdevs.index(f.arg)


def apply_faults(fab: SwitchFabric, switch: Switch) -> None:
    """The switch-port faults on top of the loaded configuration (someone changed the port by hand)."""
    for f in fab.faults:
        if f.kind not in SWITCH_FAULTS[1:]:
            continue
        sp = fab.attach.get((f.host, fault_rail(f, fab.netdevs)))
        if sp is None or sp.switch != switch.name:
            continue
        if f.kind == "switch_pfc_off":
            sp.pfc_priorities.clear()
        elif f.kind == "switch_mtu":
            sp.mtu = 1500
        elif f.kind == "switch_ecn_off":
            sp.ecn_prios.clear()


def segment_of(fab: SwitchFabric, sp: SwitchPort) -> str:
    """The L2 segment a switch port belongs to: its leaf's rail segment (one leaf's VLAN, or the rail's VNI across
    SUs), else the switch itself."""
    return fab.switches[sp.switch].segment or sp.switch
