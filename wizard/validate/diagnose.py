"""Verdicts with causes: a failed or slow rail is explained from perftest's errors, the facts and the counters."""

from __future__ import annotations

from wizard.validate.counters import CABLE
from wizard.validate.hostfacts import HostFacts
from wizard.validate.model import PASS_RATIO, CounterDelta, RailEnd, RailResult

FIX_LINK = "reseat/replace the cable or transceiver of {where} and its peer; `ethtool {nd}` must say Link detected: yes"
FIX_CABLE = (
    "trace the cable from {where}: it lands on another rail's port; swap it back (stage network's cabling check maps "
    "which peer port answers each port)"
)
FIX_PFC = (
    "run stage roce on {host} (mlnx_qos -i {nd} --trust dscp --pfc with priority {prio}); stop lldpad if it resets PFC"
)
FIX_MTU = "set MTU {want} on {where} and its peer (stage network); RoCE then runs at active_mtu 4096"
FIX_WIRE = (
    "reseat or replace the cable and transceivers of {where} (and its leaf port); `ethtool -S {nd}` symbol and CRC "
    "error counters must stop rising under traffic"
)
FIX_PATH_DROPS = (
    "check PFC on priority {prio} on the leaf ports (roce-wizard switch files) and the pause counters of both ends; "
    "the hosts' side is set"
)


def _port(facts: dict[str, HostFacts], end: RailEnd):  # type: ignore[no-untyped-def]
    h = facts.get(end.host)
    return h.discovery.port_by_netdev(end.netdev) if h else None


def _where(end: RailEnd) -> str:
    return f"{end.host} {end.netdev} ({end.device})"


def explain(
    rail: RailResult, facts: dict[str, HostFacts], counters: list[CounterDelta], priority: int, want_mtu: int
) -> tuple[str, str] | None:
    """(cause, fix) for a rail that failed or ran slow; None when nothing is wrong."""
    text = " ".join(rail.errors)
    ends = (rail.client, rail.server)
    down = [e for e in ends if (p := _port(facts, e)) is not None and (p.rdma_state or "").upper() != "ACTIVE"]
    if "state is Down" in text or (rail.gbps is None and down):
        end = down[0] if down else rail.client
        return (f"{_where(end)}: link down (RDMA port DOWN)", FIX_LINK.format(where=_where(end), nd=end.netdev))
    if "Did not detect devices" in text or "not found" in text:
        return ("RDMA device missing (driver not loaded or renamed)", "run stage ofed; check `rdma link` on both hosts")
    if rail.gbps is None and "did not finish within" in text and "remote address" in rail.output:
        # perftest prints "remote address" once the TCP exchange of queue pairs worked: the rail address was reached,
        # so the cable is where it should be; it is the RDMA traffic after it that never completed.
        return (
            f"{rail.label}: the two ends exchanged queue pairs over TCP, then no RDMA result came within the time "
            "limit: the RDMA path stalls (a port stuck in pause, a PFC storm, an ACL dropping RoCE) or the hosts "
            "were too loaded to run the test",
            f"read both ports' pause and discard counters (ethtool -S {rail.client.netdev} on {rail.client.host}, "
            f"{rail.server.netdev} on {rail.server.host}) and test the pair again (`bwtest --suspects`)",
        )
    lost = [e for e in rail.errors if "connection lost" in e or "still running after" in e]
    if rail.gbps is None and lost and "Couldn't connect" not in text:
        # The controller's own SSH session to a host went, or the command outlived the executor's limit
        # (wizard/executors/ssh.py): nothing was measured, so no cable or port may be blamed for it. Seen on a
        # 1,024-host run where one dropped connection was reported as eight cross-wired cables.
        host = lost[0].split(":", 1)[0]
        return (
            f"{rail.label}: no result: {lost[0]}; the fabric between them was not measured",
            f"check the SSH connection to {host} (the host log says when it went) and test the pair again "
            "(`bwtest --suspects`)",
        )
    if "Couldn't connect" in text or (rail.gbps is None and rail.errors):
        if _same_subnet(rail.client, rail.server):
            return (
                f"{_where(rail.client)} cannot reach {rail.server.host}'s rail address {rail.server.ipv4} "
                "although both links are up: the cable is cross-wired to another rail",
                FIX_CABLE.format(where=_where(rail.client)),
            )
        return (f"{rail.client.host} and {rail.server.host} rail {rail.rail} addresses are not in one subnet",
                "run stage network so rail i of every host shares one subnet")  # fmt: skip
    if rail.gbps is None or rail.ratio is None or rail.ratio >= PASS_RATIO:
        return None
    narrow = [(e, p) for e in ends if (p := _port(facts, e)) is not None and p.ib and p.ib.width and p.ib.width < 4]
    if narrow:  # an IB port that trained below 4X carries a fraction of its rate whatever else is right
        end, p = narrow[0]
        peer = f" (switch side: {p.ib.switch} port {p.ib.switch_port})" if p.ib.switch else ""
        return (
            f"{_where(end)} trained at {p.ib.rate_text}: {p.ib.width} of 4 lanes{peer}",
            f"a lane, the cable or a transceiver of {_where(end)} is bad: reseat or replace it at both ends; "
            "iblinkinfo shows the width after each attempt",
        )
    mine = [c for c in counters if any(c.netdev == e.netdev and c.host == e.host for e in ends)]
    lossy = [c for c in mine if c.status == "fail"]
    bad_qos = [e for e in ends if _qos_wrong(facts, e, priority)]
    wire = [c for c in mine if any(c.deltas.get(k) for k in CABLE)]
    if wire and not bad_qos:
        # Corrupted frames are dropped by the receiving MAC and resent by the QP: retransmits that PFC cannot
        # prevent, so a right QoS setup must not be blamed for them (mlx5 PHY counters, wizard/validate/counters.py).
        c = wire[0]
        end = next(e for e in ends if e.host == c.host and e.netdev == c.netdev)
        errors = ", ".join(f"{k} +{c.deltas[k]:,}" for k in CABLE if c.deltas.get(k))
        resent = f"; resent: {'; '.join(f'{x.host} {x.netdev}: {x.note}' for x in lossy)}" if lossy else ""
        return (
            f"{_where(end)}: errors on the wire during the run ({errors}): a bad cable or transceiver{resent}",
            FIX_WIRE.format(where=_where(end), nd=end.netdev),
        )
    if lossy and not bad_qos and all(_qos_known(facts, e) for e in ends):
        seen = "; ".join(f"{c.host} {c.netdev}: {c.note}" for c in lossy)
        return (
            f"{rail.label}: packets dropped or resent ({seen}) although both ends trust DSCP with PFC on priority "
            f"{priority}: the drop is on the path between them",
            FIX_PATH_DROPS.format(prio=priority),
        )
    if lossy or bad_qos:
        seen = "; ".join(f"{c.host} {c.netdev}: {c.note}" for c in lossy) or "lossy rate"
        end = bad_qos[0] if bad_qos else next(e for e in ends if e.host == lossy[0].host)
        port = facts[end.host].roce.port(end.netdev) if facts.get(end.host) and facts[end.host].roce else None
        qos = f"trust {port.trust}, PFC {''.join(map(str, port.pfc or []))}" if port else "QoS unknown"
        return (
            f"{_where(end)} is not lossless on priority {priority} ({qos}): pause frames are not honoured, "
            f"drops force retransmits ({seen})",
            FIX_PFC.format(host=end.host, nd=end.netdev, prio=priority),
        )
    small = [e for e in ends if (p := _port(facts, e)) is not None and (p.mtu or 0) < want_mtu]
    if small or (rail.mtu or 4096) < 4096:
        end = small[0] if small else rail.client
        p = _port(facts, end)
        return (
            f"{_where(end)}: MTU {p.mtu if p else '?'} gives RoCE path MTU {rail.mtu}: more headers per byte",
            FIX_MTU.format(want=want_mtu, where=_where(end)),
        )
    return (
        f"{rail.label}: {rail.gbps:.1f} of {rail.expected_gbps:.0f} Gb/s with clean counters",
        "check PCIe link width/speed (lspci -vv LnkSta), NUMA placement (taskset to the NIC's node), firmware",
    )


def _same_subnet(a: RailEnd, b: RailEnd) -> bool:
    return a.network is not None and a.network == b.network


def _qos_known(facts: dict[str, HostFacts], end: RailEnd) -> bool:
    h = facts.get(end.host)
    port = h.roce.port(end.netdev) if h and h.roce else None
    return port is not None and port.pfc is not None


def _qos_wrong(facts: dict[str, HostFacts], end: RailEnd, priority: int) -> bool:
    h = facts.get(end.host)
    port = h.roce.port(end.netdev) if h and h.roce else None
    if port is None or port.pfc is None:
        return False
    return port.trust != "dscp" or port.pfc != [1 if i == priority else 0 for i in range(8)]
