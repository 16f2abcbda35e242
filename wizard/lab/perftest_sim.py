"""What perftest would measure between two lab ports (rate, MTU, losses) and its output in perftest's formats."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wizard.lab import degraded, ib, rdma

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

SIMULATED = "# simulated by the roce-wizard lab: not a measurement"
DASHES = "-" * 87
ROCE_HEADERS = 82  # Ethernet+FCS+preamble/IFG 38, IPv4 20, UDP 8, BTH 12, ICRC 4 bytes per packet
PROTOCOL_EFFICIENCY = 0.955  # ACKs, completion moderation, PCIe read overhead (23.4 Gb/s on 25GbE)
LOSSY_FACTOR = {"alone": 0.82, "together": 0.71}  # go-back-N retransmits after drops, one rail vs all rails
MPPS = 8.4  # small-message rate of one ConnectX-4 Lx/5 QP (message rate bound below ~512 B)
SWEEP = [2**i for i in range(1, 24)]  # -a: 2 B .. 8 MiB
TITLES = {
    "ib_write_bw": "RDMA_Write BW Test",
    "ib_read_bw": "RDMA_Read BW Test",
    "ib_send_bw": "Send BW Test",
    "ib_write_lat": "RDMA_Write Latency Test",
    "ib_send_lat": "Send Latency Test",
}


@dataclass
class End:
    """One side of a perftest connection: host, RDMA device, GID."""

    host: SimHost
    dev: rdma.RdmaDev
    gid_index: int | None  # None on InfiniBand: perftest connects by LID and uses no GID ("IB - no gid")
    gid: str  # as the GID table shows it (IPv6 notation)
    ipv4: str | None

    @property
    def ib(self) -> bool:
        return rdma.is_ib(self.host, self.dev)

    @property
    def netdev(self) -> str:
        return self.dev.netdev

    def perftest_gid(self) -> str:
        """perftest prints the GID as 16 decimal bytes: 00:...:255:255:192:168:11:01."""
        if self.ipv4:
            return ":".join(["00"] * 10 + ["255", "255"] + [f"{int(o):02d}" for o in self.ipv4.split(".")])
        return ":".join("00" for _ in range(16))


@dataclass
class Link:
    """What the pair of ports gives a test: speed, MTU and whether its traffic class is lossless on both sides."""

    speed_gbps: float  # the slowest link on the way: both ports (as trained) and a slow uplink between them
    mtu: int
    cable_share: float = 1.0  # share of it a bad cable on either port leaves (wizard/lab/degraded.py)
    priority: dict[str, int] = field(default_factory=dict)  # host -> priority the test's DSCP maps to
    lossless: dict[str, bool] = field(default_factory=dict)  # host -> PFC on that priority

    @property
    def all_lossless(self) -> bool:
        return all(self.lossless.values())


def link_between(a: End, b: End, tclass: int) -> Link:
    speed = min(_speed(a), _speed(b), _uplinks_gbps(a, b))
    mtu = min(rdma.active_mtu(a.host, a.dev), rdma.active_mtu(b.host, b.dev))
    share = 1.0 if a.ib or b.ib else min(degraded.cable_share(e.host, e.dev.port_indices[0]) for e in (a, b))
    link = Link(speed, mtu, share)
    if a.ib and b.ib:
        # InfiniBand links are lossless by credit-based flow control (IBTA vol. 1, 7.9): no PFC to configure
        link.lossless = {a.host.name: True, b.host.name: True}
        return link
    for end in (a, b):
        prio, pfc = qos_of(end, tclass)
        link.priority[end.host.name] = prio
        link.lossless[end.host.name] = pfc
    return link


def _speed(end: End) -> float:
    if end.ib:  # the trained rate: a port at 1X carries a quarter
        return ib.view(end.host, end.dev.port_indices[0]).rate_gbps
    return degraded.speed_mbps(end.host, end.dev.port_indices[0]) / 1000  # a port trained down carries less


def _uplinks_gbps(a: End, b: End) -> float:
    """The rate of a slow leaf-spine uplink the pair's ECMP path crosses (inf when none is slow or no switches)."""
    switches = getattr(getattr(a.host.lab, "fabric", None), "switches", None)
    if switches is None:
        return float("inf")
    limit = switches.path_gbps((a.host.name, a.dev.port_indices[0]), (b.host.name, b.dev.port_indices[0]))
    return float("inf") if limit is None else limit


def qos_of(end: End, tclass: int) -> tuple[int, bool]:
    """(priority the packets get, PFC on it) on the receiving port: DSCP trust maps DSCP; PCP trust sees no tag."""
    nd = end.host.netdevs.get(end.host.profile.ports[end.dev.port_indices[0]].netdev)
    qos = nd.qos if nd is not None else None
    if qos is None:
        return 0, False
    prio = qos.dscp2prio[tclass >> 2] if qos.trust == "dscp" else 0
    return prio, bool(qos.pfc[prio])


def efficiency(mtu: int) -> float:
    """Share of the line rate RDMA payload gets at a path MTU (RoCE v2 per-packet headers)."""
    return mtu / (mtu + ROCE_HEADERS) * PROTOCOL_EFFICIENCY


def jitter(*keys: object) -> float:
    """A stable +-0.3 % wobble per rail so the numbers look measured but tests stay deterministic."""
    h = zlib.crc32(repr(keys).encode()) % 1000
    return 1.0 + (h - 500) / 500 * 0.003


def rate_gbps(link: Link, size: int, *, together: bool, key: object) -> float:
    """Average Gb/s of an ib_write_bw at message size ``size``."""
    ceiling = link.speed_gbps * efficiency(link.mtu) * jitter(key) * link.cable_share
    if not link.all_lossless:
        ceiling *= LOSSY_FACTOR["together" if together else "alone"]
    return min(ceiling, size * 8 * MPPS / 1000)


def latency_us(link: Link, size: int, key: object) -> tuple[float, float, float]:
    """(typical, p99, p99.9) microseconds of ib_write_lat: NIC+wire base, serialization, worse tail when lossy."""
    base = 1.62 * jitter(key, "lat") + size * 8 / (link.speed_gbps * 1000)
    tail = 1.35 if link.all_lossless else 6.0
    return base, base * 1.12, base * tail


# -- output -------------------------------------------------------------------------------------------------
def header(tool: str, dev: str, *, client: bool, mtu: int, gid_index: int | None, qps: int = 1) -> list[str]:
    """perftest's banner; on InfiniBand (gid_index None) "Link type : IB" and no GID line, as in seed 003."""
    lat = tool.endswith("_lat")
    lines = [
        DASHES,
        f"                    {TITLES[tool]}",
        f" Dual-port       : OFF\t\tDevice         : {dev}",
        f" Number of qps   : {qps}\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
    ]
    if client:
        lines.append(f" TX depth        : {1 if lat else 128}")
    elif tool == "ib_send_bw":
        lines.append(" RX depth        : 512")
    if not lat:
        lines.append(" CQ Moderation   : 100")
    lines += [
        f" Mtu             : {mtu}[B]",
        f" Link type       : {'IB' if gid_index is None else 'Ethernet'}",
        *([] if gid_index is None else [f" GID index       : {gid_index}"]),
        f" Max inline data : {220 if lat else 0}[B]",
        " rdma_cm QPs\t : OFF",
        " Data ex. method : Ethernet",
        DASHES,
    ]
    return lines


def address(side: str, end: End, seed: int) -> list[str]:
    qpn = 0x100 + seed % 0x700
    psn = zlib.crc32(f"{end.host.name}{seed}".encode()) & 0xFFFFFF
    if end.ib:
        lid = ib.view(end.host, end.dev.port_indices[0]).lid
        return [f" {side} address: LID {lid:#06x} QPN {qpn:#06x} PSN {psn:#08x} RKey 0x203d00 VAddr 0x007f5f29b83000"]
    return [
        f" {side} address: LID 0000 QPN {qpn:#06x} PSN {psn:#08x} RKey 0x203d00 VAddr 0x007f5f29b83000",
        f" GID: {end.perftest_gid()}",
    ]


BW_COLUMNS = " #bytes     #iterations    BW peak[{u}]    BW average[{u}]   MsgRate[Mpps]"
LAT_COLUMNS = (
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
    "   99% percentile[usec]   99.9% percentile[usec] "
)


def bw_row(size: int, iterations: int, gbps: float, gbits: bool) -> str:
    peak = gbps * 1.002
    mpps = gbps * 1000 / 8 / size
    if gbits:
        return f" {size:<10} {iterations:<16} {peak:.2f}             {gbps:.2f}  \t\t   {mpps:.6f}"
    mb = gbps * 1000 / 8  # MB/sec as perftest prints without --report_gbits
    return f" {size:<10} {iterations:<16} {peak * 1000 / 8:.2f}             {mb:.2f}  \t\t   {mpps:.6f}"


def lat_row(size: int, iterations: int, typical: float, p99: float, p999: float) -> str:
    t_min = typical * 0.96
    return (
        f" {size:<7} {iterations:<13} {t_min:.2f}           {p999 * 1.4:.2f}         {typical:.2f}"
        f"                {typical * 1.01:.2f}             {(p99 - typical) / 3:.2f}            {p99:.2f}"
        f"                    {p999:.2f}   "
    )
