"""What the network stage changes in the facts later stages plan from: rail addresses, MTU and RoCE v2 GIDs."""

from __future__ import annotations

from typing import Any

from steps.network.design import Design, expected_roce_mtu
from wizard.engine.predict import HostFacts, Prediction, ipv4_mapped_gid
from wizard.engine.step import ClusterView, HostPlan


def predict(view: ClusterView, host: str, plan: HostPlan, design: Design) -> Prediction | None:
    """Every rail port gets its address and MTU; each address adds a RoCE v1 and a RoCE v2 GID entry."""
    mtu = view.answers.network.mtu
    rails = [(e.netdev, e.ip, e.address, e.rdma_device) for e in design.endpoints if e.rdma and not e.lag]
    lags = [e.netdev for e in design.endpoints if e.lag]
    if lags:
        # The driver names a RoCE LAG device (mlx5_bond_<n>) when the bond forms; its name and GIDs are read, never
        # guessed, so the later stages' exported scripts stop until they are re-planned.
        values = [f"RoCE LAG {', '.join(lags)}: device names are read once the bonds exist (not predicted)"]
        guards = [
            "echo 'RoCE LAG device names are read once the bonds exist: run roce-wizard plan again after "
            "02-network.sh' >&2; exit 1"
        ]
        return Prediction("network", values, lambda facts: facts, guards)
    if not rails:
        return None
    disc = view.stage_facts(host, "discovery") or {}
    ports = {p.get("netdev"): p for p in disc.get("ports", [])}
    values, guards = [], []
    for netdev, ip, address, device in rails:
        index = _next_v2_index(ports.get(netdev, {}))
        values.append(
            f"{netdev} ({device}): {address}, MTU {mtu}, RoCE v2 IPv4 GID index {index} "
            "(the kernel adds a RoCE v1 then a v2 entry at the lowest free indices; re-read after stage network)"
        )
        if device:
            gid_file = f"/sys/class/infiniband/{device}/ports/1/gids/{index}"
            guards.append(
                f'[ "$(cat {gid_file} 2>/dev/null)" = "{ipv4_mapped_gid(ip)}" ] || {{ echo "predicted RoCE v2 GID '
                f'{index} of {device} ({ip}) is not there: re-run roce-wizard plan on this host first" >&2; exit 1; }}'
            )
    return Prediction("network", values, lambda facts: _after_apply(facts, rails, mtu), guards)


def _next_v2_index(port: dict[str, Any]) -> int:
    used = {g.get("index") for g in port.get("gids", [])}
    free = (i for i in range(256) if i not in used)
    next(free)  # the RoCE v1 entry of the new address
    return next(free)


def _after_apply(facts: HostFacts, rails: list[tuple[str, str, str, str | None]], mtu: int) -> HostFacts:
    disc = facts.get("discovery") or {}
    net = facts.get("network") or {}
    roce = facts.get("roce") or {}
    nccl = facts.get("nccl") or {}
    by_netdev = {p.get("netdev"): p for p in disc.get("ports", [])}
    for netdev, ip, address, _device in rails:
        port = by_netdev.get(netdev)
        v2_index = None
        if port is not None:
            v2_index = _next_v2_index(port)
            gid = ipv4_mapped_gid(ip)
            port["gids"] = [g for g in port.get("gids", []) if g.get("ipv4") != ip] + [
                {"index": v2_index - 1, "gid": gid, "ipv4": ip, "version": "v1"},
                {"index": v2_index, "gid": gid, "ipv4": ip, "version": "v2"},
            ]
            port.update(ipv4=[address], mtu=mtu)
        iface = (net.get("interfaces") or {}).get(netdev)
        if iface is not None:
            iface.update(ipv4=[address], mtu=mtu)
        for rdma in net.get("rdma", []):
            if rdma.get("netdev") == netdev:
                rdma.update(gids_v2_ipv4=[ip], active_mtu=expected_roce_mtu(mtu))
        for rport in roce.get("ports", []):
            if rport.get("netdev") == netdev:
                rport.update(gid_index=v2_index, mtu=mtu)
        if "mtus" in nccl:
            nccl["mtus"][netdev] = mtu
        for nport in nccl.get("rdma", []):
            if nport.get("netdev") == netdev and v2_index is not None:
                nport["roce_v2_ipv4_gids"] = [v2_index]
        live = ((facts.get("inference") or {}).get("rdma") or {}).get(netdev)
        if live is not None:
            live.update(ipv4_v2=[ip], cidrs=[address])
    return facts
