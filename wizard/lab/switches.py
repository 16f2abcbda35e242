"""Simulated switches of a rail-optimized fabric: leaf-r<i> per rail, spine-0, their ports' QoS and LLDP state.

The leaves model NVIDIA Spectrum switches running Cumulus Linux 5.x with its RoCE lossless defaults (``nv set qos
roce``): MTU 9216, trust DSCP, PFC on switch priority 3, ECN marking on the RoCE traffic class, DSCP 26 -> priority 3
and CNP DSCP 48 -> priority 6 (NVIDIA Cumulus Linux user guide, "RDMA over Converged Ethernet - RoCE"). Cumulus
runs lldpd, which advertises the IEEE 802.1Qaz PFC and APP TLVs when ``nv set interface swpN lldp dcbx-pfc-tlv on``
and ``application-tlv`` are configured (NVUE reference, "LLDP"); the simulated leaves are configured that way.
Upstream lldpd never fills the 802.3 maximum-frame-size TLV on Linux (src/daemon/protocols/lldp.c only sends it
when ``p_mfs`` is set, and only the decoder sets it), so these leaves do not send it: a small switch MTU shows
on a host only as jumbo frames that get no answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from wizard.lab.faults import Fault

PortRef = tuple[str, int]  # (host name, index into the host profile's ports)

CUMULUS_DESCR = "Cumulus Linux version 5.9.1 running on Nvidia SN5600"
LOSSLESS_PRIORITY = 3
DEFAULT_APP_DSCP = {26: 3, 48: 6}  # RoCE data DSCP 26 and CNP DSCP 48 (Cumulus RoCE defaults)
SWITCH_FAULTS = ("wrong_leaf", "switch_pfc_off", "switch_mtu", "switch_ecn_off")


@dataclass
class SwitchPort:
    """One switch port: its configuration and what its LLDP agent advertises to the cabled host."""

    switch: str
    port: str
    descr: str = ""
    mtu: int = 9216
    trust: str = "dscp"
    pfc_priorities: set[int] = field(default_factory=lambda: {LOSSLESS_PRIORITY})
    pfc_willing: bool = False  # a switch is the DCBX authority: it never accepts the host's PFC settings
    ecn: bool = True
    app_dscp: dict[int, int] = field(default_factory=lambda: dict(DEFAULT_APP_DSCP))
    peer: PortRef | None = None  # host port cabled here
    send_dcbx: bool = True  # lldp dcbx-pfc-tlv / application-tlv on

    @property
    def lldp_mfs(self) -> int | None:
        """802.3 maximum frame size TLV value: not sent by lldpd-based switches (see module docstring)."""
        return None


@dataclass
class Switch:
    """A switch: chassis identity (LLDP chassis TLVs) and its ports by name."""

    name: str
    chassis_id: str  # MAC, LLDP chassis id subtype mac
    mgmt_ip: str
    role: str  # leaf | spine | mgmt
    rail: int | None = None
    descr: str = CUMULUS_DESCR
    ports: dict[str, SwitchPort] = field(default_factory=dict)

    def port(self, name: str) -> SwitchPort:
        if name not in self.ports:
            self.ports[name] = SwitchPort(self.name, name)
        return self.ports[name]


@dataclass
class SwitchFabric:
    """The switches of a rail fabric and which switch port every host port is cabled to."""

    switches: dict[str, Switch] = field(default_factory=dict)
    attach: dict[PortRef, SwitchPort] = field(default_factory=dict)
    mgmt_attach: dict[str, SwitchPort] = field(default_factory=dict)

    def leaf(self, rail: int) -> Switch:
        return self.switches[f"leaf-r{rail}"]

    def port_of(self, ref: PortRef) -> SwitchPort | None:
        return self.attach.get(ref)


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


def rail_fabric(hosts: list[str], netdevs: list[str], faults: Iterable[Fault] = ()) -> SwitchFabric:
    """Leaves ``leaf-r0..`` (one per rail, ports swp1..swpN = host 1..N), ``spine-0`` and a management switch.

    ``netdevs`` are the data ports of a host in rail order. Faults change the cabling or the leaf port state:
    ``wrong_leaf`` moves the cable of one host port to a spare port of the next rail's leaf (swp<N+k>), so LLDP
    names that leaf and the port sits in the wrong rail's segment; ``switch_pfc_off``/``switch_mtu``/
    ``switch_ecn_off`` change the leaf port the host port is cabled to.
    """
    faults = list(faults)
    fab = SwitchFabric()
    nrails, nhosts = len(netdevs), len(hosts)
    spine = Switch("spine-0", _chassis_mac(100), "10.0.255.100", "spine")
    fab.switches[spine.name] = spine
    for rail in range(nrails):
        leaf = Switch(f"leaf-r{rail}", _chassis_mac(rail + 1), f"10.0.255.{rail + 1}", "leaf", rail=rail)
        fab.switches[leaf.name] = leaf
        up = leaf.port("swp64")
        up.descr = f"uplink to {spine.name}"
        down = spine.port(f"swp{rail + 1}")
        down.descr = f"downlink to {leaf.name}"
    mgmt = Switch(
        "mgmt-sw-0",
        _chassis_mac(200),
        "10.0.255.200",
        "mgmt",
        descr="Cumulus Linux version 5.9.1 running on Nvidia SN2201",
    )
    fab.switches[mgmt.name] = mgmt
    for k, host in enumerate(hosts, start=1):
        mport = mgmt.port(f"swp{k}")
        mport.descr = f"{host} eno1"
        mport.send_dcbx = False
        fab.mgmt_attach[host] = mport
        for rail in range(nrails):
            if _target_port(faults, host, rail, netdevs):
                leaf = fab.leaf((rail + 1) % nrails)
                sp = leaf.port(f"swp{nhosts + k}")
            else:
                sp = fab.leaf(rail).port(f"swp{k}")
            sp.descr = f"{host} {netdevs[rail]}"
            sp.peer = (host, rail)
            fab.attach[(host, rail)] = sp
    for f in faults:
        if f.kind not in SWITCH_FAULTS[1:]:
            continue
        sp = fab.attach.get((f.host, fault_rail(f, netdevs)))
        if sp is None:
            continue
        if f.kind == "switch_pfc_off":
            sp.pfc_priorities.discard(LOSSLESS_PRIORITY)
        elif f.kind == "switch_mtu":
            sp.mtu = 1500
        elif f.kind == "switch_ecn_off":
            sp.ecn = False
    return fab


def segment_of(sp: SwitchPort) -> str:
    """The L2 segment (rail VLAN) a switch port belongs to: its leaf."""
    return sp.switch
