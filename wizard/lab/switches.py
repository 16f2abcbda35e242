"""Simulated switches of a rail-optimized fabric: leaf-r<i> per rail, spine-0, their ports' QoS and LLDP state.

Each leaf and the spine run a NOS model (wizard/lab/switch_os: Cumulus Linux, SONiC or EOS): it names the ports,
decides what LLDP advertises, and starts from that NOS's documented defaults, which carry no lossless class for
RoCE. The lossless state comes only from configuration files loaded into a switch the way that NOS loads them
(``roce-wizard lab switch-apply``), so an incast test measures what the operator really applied.
Upstream lldpd never fills the 802.3 maximum-frame-size TLV on Linux (src/daemon/protocols/lldp.c only sends it
when ``p_mfs`` is set, and only the decoder sets it), so these switches do not send it: a small switch MTU shows
on a host only as jumbo frames that get no answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

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
class SwitchFabric:
    """The switches of a rail fabric and which switch port every host port is cabled to."""

    switches: dict[str, Switch] = field(default_factory=dict)
    attach: dict[PortRef, SwitchPort] = field(default_factory=dict)
    mgmt_attach: dict[str, SwitchPort] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    netdevs: list[str] = field(default_factory=list)

    def storming(self, ref: PortRef) -> bool:
        """Whether the host port sends a PFC pause storm (fault ``pfc_storm``)."""
        return any(
            f.kind == "pfc_storm" and f.host == ref[0] and fault_rail(f, self.netdevs) == ref[1] for f in self.faults
        )

    def leaf(self, rail: int) -> Switch:
        return self.switches[f"leaf-r{rail}"]

    def port_of(self, ref: PortRef) -> SwitchPort | None:
        return self.attach.get(ref)

    def path(self, a: PortRef, b: PortRef) -> list[SwitchPort]:
        """The switch ports a packet from host port ``a`` to ``b`` crosses: the two leaf ports, and between two
        leaves each leaf's uplink and the spine's ports toward both."""
        pa, pb = self.port_of(a), self.port_of(b)
        ports = [p for p in (pa, pb) if p is not None]
        if pa is None or pb is None or pa.switch == pb.switch:
            return ports
        hops = []
        for leaf in (self.switches[pa.switch], self.switches[pb.switch]):
            hops += [leaf.ports[u] for u in leaf.uplinks]
            for spine in (s for s in self.switches.values() if s.role == "spine"):
                hops += [spine.ports[u] for u in spine.uplinks if spine.ports[u].descr.endswith(leaf.name)]
        return [pa, *hops, pb]


def _chassis_mac(n: int) -> str:
    return f"1c:34:da:{(n >> 8) & 0xFF:02x}:{n & 0xFF:02x}:00"


def fault_rail(f: Fault, netdevs: list[str]) -> int:
    """The rail a port fault names (its argument is the host netdev; default: rail 0); ValueError if unknown."""
    if f.arg is None:
        return 0
    if f.arg not in netdevs:
        raise ValueError(f"fault {f}: {f.arg!r} is not a data port of the profile ({', '.join(netdevs)})")
    return netdevs.index(f.arg)


def _target_port(faults: list[Fault], host: str, rail: int, netdevs: list[str]) -> bool:
    """Whether ``wrong_leaf`` moves this host port's cable."""
    return any(f.host == host and f.kind == "wrong_leaf" and fault_rail(f, netdevs) == rail for f in faults)


UPLINK_INDEX = 64  # a leaf's port toward the spine on a 64-port leaf (hosts from port 1, the spine on the last)


def rail_fabric(
    hosts: list[str],
    netdevs: list[str],
    faults: Iterable[Fault] = (),
    switch_os: str = "cumulus",
    os_of: Mapping[str, str] | None = None,
) -> SwitchFabric:
    """Leaves ``leaf-r0..`` (one per rail, front ports 1..N = host 1..N), ``spine-0`` and a management switch,
    every leaf and the spine running ``switch_os`` (the NOS's port names: swp5, Ethernet32 alias etp5, Ethernet5/1),
    or the one ``os_of`` names for it (the answers' switches.os_of: a mixed fabric).

    ``netdevs`` are the data ports of a host in rail order. Faults change the cabling or the leaf port state:
    ``wrong_leaf`` moves the cable of one host port to a spare port of the next rail's leaf (port N+k), so LLDP
    names that leaf and the port sits in the wrong rail's segment; ``switch_pfc_off``/``switch_mtu``/
    ``switch_ecn_off`` change the leaf port the host port is cabled to, on top of what was loaded.
    """
    from wizard.lab.switch_os import descr_of, rebuild

    faults = list(faults)
    fab = SwitchFabric(faults=faults, netdevs=list(netdevs))
    nrails, nhosts = len(netdevs), len(hosts)
    # A leaf has its front ports whether cabled or not (a file naming a spare port loads): 64, or enough for every
    # host twice (its own port and a wrong_leaf spare), the last one toward the spine.
    radix = max(UPLINK_INDEX, 2 * nhosts + 1)
    os_of = dict(os_of or {})

    def nos(name: str) -> str:
        return os_of.get(name, switch_os)

    spine = Switch(
        "spine-0", _chassis_mac(100), "10.0.255.100", "spine", os=nos("spine-0"), descr=descr_of(nos("spine-0"))
    )
    fab.switches[spine.name] = spine
    for rail in range(nrails):
        leaf = Switch(
            f"leaf-r{rail}", _chassis_mac(rail + 1), f"10.0.255.{rail + 1}", "leaf", rail=rail,
            os=nos(f"leaf-r{rail}"), descr=descr_of(nos(f"leaf-r{rail}")),
        )  # fmt: skip
        fab.switches[leaf.name] = leaf
        for index in range(1, radix):
            leaf.front(index)
        up = leaf.front(radix)
        up.descr = f"uplink to {spine.name}"
        leaf.uplinks.append(up.port)
        down = spine.front(rail + 1)
        down.descr = f"downlink to {leaf.name}"
        spine.uplinks.append(down.port)
    mgmt = Switch(
        "mgmt-sw-0",
        _chassis_mac(200),
        "10.0.255.200",
        "mgmt",
        descr="Cumulus Linux version 5.9.1 running on Nvidia SN2201",
    )
    fab.switches[mgmt.name] = mgmt
    for k, host in enumerate(hosts, start=1):
        mport = mgmt.front(k)
        mport.descr = f"{host} eno1"
        fab.mgmt_attach[host] = mport
        for rail in range(nrails):
            if _target_port(faults, host, rail, netdevs):
                sp = fab.leaf((rail + 1) % nrails).front(nhosts + k)
            else:
                sp = fab.leaf(rail).front(k)
            sp.descr = f"{host} {netdevs[rail]}"
            sp.peer = (host, rail)
            fab.attach[(host, rail)] = sp
    for switch in fab.switches.values():
        rebuild(fab, switch)
    return fab


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


def segment_of(sp: SwitchPort) -> str:
    """The L2 segment (rail VLAN) a switch port belongs to: its leaf."""
    return sp.switch
