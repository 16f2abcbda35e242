"""Consistency lint before any traffic: MTU, link, trust, PFC, DSCP map, RDMA-CM ToS, GID index, HCAs, firmware."""

from __future__ import annotations

from collections import defaultdict

from steps.discovery.facts import NicPort
from wizard.answers.model import Answers
from wizard.validate.hostfacts import HostFacts
from wizard.validate.model import CheckResult


def _item(id_: str, title: str, bad: list[str], good: str, fix: str, *, warn: bool = False) -> CheckResult:
    status = ("warn" if warn else "fail") if bad else "pass"
    return CheckResult(id=id_, title=title, status=status, evidence="; ".join(bad) or good, fix=fix if bad else None)


def lint(answers: Answers, hosts: dict[str, HostFacts]) -> list[CheckResult]:
    """Compare every rail port of every host against the answers and against each other."""
    want_mtu, prio, dscp, tos = answers.network.mtu, answers.roce.priority, answers.roce.dscp, answers.roce.tos
    items = [_reachable(hosts)]
    live = {n: h for n, h in hosts.items() if h.error is None}
    down, mtu, speed, trust, pfc, dmap, gids, v4 = ([] for _ in range(8))
    speeds: dict[str, set[int]] = defaultdict(set)  # per node group: V100 and A100 nodes differ by design
    ib_ports = roce_ports = 0
    for name, h in live.items():
        roce = h.roce
        group = answers.fabric.group_name(name)
        for p in h.rails():
            where = f"{name} {p.netdev} ({p.rdma_device})"
            if (p.rdma_state or "").upper() != "ACTIVE":
                link = "up" if p.link_detected else "down"
                down.append(f"{where}: RDMA port {p.rdma_state or 'unknown'}, link {link}")
            if p.mtu != want_mtu:
                mtu.append(f"{where}: MTU {p.mtu}, want {want_mtu}")
            if _speed(p) > 0:
                speeds[group].add(_speed(p))
            if p.ib is not None:  # InfiniBand: no GID index, no DSCP/PFC (credit flow control), LIDs instead
                ib_ports += 1
                continue
            roce_ports += 1
            gid = p.roce_v2_ipv4_gid
            if gid is None:
                v4.append(f"{where}: no RoCE v2 IPv4 GID (no IPv4 address on the port)")
            gids.append((name, p.netdev, gid))
            rp = roce.port(p.netdev or "") if roce else None
            if rp is None:
                trust.append(f"{where}: QoS not readable" + (f" ({roce.qos_tool})" if roce else ""))
                continue
            if rp.trust != "dscp":
                trust.append(f"{where}: trust {rp.trust}")
            want = [1 if i == prio else 0 for i in range(8)]
            if rp.pfc != want:
                pfc.append(f"{where}: PFC {''.join(map(str, rp.pfc or []))} want {''.join(map(str, want))}")
            if rp.dscp2prio and rp.dscp2prio.get(dscp) != prio:
                dmap.append(f"{where}: DSCP {dscp} -> priority {rp.dscp2prio.get(dscp)}, want {prio}")
    for name, h in live.items():
        expect = answers.expect_speed_gbps(name)
        for p in h.rails():
            if _speed(p) <= 0:
                continue  # a port without link is the link item's business
            trained = f" ({p.ib.width}X {p.ib.speed})" if p.ib and p.ib.width else ""
            if expect:
                if _speed(p) != expect * 1000:
                    speed.append(f"{name} {p.netdev}: {_speed(p)} Mb/s{trained}, expected {expect} Gb/s")
            elif len(speeds[answers.fabric.group_name(name)]) > 1:
                speed.append(f"{name} {p.netdev}: {_speed(p)} Mb/s{trained}")
    # A port that negotiated below the answers' speed would pass a rate check against its own (lower) speed.
    slow_link = any("expected" in x for x in speed)
    all_speeds = sorted(set().union(*speeds.values())) if speeds else []
    items += [
        _item("link", "every rail port ACTIVE", down, "all rail ports ACTIVE / LINK_UP",
              "reseat or replace the cable/transceiver of the DOWN port and its peer; `ethtool PORT` shows the link"),
        _item("mtu", f"MTU {want_mtu} on every rail port", mtu, f"all rail ports at MTU {want_mtu}",
              "run stage network (or set the MTU in netplan) so both ends match; RoCE picks active_mtu from it"),
        _item("speed", "same link speed on every rail", speed, f"all at {all_speeds} Mb/s (per node group)",
              "check the cable/transceiver and `ethtool -s` autonegotiation on the slower port (InfiniBand: a port "
              "below 4X has a bad lane; iblinkinfo names its switch port)", warn=not slow_link),
        _item("trust", "DSCP trust on every port", trust, "trust dscp everywhere",
              "run stage roce: mlnx_qos -i PORT --trust dscp"),
        _item("pfc", f"PFC on priority {prio} only", pfc, f"PFC 0001 0000 pattern on priority {prio} everywhere",
              f"run stage roce: mlnx_qos -i PORT --pfc with priority {prio}; stop lldpad if it resets PFC"),
        _item("dscp", f"DSCP {dscp} (ToS {tos}) maps to priority {prio}", dmap, f"DSCP {dscp} -> priority {prio}",
              "run stage roce: restore the default dscp2prio map (mlnx_qos --dscp2prio)"),
        _item("gid", "RoCE v2 IPv4 GID on every rail port", v4, _gid_summary(gids),
              "give the port its rail IPv4 address (stage network); the GID appears with it"),
        _cm(live, tos),
        _same(live, "hca", "same RDMA device names on every host",
              lambda h: ",".join(p.rdma_device or "?" for p in h.rails()),
              "install the same OFED stack everywhere so device names (mlx5_N vs rocepXsYfZ) match NCCL_IB_HCA"),
        _firmware(live),
        _same(live, "ofed", "same OFED stack and version on every host",
              lambda h: f"{h.discovery.ofed_stack} {h.discovery.ofed_version}",
              "install the same DOCA-OFED release on all hosts (stage ofed)"),
    ]  # fmt: skip
    if ib_ports and not roce_ports:
        ib_skip = "InfiniBand rails: lossless by credit flow control and addressed by LID; no DSCP, PFC or GID index"
        items = [i.model_copy(update={"status": "skip", "evidence": ib_skip}) if i.id in _ROCE_ONLY else i
                 for i in items]  # fmt: skip
    return items


_ROCE_ONLY = ("trust", "pfc", "dscp", "gid", "tos")


def _speed(p: NicPort) -> int:
    """Mb/s of a rail port: an IB port's trained rate from sysfs (width x lane speed), else ethtool's speed."""
    if p.ib is not None and p.ib.rate_gbps:
        return int(p.ib.rate_gbps * 1000)
    return p.speed_mbps if p.speed_mbps and p.speed_mbps > 0 else 0


def _reachable(hosts: dict[str, HostFacts]) -> CheckResult:
    bad = [h.error if h.error.startswith(f"{n}:") else f"{n}: {h.error}" for n, h in hosts.items() if h.error]
    return _item("hosts", "every host answers", bad, f"{len(hosts)} hosts probed",
                 "check SSH to the host (address, key, sudo) and re-run")  # fmt: skip


def _gid_summary(gids: list[tuple[str, str | None, int | None]]) -> str:
    by_index: dict[int | None, list[str]] = defaultdict(list)
    for host, netdev, index in gids:
        by_index[index].append(f"{host}:{netdev}")
    return "; ".join(f"index {i} on {len(v)} ports" for i, v in by_index.items())


def _cm(live: dict[str, HostFacts], tos: int) -> CheckResult:
    bad = []
    for name, h in live.items():
        for cm in h.roce.rdma_cm if h.roce else []:
            if cm.tos is not None and cm.tos != tos:
                bad.append(f"{name} {cm.device}: RDMA-CM ToS {cm.tos}, want {tos}")
    return _item("tos", f"RDMA-CM default ToS {tos}", bad, f"ToS {tos} where set",
                 "run stage roce (cma_roce_tos -d DEV -t TOS)", warn=True)  # fmt: skip


def _same(live: dict[str, HostFacts], id_: str, title: str, key, fix: str) -> CheckResult:  # type: ignore[no-untyped-def]
    values = {n: key(h) for n, h in live.items()}
    bad = [f"{n}: {v}" for n, v in values.items()] if len(set(values.values())) > 1 else []
    good = next(iter(values.values()), "")
    return _item(id_, title, bad, good, fix, warn=True)


def _firmware(live: dict[str, HostFacts]) -> CheckResult:
    """One firmware version per adapter model across every port of every host."""
    seen: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, h in live.items():
        for p in h.rails():
            seen[p.model][p.firmware or "?"].append(f"{name} {p.netdev}")
    bad = [f"{model} fw {fw} on {', '.join(ports)}" for model, fws in seen.items() if len(fws) > 1
           for fw, ports in fws.items()]  # fmt: skip
    good = "; ".join(f"{model} fw {', '.join(fws)}" for model, fws in seen.items())
    fix = "update the adapter firmware (mlxfwmanager / stage ofed) to one version on all hosts"
    return _item("firmware", "same adapter firmware on every port", bad, good, fix, warn=True)
