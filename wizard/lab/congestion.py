"""Incast on the modelled leaf switches: senders into one receiver port share its line rate; PFC pauses them, a
port without PFC drops (go-back-N), ECN marking makes the receiver send CNPs that DCQCN senders act on.

Sources of the modelled behaviour:
- IEEE 802.1Qbb PFC: a switch whose ingress buffer for a lossless priority passes XOFF sends PAUSE for that
  priority out of the ingress port (the sender's port); a priority without PFC is lossy and the congested egress
  queue tail-drops. Cumulus Linux "RDMA over Converged Ethernet - RoCE" (lossless mode: PFC on switch priority 3,
  ECN marking on the RoCE traffic class) configures both per port, so either end's port lacking PFC makes the path
  lossy at the congested queue.
- mlx5 counters (kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst, en_stats.c
  ``pport_per_prio_pfc_stats_desc``): ``rx_prio<i>_pause`` (pause frames received), ``rx_prio<i>_pause_duration``
  (microseconds the link partner paused the port), ``rx_prio<i>_pause_transition`` (XOFF -> XON). The RDMA
  hw_counters: ``out_of_sequence`` (responder saw a PSN gap), ``packet_seq_err`` (requester got a NAK-sequence
  error), ``local_ack_timeout_err`` (requester timed out and resent: RC go-back-N), ``np_ecn_marked_roce_packets``,
  ``np_cnp_sent``, ``rp_cnp_handled``, ``rp_cnp_ignored`` (RP disabled on that priority).
- DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015; NVIDIA "DCQCN
  parameters", ecn/roce_np and ecn/roce_rp sysfs): the switch marks CE on the congested queue, the receiver (NP)
  sends a CNP at most every ``min_time_between_cnps`` us per QP, the sender (RP) cuts its rate, so queues stay
  below XOFF most of the time: far fewer pause frames than PFC alone, but not none under a sustained N:1 incast.
- Go-back-N under drops: RC retransmits everything after a lost packet, so lossy RoCE loses much more than the
  dropped share under incast (Mittal et al., "Revisiting Network Support for RDMA", SIGCOMM 2018).

- PFC pause storm (fault ``pfc_storm``): a NIC whose receive path hangs keeps sending XOFF for its lossless
  priority. A switch port that honours PFC on that priority stops its egress queue toward the NIC; the packets for
  it fill the leaf's lossless buffer and the leaf pauses every port they come in on, so each sender to the stuck
  host is paused for as long as the storm lasts (and with it everything else it sends on that priority). A PFC
  watchdog on the port (SONiC pfcwd, Cumulus `qos pfc-watchdog`, EOS `priority-flow-control pause watchdog`)
  notices the queue paused for its detection time, then ignores the pauses and drops what is queued for the port:
  the senders lose those packets (RC retransmits, then gives up) but are no longer paused.

Without modelled switches (the reference back-to-back pair, ideal rail switches) nothing here applies.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wizard.lab import perftest_sim as sim

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.switches import SwitchPort

PAUSE_EPISODE_US = 5.0  # one XOFF..XON cycle under incast: headroom of a 400G port drains in a few microseconds
FRAMES_PER_EPISODE = 2  # an XOFF, then an XON (a pause with quanta 0, counted as a pause frame too)
DCQCN_RESIDUAL = 0.2  # share of PFC pause time left when DCQCN reacts to CNPs
LOSSY_INCAST = 0.6  # share of its fair rate a sender keeps when go-back-N resends after tail drops
DROP_SHARE = 0.05  # packets dropped at the congested queue per unit of oversubscription
MARK_SHARE = 0.1  # packets the congested queue marks CE per unit of oversubscription
MIN_TIME_BETWEEN_CNPS_US = 4.0  # ecn/roce_np/min_time_between_cnps (the lab exposes 4)
PAUSE_QUANTA_US = 3.3  # a full XOFF (65535 quanta of 512 bit times) lasts about 84 us at 400G: a storm refreshes it
# long before that, every few microseconds
STORMED_GBPS = 0.01  # what a flow into a storming port moves: its queue is paused (or, after a watchdog, dropped)
WATCHDOG_DETECT_S = 0.2  # the detection time switch-config writes by default (switches.pfc_watchdog.detection_ms)


@dataclass(eq=False)
class Flow:
    """One perftest client sending into a receiver port through the modelled leaves."""

    sender: sim.End
    receiver: sim.End
    tclass: int
    peak: int = 1  # the most flows that shared the receiver port while this one ran
    members: set[Flow] = field(default_factory=set, repr=False)

    @property
    def key(self) -> tuple[str, str]:
        return self.receiver.host.name, self.receiver.dev.name


def _switch_port(end: sim.End) -> SwitchPort | None:
    lab = end.host.lab
    switches = getattr(getattr(lab, "fabric", None), "switches", None)
    if switches is None:
        return None
    return switches.port_of((end.host.name, end.dev.port_indices[0]))


def _flows(host: SimHost) -> dict[tuple[str, str], set[Flow]]:
    owner = host.lab if host.lab is not None else host
    return owner.__dict__.setdefault("_incast_flows", {})


def join(sender: sim.End, receiver: sim.End, tclass: int) -> Flow | None:
    """Register a client's flow into its receiver port (None without modelled switches: nothing changes)."""
    if _switch_port(sender) is None or _switch_port(receiver) is None:
        return None
    flow = Flow(sender, receiver, tclass)
    group = _flows(sender.host).setdefault(flow.key, set())
    group.add(flow)
    flow.members = group
    for other in group:  # everybody already sending now shares the port with one more
        other.peak = max(other.peak, len(group))
    return flow


def leave(flow: Flow | None) -> None:
    if flow is not None:
        flow.members.discard(flow)


@dataclass
class Path:
    """What the fabric does to one congested flow."""

    senders: int
    lossless: bool  # PFC on the priority on both hosts and both switch ports
    marks: bool  # the receiver's switch port marks ECN
    np: bool  # the receiver sends CNPs on the packets' priority
    rp: bool  # the sender's DCQCN acts on them
    sender_prio: int
    receiver_prio: int

    @property
    def dcqcn(self) -> bool:
        return self.marks and self.np and self.rp


def _switch_lossless(sp: SwitchPort | None, tclass: int) -> bool:
    return sp is None or sp.lossless(tclass >> 2)


def _path_lossless(s: sim.End, r: sim.End, tclass: int) -> bool:
    """PFC is hop by hop: every switch port between the two host ports must hold the packets' priority lossless
    (between two leaves: both leaf ports, both uplinks and the spine's ports toward both leaves)."""
    lab = s.host.lab
    switches = getattr(getattr(lab, "fabric", None), "switches", None)
    if switches is None:
        return True
    a, b = (s.host.name, s.dev.port_indices[0]), (r.host.name, r.dev.port_indices[0])
    return all(_switch_lossless(sp, tclass) for sp in switches.path(a, b))


def path_of(flow: Flow, link: sim.Link) -> Path:
    s, r = flow.sender, flow.receiver
    s_prio, s_pfc = sim.qos_of(s, flow.tclass)
    r_prio, r_pfc = sim.qos_of(r, flow.tclass)
    switch_ok = _path_lossless(s, r, flow.tclass)
    r_port = _switch_port(r)
    r_qos = _qos(r)
    s_qos = _qos(s)
    return Path(
        senders=flow.peak,
        lossless=s_pfc and r_pfc and switch_ok and link.all_lossless,
        marks=bool(r_port is not None and r_port.marks(flow.tclass >> 2)),
        np=bool(r_qos is not None and r_qos.ecn_np[r_prio]),
        rp=bool(s_qos is not None and s_qos.ecn_rp[s_prio]),
        sender_prio=s_prio,
        receiver_prio=r_prio,
    )


def _qos(end: sim.End):  # type: ignore[no-untyped-def]
    nd = end.host.netdevs.get(end.host.profile.ports[end.dev.port_indices[0]].netdev)
    return nd.qos if nd is not None else None


def sender_paused_by_switch(client: sim.End, server: sim.End, tclass: int) -> bool:
    """Whether a receiver's back-pressure reaches the sender as pause frames through the switch: PFC is hop by hop,
    so the receiver's switch port must honour the receiver's pauses and the sender's port must pause the sender
    (True without modelled switches)."""
    return _path_lossless(client, server, tclass)


def stormed(flow: Flow) -> SwitchPort | None:
    """The receiver's leaf port when the receiver storms and that port honours its pauses on the flow's priority."""
    fab = getattr(flow.receiver.host.lab, "fabric", None)
    switches = getattr(fab, "switches", None)
    r = flow.receiver
    if switches is None or not switches.storming((r.host.name, r.dev.port_indices[0])):
        return None
    sp = _switch_port(r)
    return sp if sp is not None and sp.lossless(flow.tclass >> 2) else None


def rate_gbps(flow: Flow, link: sim.Link, size: int, key: object) -> float | None:
    """The flow's share of the receiver port (None when it had the port to itself: the plain model applies)."""
    if stormed(flow) is not None:
        return STORMED_GBPS
    if flow.peak < 2:
        return None
    path = path_of(flow, link)
    ceiling = link.speed_gbps * sim.efficiency(link.mtu) * sim.jitter(key) * link.cable_share
    share = ceiling / path.senders * (1.0 if path.lossless else LOSSY_INCAST)
    return min(share, size * 8 * sim.MPPS / 1000)


def count(flow: Flow, link: sim.Link, seconds: float, packets: int) -> None:
    """Move the counters an oversubscribed receiver port causes: pauses at lossless senders, drops and resends at
    lossy ones, ECN marks and CNPs where the queue marks."""
    sp = stormed(flow)
    if sp is not None:
        _storm(flow, sp, seconds)
        return
    if flow.peak < 2:
        return
    path = path_of(flow, link)
    over = 1.0 - 1.0 / path.senders  # share of the offered load the receiver port cannot take
    s, r = flow.sender, flow.receiver
    s_eth = _eth(s)
    s_hw, r_hw = _hw(s), _hw(r)
    if path.marks:
        marked = int(packets * over * MARK_SHARE) + 1
        r_hw["np_ecn_marked_roce_packets"] = r_hw.get("np_ecn_marked_roce_packets", 0) + marked
        if path.np:
            cnps = min(marked, int(seconds * 1e6 / MIN_TIME_BETWEEN_CNPS_US * over)) + 1
            r_hw["np_cnp_sent"] = r_hw.get("np_cnp_sent", 0) + cnps
            name = "rp_cnp_handled" if path.rp else "rp_cnp_ignored"
            s_hw[name] = s_hw.get(name, 0) + cnps
    if path.lossless:
        paused_us = seconds * 1e6 * over * (DCQCN_RESIDUAL if path.dcqcn else 1.0)
        episodes = int(paused_us / PAUSE_EPISODE_US) + 1
        p = path.sender_prio
        s_eth[f"rx_prio{p}_pause"] += episodes * FRAMES_PER_EPISODE
        s_eth[f"rx_prio{p}_pause_duration"] += int(paused_us)
        s_eth[f"rx_prio{p}_pause_transition"] += episodes
        return
    # The switch tail-drops at the receiver's egress queue: the receiver NIC sees gaps, not discards.
    drops = int(packets * over * DROP_SHARE) + 1
    r_hw["out_of_sequence"] = r_hw.get("out_of_sequence", 0) + drops
    s_hw["packet_seq_err"] = s_hw.get("packet_seq_err", 0) + drops
    s_hw["local_ack_timeout_err"] = s_hw.get("local_ack_timeout_err", 0) + drops // 100 + 1


def _storm(flow: Flow, sp: SwitchPort, seconds: float) -> None:
    """The storming receiver sends pauses all the time (each sender's flow counts its share); its senders are paused
    for the whole run, or, with a watchdog on the receiver's leaf port, until the watchdog acts: then what they send
    is dropped at that port and RC resends until it gives up."""
    r_prio, _ = sim.qos_of(flow.receiver, flow.tclass)
    s_prio, _ = sim.qos_of(flow.sender, flow.tclass)
    share_us = seconds * 1e6 / max(1, flow.peak)
    r_eth, s_eth = _eth(flow.receiver), _eth(flow.sender)
    r_eth[f"tx_prio{r_prio}_pause"] += int(share_us / PAUSE_QUANTA_US)
    r_eth[f"tx_prio{r_prio}_pause_duration"] += int(share_us)
    paused_s = min(seconds, WATCHDOG_DETECT_S) if sp.pfc_watchdog else seconds
    if _path_lossless(flow.sender, flow.receiver, flow.tclass):
        s_eth[f"rx_prio{s_prio}_pause"] += int(paused_s * 1e6 / PAUSE_QUANTA_US)
        s_eth[f"rx_prio{s_prio}_pause_duration"] += int(paused_s * 1e6)
        s_eth[f"rx_prio{s_prio}_pause_transition"] += 1
    if sp.pfc_watchdog:
        s_hw = _hw(flow.sender)
        resent = int((seconds - paused_s) * 1e3) + 1  # a timeout and a resend every millisecond or so
        s_hw["packet_seq_err"] = s_hw.get("packet_seq_err", 0) + resent
        s_hw["local_ack_timeout_err"] = s_hw.get("local_ack_timeout_err", 0) + resent


def _eth(end: sim.End) -> Counter[str]:
    from wizard.lab.perftest_counters import counters

    nd = end.host.profile.ports[end.dev.port_indices[0]].netdev
    return counters(end.host).setdefault(nd, Counter())


def _hw(end: sim.End) -> dict[str, int]:
    hw = end.host.rdma_cfg.setdefault(end.dev.name, {}).setdefault("counters", {})
    assert isinstance(hw, dict)
    return hw  # type: ignore[return-value]
