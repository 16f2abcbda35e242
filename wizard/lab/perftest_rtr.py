"""Whether perftest's QPs can move to RTR: each side resolves the other's GID over its own GID's port.

Without rdma_cm, perftest exchanges GIDs over its TCP socket and then each side calls ibv_modify_qp(RTR) with the
peer's GID as destination (perftest_resources.c ctx_connect -> ctx_modify_qp_to_rtr). For RoCE the kernel resolves
that GID's address with a route lookup from the local GID's address bound to the GID's netdev and an ARP for the
next hop (drivers/infiniband/core/addr.c, rdma_addr_find_l2_eth_by_grh with a 1000 ms timeout; see
wizard/lab/l3path.py). When that fails, modify_qp fails and perftest prints "Failed to modify QP <qpn> to RTR"
and " Unable to Connect the HCA's through the link" (write_bw.c and the other tests); the other side, waiting in
its next handshake, sees the socket close: " Failed to exchange data between server and clients".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.lab import l3path

if TYPE_CHECKING:
    from wizard.lab.perftest_sim import End

RESOLVE_TIMEOUT_S = 1.0  # rdma_addr_find_l2_eth_by_grh gives ARP 1000 ms
RTR_FAILED = "Failed to modify QP {qpn} to RTR\n Unable to Connect the HCA's through the link"
PEER_GONE = " Failed to exchange data between server and clients"


def failing_side(client: End, server: End) -> tuple[str, str] | None:
    """("client" | "server", why) for the first side whose QP cannot reach the other's GID; None when both can.

    Only the modelled leaf/spine fabric routes; on back-to-back cables and ideal rail switches the lab keeps its
    earlier behaviour (the TCP connection already proves the path).
    """
    lab = client.host.lab
    if lab is None or lab.fabric.switches is None or not client.ipv4 or not server.ipv4:
        return None
    why = l3path.roce_failure(client.host, client.netdev, client.ipv4, server.host, server.netdev, server.ipv4)
    if why:
        return "client", why
    why = l3path.roce_failure(server.host, server.netdev, server.ipv4, client.host, client.netdev, client.ipv4)
    if why:
        return "server", why
    return None


def qp_number(seed: int) -> int:
    """The QPN perftest_sim.address prints for this seed, in decimal as the RTR error prints it."""
    return 0x100 + seed % 0x700
