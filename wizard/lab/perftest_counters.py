"""Port counters moved by simulated perftest traffic: ethtool -S per-priority bytes, pause frames and discards,
and the RDMA hw_counters of retransmissions; wraps the lab's ethtool so ``-S`` shows them."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import TYPE_CHECKING

from wizard.lab import degraded
from wizard.lab import perftest_sim as sim
from wizard.lab.commands import REGISTRY, command
from wizard.lab.congestion import sender_paused_by_switch
from wizard.lab.streams import BufferSink, Ctx

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

_plain_ethtool = REGISTRY["ethtool"]


def counters(host: SimHost) -> dict[str, Counter[str]]:
    """Per-netdev ethtool -S increments caused by simulated perftest traffic."""
    return host.__dict__.setdefault("_perftest_counters", {})


def count(client: sim.End, server: sim.End, link: sim.Link, nbytes: float, size: int, tclass: int = 0) -> None:
    """Move the ports' counters: bytes on the test's priority, pause frames when lossless, discards when not."""
    packets = int(nbytes / max(1, min(size, link.mtu))) + 1
    if client.ib and server.ib:
        # RDMA on InfiniBand never shows in the IPoIB netdev's ethtool -S: only the IB port counters move
        # (port_xmit_data / port_rcv_data count 4-byte words, IBTA PortCounters)
        for end, name in ((client, "port_xmit_data"), (server, "port_rcv_data")):
            hw = end.host.rdma_cfg.setdefault(end.dev.name, {}).setdefault("counters", {})
            hw[name] = int(hw.get(name, 0)) + int(nbytes) // 4
        return
    for end, direction in ((client, "tx"), (server, "rx")):
        nd = end.host.profile.ports[end.dev.port_indices[0]].netdev
        prio = link.priority[end.host.name]
        c = counters(end.host).setdefault(nd, Counter())
        c[f"{direction}_prio{prio}_bytes"] += int(nbytes)
        c[f"{direction}_prio{prio}_packets"] += packets
        c[f"{direction}_bytes_phy"] += int(nbytes)
        c[f"{direction}_packets_phy"] += packets
        c[f"{direction}_vport_rdma_unicast_bytes"] += int(nbytes)
        c[f"{direction}_vport_rdma_unicast_packets"] += packets
        hw = end.host.rdma_cfg.setdefault(end.dev.name, {}).setdefault("counters", {})
        assert isinstance(hw, dict)
        if direction == "rx" and not link.all_lossless:  # the responder sees the gaps the drops leave
            hw["out_of_sequence"] = int(hw.get("out_of_sequence", 0)) + packets // 300
        elif not link.all_lossless:  # the requester gets NAKs and times out, then resends (go-back-N)
            hw["packet_seq_err"] = int(hw.get("packet_seq_err", 0)) + packets // 300
            hw["local_ack_timeout_err"] = int(hw.get("local_ack_timeout_err", 0)) + packets // 30000
        if direction == "rx":
            if link.all_lossless:
                c[f"tx_prio{prio}_pause"] += packets // 2000  # the receiver paces the sender at line rate
            else:
                c[f"rx_prio{prio}_discards"] += packets // 300  # buffer overruns without PFC
                c["rx_discards_phy"] += packets // 300
        elif link.all_lossless and sender_paused_by_switch(client, server, tclass):
            # through switches the pauses reach the sender only where both leaf ports run PFC on the priority
            c[f"rx_prio{prio}_pause"] += packets // 2000
    _cable_losses(client, server, packets)


def _cable_losses(client: sim.End, server: sim.End, packets: int) -> None:
    """Data frames a bad cable (fault ``degraded`` without a rate) corrupts on the way: the server's PHY counts what
    its own cable spoils (wizard/lab/degraded.py), the client's cable spoils them before its leaf (which counts them);
    either way the responder sees PSN gaps and the requester NAKs and resends (go-back-N)."""
    c_port, s_port = client.dev.port_indices[0], server.dev.port_indices[0]
    lost = degraded.count_received(server.host, s_port, packets)
    if degraded.bad_cable(client.host, c_port):
        lost += packets // degraded.CRC_EVERY + 1
    if not lost:
        return
    for end, name in ((server, "out_of_sequence"), (client, "packet_seq_err")):
        hw = end.host.rdma_cfg.setdefault(end.dev.name, {}).setdefault("counters", {})
        assert isinstance(hw, dict)
        hw[name] = int(hw.get(name, 0)) + lost


@command("ethtool")
async def ethtool(ctx: Ctx) -> int:
    """The lab's ethtool, with ``-S`` counters moved by simulated perftest traffic."""
    if len(ctx.args) != 2 or ctx.args[0] not in ("-S", "--statistics"):
        return await _plain_ethtool(ctx)
    out = BufferSink()
    status = await _plain_ethtool(dataclasses.replace(ctx, out=out))
    extra = counters(ctx.host).get(ctx.args[1], Counter())
    for line in out.getvalue().splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() in extra and value.strip().isdigit():
            line = f"{name}: {int(value) + extra[name.strip()]}"
        ctx.print(line)
    return status
