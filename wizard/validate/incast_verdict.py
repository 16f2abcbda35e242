"""The verdict of one incast round: lossless (pauses, no drops), ECN signalled (CNPs), else the most likely cause.

What the counters mean (mlx5, kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst and
the RDMA hw_counters): ``rx_prio<P>_pause`` are PFC pause frames the port received for priority P; mlx5e lists the
per-priority pause counters only for priorities with PFC enabled on the NIC, so a missing counter means the host
itself does not run PFC on P. ``out_of_sequence`` (responder) and ``packet_seq_err`` / ``local_ack_timeout_err``
(requester) are RC go-back-N after a lost packet; ``np_ecn_marked_roce_packets`` counts CE-marked packets that
arrived, ``np_cnp_sent`` the CNPs the receiver sent, ``rp_cnp_handled`` those a sender's DCQCN acted on.
"""

from __future__ import annotations

from wizard.validate.hostfacts import HostFacts
from wizard.validate.model import IncastFlow, IncastRound

RETRANSMITS = ("rdma_packet_seq_err", "rdma_local_ack_timeout_err")
SWITCH_CONFIG = "roce-wizard switch-config --vendor cumulus|sonic|eos writes it; load it into the switch"


def switch_port(facts: HostFacts, rail: int) -> str | None:
    """ "leaf-r2 swp5": the LLDP neighbour of the host's rail port (None when LLDP saw none)."""
    rails = facts.rails()
    n = rails[rail].lldp if rail < len(rails) else None
    if n is None:
        return None
    return f"{n.chassis_name or n.chassis_id or '?'} {n.port_id or '?'}"


def _lldp_pfc(facts: HostFacts | None, rail: int) -> list[int] | None:
    rails = facts.rails() if facts is not None else []
    n = rails[rail].lldp if rail < len(rails) else None
    return None if n is None else n.pfc_enabled


def _pfc_evidence(facts: HostFacts | None, rail: int, sw: str, prio: int) -> str:
    pfc = _lldp_pfc(facts, rail)
    if pfc is None:
        return " (no LLDP PFC TLV from the switch to confirm)"
    shown = ",".join(map(str, pfc)) or "none"
    if prio in pfc:
        return f" (although its LLDP PFC TLV shows priorities {shown}: check the switch's lossless buffer profile)"
    return f"; LLDP confirms: {sw} advertises PFC on priorities {shown}"


def _drops(moved: dict[str, int], prio: int) -> int:
    keys = (f"rx_prio{prio}_discards", "rx_discards_phy", "rdma_out_of_sequence", *RETRANSMITS)
    return sum(v for k, v in moved.items() if k in keys and v > 0)


def _where(host: str, netdev: str, sw: str | None) -> str:
    return f"{host} {netdev}" + (f" ({sw})" if sw else " (switch port unknown: no LLDP neighbour)")


def judge(
    x: IncastRound, facts: dict[str, HostFacts], now: dict[tuple[str, str], dict[str, int]], prio: int, *, ecn: bool
) -> None:
    """Fill pauses/drops/cnps, status, cause and fix of the round (``now``: counters after it, to see which ports
    list a per-priority pause counter at all)."""
    x.pauses = sum(f.deltas.get(f"rx_prio{prio}_pause", 0) for f in x.senders)
    x.drops = _drops(x.receiver_deltas, prio) + sum(_drops(f.deltas, prio) for f in x.senders)
    x.cnps = x.receiver_deltas.get("rdma_np_cnp_sent", 0)
    if _pause_storm(x, prio):
        return
    broken = [f for f in x.senders if f.gbps is None]
    if broken:
        f = broken[0]
        x.status = "fail"
        x.cause = (
            f"{_where(f.sender.host, f.sender.netdev, f.switch_port)} -> {x.receiver.host} "
            f"{x.receiver.netdev}: no incast result ({'; '.join(f.errors[:2]) or 'no output'})"
        )
        x.fix = "run bwtest without --incast first: the pair tests name the broken rail"
        return
    recv = _where(x.receiver.host, x.receiver.netdev, x.receiver_switch_port)
    if x.drops:
        _lossy(x, facts, now, prio, recv)
    elif len(x.senders) >= 2 and not x.pauses:
        x.status = "fail"
        x.cause = (
            f"{len(x.senders)}:1 into {recv} brought no PFC pause frames on priority {prio} and no drops: "
            "the switch buffered the burst, so lossless is not proven (switch ports without PFC?)"
        )
        x.fix = f"check PFC on priority {prio} on the leaf ports ({SWITCH_CONFIG}); rerun with longer --seconds"
    elif ecn and not x.cnps:
        _no_cnps(x, facts, prio, recv)
    else:
        x.status = "pass"


STORM_SHARE = 0.5  # a port that sent pauses for over half the round is storming (an incast pauses in bursts)


def _pause_storm(x: IncastRound, prio: int) -> bool:
    """The receiver sent pause frames for most of the round: its receive path is stuck (a pause storm). Whether its
    senders were paused all along tells whether a PFC watchdog on its switch port cut the storm off."""
    window_us = (x.seconds or 0) * 1e6
    sent_us = x.receiver_deltas.get(f"tx_prio{prio}_pause_duration", 0)
    if not window_us or sent_us < STORM_SHARE * window_us:
        return False
    host, nd, sw = x.receiver.host, x.receiver.netdev, x.receiver_switch_port
    recv = _where(host, nd, sw)
    held = {f"{f.sender.host} {f.sender.netdev}": f.deltas.get(f"rx_prio{prio}_pause_duration", 0) for f in x.senders}
    stalled = [name for name, us in held.items() if us >= STORM_SHARE * window_us]
    storm = (
        f"{recv} is in a PFC pause storm: it sent pause frames on priority {prio} for "
        f"{min(100, round(100 * sent_us / window_us))}% of the {x.seconds:g} s round (its receive path is stuck)"
    )
    x.status = "fail"
    if stalled:
        x.cause = (
            f"{storm}, and its switch port {sw or '?'} has no PFC watchdog: the pauses reached every sender and held "
            f"{', '.join(stalled)} for the whole round, with everything else they send on priority {prio}"
        )
        x.fix = (
            f"enable the PFC watchdog on {sw or 'the leaf port'} (answers switches.pfc_watchdog; {SWITCH_CONFIG}); "
            f"then take {host} out of service and reset its NIC ({nd})"
        )
    else:
        longest = max(held.values(), default=0) / 1000
        x.cause = (
            f"{storm}; the PFC watchdog on {sw or 'its switch port'} stopped it: the senders were paused at most "
            f"{longest:.0f} ms, then what they sent to {host} was dropped, so the rest of the rail keeps working"
        )
        x.fix = f"take {host} out of service and reset its NIC ({nd}); the watchdog keeps the rail running meanwhile"
    return True


def _lossy(
    x: IncastRound, facts: dict[str, HostFacts], now: dict[tuple[str, str], dict[str, int]], prio: int, recv: str
) -> None:
    x.status = "fail"
    unpaused = [f for f in x.senders if _drops(f.deltas, prio) and not f.deltas.get(f"rx_prio{prio}_pause")]
    if unpaused and x.sender_rail is not None and _leaf_ports_lossless(x, facts, prio):
        sender_leaf = (unpaused[0].switch_port or "?").split(" ")[0]
        recv_leaf = (x.receiver_switch_port or "?").split(" ")[0]
        x.cause = (
            f"senders on rail {x.sender_rail} into {recv} (rail {x.rail}) retransmitted and got no PFC pause frames "
            f"on priority {prio}, while both leaf ports advertise PFC on it: the path between {sender_leaf} and "
            f"{recv_leaf} (their uplinks and the spine) does not run PFC on priority {prio}"
        )
        x.fix = (
            f"give the uplinks of {sender_leaf} and {recv_leaf} and the spine's ports the same lossless QoS (list them "
            f"in the answers' switches.fabric; {SWITCH_CONFIG})"
        )
        return
    if unpaused and len(unpaused) == len(x.senders) and len(x.senders) >= 2:
        sw = x.receiver_switch_port
        evidence = _pfc_evidence(facts.get(x.receiver.host), x.rail, sw, prio) if sw else ""
        x.cause = (
            f"every sender into {recv} retransmitted and none got PFC pause frames on priority {prio}: the "
            f"receiver's switch port {sw or '?'} does not run PFC on priority {prio}{evidence}"
        )
        x.fix = f"enable PFC (no-drop) on priority {prio} on {sw or 'the receiver leaf port'} ({SWITCH_CONFIG})"
        return
    if unpaused:
        causes, ports = [], []
        for f in unpaused:
            causes.append(_sender_cause(f, facts, now, prio, x.rail))
            ports.append(f.switch_port or f"{f.sender.host} {f.sender.netdev}")
        x.cause = "; ".join(causes)
        x.fix = (
            f"enable PFC (no-drop) on priority {prio} on {', '.join(ports)} ({SWITCH_CONFIG}); a host without "
            "the counter needs stage roce (mlnx_qos --pfc)"
        )
        return
    x.cause = (
        f"drops on the lossless priority {prio} in a {len(x.senders)}:1 incast into {recv} although the "
        "senders were paused: the receiver NIC ran out of buffer (rx discards) or a link drops packets"
    )
    x.fix = "check the receiver's ethtool -S discards and its PFC buffer (mlnx_qos --buffer_size), then the cable"


def _leaf_ports_lossless(x: IncastRound, facts: dict[str, HostFacts], prio: int) -> bool:
    """Whether LLDP shows PFC on the priority at the receiver's and every sender's leaf port (so the loss is in
    between: uplinks or spine)."""
    ends = [(x.receiver.host, x.rail)] + [(f.sender.host, x.sender_rail or x.rail) for f in x.senders]
    return all(prio in (_lldp_pfc(facts.get(h), rail) or []) for h, rail in ends)


def _sender_cause(
    f: IncastFlow, facts: dict[str, HostFacts], now: dict[tuple[str, str], dict[str, int]], prio: int, rail: int
) -> str:
    where = _where(f.sender.host, f.sender.netdev, f.switch_port)
    resent = " and ".join(k.removeprefix("rdma_") for k in RETRANSMITS if f.deltas.get(k)) or "drops"
    head = f"{where} got no PFC pause frames on priority {prio} and retransmitted ({resent} rose)"
    if f"rx_prio{prio}_pause" not in now.get((f.sender.host, f.sender.netdev), {f"rx_prio{prio}_pause": 0}):
        return f"{head}: the host does not run PFC on priority {prio} (ethtool -S lists no rx_prio{prio}_pause)"
    sw = f.switch_port
    if sw is None:
        return f"{head}: its switch port does not run PFC on priority {prio} (LLDP found no neighbour to name it)"
    return f"{head}: its switch port {sw} does not run PFC on priority {prio}" + _pfc_evidence(
        facts.get(f.sender.host), rail, sw, prio
    )


def _no_cnps(x: IncastRound, facts: dict[str, HostFacts], prio: int, recv: str) -> None:
    x.status = "fail"
    marked = x.receiver_deltas.get("rdma_np_ecn_marked_roce_packets", 0)
    host, nd = x.receiver.host, x.receiver.netdev
    if marked:
        x.cause = (
            f"{recv} received {marked} ECN-marked packets but sent no CNPs: ECN notification is off on the "
            f"receiver for priority {prio}"
        )
        x.fix = f"echo 1 | sudo tee /sys/class/net/{nd}/ecn/roce_np/enable/{prio} on {host} (stage roce sets it)"
        return
    sw = x.receiver_switch_port
    x.cause = (
        f"{len(x.senders)}:1 into {recv}: no ECN-marked packets and no CNPs although roce.ecn is on: the "
        f"receiver's switch port {sw or '?'} does not mark ECN on priority {prio}"
    )
    x.fix = (
        f"enable ECN marking (WRED/ECN on the RoCE traffic class) on {sw or 'the receiver leaf port'} ({SWITCH_CONFIG})"
    )


def explained_ports(rounds: list[IncastRound]) -> str:
    """The "host netdev" of every port in a failing round: their counter deltas are the round's, already explained."""
    return " ".join(
        f"{e.host} {e.netdev}"
        for x in rounds
        if x.status == "fail"
        for e in [x.receiver, *(f.sender for f in x.senders)]
    )
