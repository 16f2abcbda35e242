"""The simulated InfiniBand subnet of the ib-seed003 lab: two 36-port switches with four inter-switch links and the
subnet manager on the first, as seed 003 describes its V100 fabric (../shared/seeds/003_*).

What a host sees of an IB port follows the IBTA port state machine (IBTA Architecture Specification vol. 1,
7.2 "Link states"): the physical link trains first (phys_state LinkUp), then the logical port waits in INIT until a
subnet manager sweeps it, gives it a LID and moves it through ARMED to ACTIVE. With no SM reachable the port stays
in INIT for ever, IPoIB has no carrier (it joins the broadcast group through the SM's SA) and no RDMA connection
can be made. Partition keys come from the SM too: ports that hold no common P_Key cannot talk (IBTA 10.9).

Faults (HOST:KIND[=ARG]):
- no_sm: the host's ports are cabled to ib-sw-3, a switch with no subnet manager and no link to the managed ones.
- pkey_mismatch[=NETDEV]: the SM's partition configuration left the port out of the default partition; its P_Key
  table holds only 0x8002.
- ib_link_degraded[=NETDEV[:WIDTH|GBPS]]: the port trained at 1X (a bad lane) or at a lower speed (e.g. :56 FDR).
- mixed_link_layer[=NETDEV]: a VPI port left in Ethernet mode (mlxconfig LINK_TYPE_P2=ETH(2)); cabled into an IB
  switch it never gets a link.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

PortRef = tuple[str, int]
SWITCH_PORTS = 36  # seed 003: "2 台 36 端口的 IB 交换机"
ISL_PORTS = (33, 34, 35, 36)  # "2 个交换机之间还有 4 条 100Gbps 的互联线"
SPEED_LABEL = {2.5: "SDR", 5.0: "DDR", 10.0: "QDR", 14.0: "FDR", 25.0: "EDR", 50.0: "HDR", 100.0: "NDR"}
LANE_GBPS = {label: gbps for gbps, label in SPEED_LABEL.items()}
DEFAULT_PKEY = "0xffff"


@dataclass
class IbSwitch:
    name: str
    guid: str
    lid: int
    sm: bool = False  # runs the master subnet manager


@dataclass
class IbPortView:
    """One host port as sysfs, ibstat and the diagnostics report it."""

    link_layer: str
    state: str  # DOWN / INIT / ARMED / ACTIVE
    phys_state: str  # Polling / LinkUp / Disabled
    width: int  # lanes: 4 or 1
    lane_gbps: float
    lid: int
    sm_lid: int
    pkeys: list[str]

    @property
    def rate_gbps(self) -> float:
        return self.width * self.lane_gbps

    @property
    def rate_text(self) -> str:
        """sysfs `rate` as the kernel prints it (drivers/infiniband/core/sysfs.c rate_show)."""
        label = SPEED_LABEL.get(self.lane_gbps, "")
        return f"{self.rate_gbps:g} Gb/sec ({self.width}X {label})"


@dataclass
class IbSubnet:
    switches: dict[str, IbSwitch] = field(default_factory=dict)
    attach: dict[PortRef, tuple[str, int]] = field(default_factory=dict)  # host port -> (switch, switch port)
    lids: dict[PortRef, int] = field(default_factory=dict)

    @classmethod
    def seed003(cls, names: list[str], ports_per_host: dict[str, int], faults: list) -> IbSubnet:  # type: ignore[type-arg]
        net = cls()
        net.switches = {
            "ib-sw-1": IbSwitch("ib-sw-1", "0x7cfe900300a1b2c0", 1, sm=True),
            "ib-sw-2": IbSwitch("ib-sw-2", "0x7cfe900300a1b2d0", 2),
        }
        isolated = {f.host for f in faults if f.kind == "no_sm"}
        if isolated:
            net.switches["ib-sw-3"] = IbSwitch("ib-sw-3", "0x7cfe900300a1b2e0", 0)
        lid = 3
        for hi, name in enumerate(names):
            for i in range(ports_per_host[name]):
                switch = "ib-sw-3" if name in isolated else ("ib-sw-1", "ib-sw-2")[i % 2]
                net.attach[(name, i)] = (switch, hi + 1)
                if name not in isolated:
                    net.lids[(name, i)] = lid
                    lid += 1
        return net

    @property
    def sm_switch(self) -> IbSwitch | None:
        return next((s for s in self.switches.values() if s.sm), None)

    def managed(self, switch: str) -> bool:
        """Whether the SM reaches this switch: ib-sw-1 and ib-sw-2 are joined by the ISLs, ib-sw-3 by nothing."""
        return self.sm_switch is not None and switch in ("ib-sw-1", "ib-sw-2")

    def isl_links(self) -> list[tuple[tuple[str, int], tuple[str, int]]]:
        return [(("ib-sw-1", p), ("ib-sw-2", p)) for p in ISL_PORTS]


def port_link_layer(host: SimHost, i: int) -> str:
    port = host.profile.ports[i]
    if host.fault("mixed_link_layer", port.netdev) is not None or _default_fault(host, "mixed_link_layer", i, -1):
        return "Ethernet"
    return host.profile.card_of(i).model.link_layer


def _default_fault(host: SimHost, kind: str, i: int, default_index: int) -> bool:
    """A fault given without a port applies to one port: the first (0) or, for a VPI mode mistake, the last."""
    fault = host.fault(kind)
    if fault is None or fault.arg:
        return False
    ports = host.profile.ports
    return i == (default_index % len(ports))


def _degraded(host: SimHost, i: int) -> str | None:
    port = host.profile.ports[i]
    for fault in host.faults_of("ib_link_degraded"):
        netdev, _, how = (fault.arg or "").partition(":")
        if (netdev and netdev == port.netdev) or (not netdev and i == 0):
            return how or "1X"
    return None


def view(host: SimHost, i: int) -> IbPortView:
    """The port's state now: trained link, SM, LID, rate and partition keys."""
    lab = host.lab
    model = host.profile.card_of(i).model
    lanes, lane = model.lanes, model.speed_mbps / 1000 / model.lanes
    pkeys = [DEFAULT_PKEY]
    port = host.profile.ports[i]
    if host.fault("pkey_mismatch", port.netdev) is not None or _default_fault(host, "pkey_mismatch", i, 0):
        pkeys = ["0x8002"]
    how = _degraded(host, i)
    if how == "1X":
        lanes = 1
    elif how:
        lane = next((g for g in SPEED_LABEL if abs(g * lanes - float(how)) < 1), lane)
    link_layer = port_link_layer(host, i)
    subnet = getattr(lab, "ib", None) if lab is not None else None
    cabled = subnet is not None and (host.name, i) in subnet.attach
    up = (
        host.state in ("running", "stopping")
        and "mlx5_core" in host.modules
        and link_layer == "InfiniBand"
        and cabled
        and host.fault("link_down", port.netdev) is None
    )
    if not up:
        return IbPortView(link_layer, "DOWN", "Polling" if cabled else "Disabled", 4, 2.5, 0xFFFF, 0, pkeys)
    assert subnet is not None
    switch, _ = subnet.attach[(host.name, i)]
    sm = subnet.sm_switch
    if not subnet.managed(switch) or sm is None:
        return IbPortView(link_layer, "INIT", "LinkUp", lanes, lane, 0xFFFF, 0, pkeys)
    return IbPortView(link_layer, "ACTIVE", "LinkUp", lanes, lane, subnet.lids[(host.name, i)], sm.lid, pkeys)


STATE_NUM = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4}
PHYS_NUM = {"Sleep": 1, "Polling": 2, "Disabled": 3, "LinkUp": 5}
IBSTAT_STATE = {"DOWN": "Down", "INIT": "Initializing", "ARMED": "Armed", "ACTIVE": "Active"}


def is_ib_port(host: SimHost, i: int) -> bool:
    return port_link_layer(host, i) == "InfiniBand"


def reachable(a: SimHost, i: int, b: SimHost, j: int) -> bool:
    """Two IB ports can talk: both ACTIVE in the same subnet and sharing a partition key."""
    va, vb = view(a, i), view(b, j)
    return va.state == "ACTIVE" and vb.state == "ACTIVE" and bool(set(va.pkeys) & set(vb.pkeys))
