"""Cabling verdicts: link-local reachability maps ports to peer ports; swaps, dead links and MTU faults are placed."""

from __future__ import annotations

from typing import Any

from steps.network.cabling import probe_host, ring_peer
from steps.network.design import design
from steps.network.stage import Network
from tests.steps.facts_builder import answers, reference_host, view
from tests.steps.test_network import RAILS
from tests.steps.test_network_facts import link_local, live, mac_of
from wizard.executors.base import CommandResult

STEP = Network()
NETDEVS = ("ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1")


def cluster(hosts: tuple[str, ...] = ("server1", "server2"), *, body: str = RAILS, **live_kw: Any) -> Any:
    """Configured hosts (rail addresses, MTU 9000) as (answers, facts); ``live_kw`` maps host -> live() options."""
    ans = answers(body, hosts=hosts)
    facts: dict[str, Any] = {}
    for i, host in enumerate(hosts, 1):
        disc = reference_host(host, ssh_address=f"10.0.0.{10 + i}")
        addresses = {n: f"192.168.{11 + r}.{i}/24" for r, n in enumerate(NETDEVS)}
        facts[host] = {
            "discovery": disc,
            "network": live(disc, host_index=i, addresses=addresses, mtu=9000, **live_kw.get(host, {})),
        }
    return ans, facts


def wire(
    ans: Any,
    facts: dict[str, Any],
    cables: dict[tuple[str, str], list[tuple[str, str]]],
    jumbo_fail: set[tuple[str, str]] = frozenset(),
    probe_id: str = "p1",
) -> None:
    """Store cluster results: each (host, netdev) reached the listed (host, netdev) ports; jumbo as given."""
    order = [h.name for h in ans.hosts]
    index = {h: i for i, h in enumerate(order, 1)}
    for host in order:
        ports = {}
        for r, netdev in enumerate(NETDEVS):
            net = facts[host]["network"]
            if not net.interfaces[netdev].carrier:
                ports[netdev] = {"key": f"rail{r}", "skipped": "no carrier"}
                continue
            reached = [link_local(mac_of(index[host], r))] + [
                link_local(mac_of(index[h], NETDEVS.index(n))) for h, n in cables.get((host, netdev), [])
            ]
            peer = order[(order.index(host) + 1) % len(order)]
            ok = (host, netdev) not in jumbo_fail
            ports[netdev] = {
                "key": f"rail{r}",
                "link_local": {"replies": reached, "sent": 2, "received": 2, "exit": 0, "error": None},
                "jumbo": {
                    "peer": peer,
                    "peer_ip": f"192.168.{11 + r}.{index[peer]}",
                    "size": 8972,
                    "replies": [],
                    "sent": 2,
                    "received": 0 if not ok else 2,
                    "exit": 0 if ok else 1,
                    "error": None if ok else "ping: local error: message too long, mtu=1500",
                },
            }
        raw = facts[host]["network"].model_dump(mode="json")
        raw["cluster"] = {"probe_id": probe_id, "hosts": order, "ports": ports}
        facts[host]["network"] = raw


def straight(hosts: tuple[str, ...]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    return {(h, n): [(o, n) for o in hosts if o != h] for h in hosts for n in NETDEVS}


def results(ans: Any, facts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {h: {i.id: i for i in items} for h, items in STEP.cluster_checks(view(ans, facts)).items()}


def test_straight_cabling_passes_naming_the_peer_port() -> None:
    ans, facts = cluster()
    wire(ans, facts, straight(("server1", "server2")))
    out = results(ans, facts)
    item = out["server1"]["cabling:ens1f0np0"]
    assert item.status == "pass" and item.evidence == "ens1f0np0 reaches server2 ens1f0np0 (rail 0)"
    assert out["server2"]["jumbo:ens2f1np1"].status == "pass"
    assert all(i.status == "pass" for h in out.values() for i in h.values())


def test_the_segments_are_worked_out_once_for_all_hosts_not_once_per_host(monkeypatch: Any) -> None:
    from steps.network import wiring

    calls: list[int] = []
    real = wiring.segment_rails
    monkeypatch.setattr(wiring, "segment_rails", lambda c: calls.append(1) or real(c))
    hosts = ("server1", "server2", "server3", "server4")
    ans, facts = cluster(hosts)
    wire(ans, facts, straight(hosts))
    out = results(ans, facts)
    assert set(out) == set(hosts) and all(i.status == "pass" for h in out.values() for i in h.values())
    assert len(calls) == 1, "once per host made the check O(N^2): minutes at 1,024 hosts"


def test_swapped_cards_are_reported_as_cable_swaps_on_the_second_host() -> None:
    ans, facts = cluster()
    swap = {"ens1f0np0": "ens2f0np0", "ens2f0np0": "ens1f0np0", "ens1f1np1": "ens2f1np1", "ens2f1np1": "ens1f1np1"}
    cables = {("server1", n): [("server2", swap[n])] for n in NETDEVS}
    cables |= {("server2", swap[n]): [("server1", n)] for n in NETDEVS}
    wire(ans, facts, cables, jumbo_fail={(h, n) for h in ("server1", "server2") for n in NETDEVS})
    out = results(ans, facts)
    s2 = out["server2"]
    assert s2["cabling:ens1f0np0"].status == "fail"
    assert "server2 ens1f0np0 (rail 0) is cabled to rail 2: it reaches server1 ens2f0np0 (rail 2)" in (
        s2["cabling:ens1f0np0"].evidence
    )
    assert s2["cabling:ens1f0np0"].fix == "swap the cables of ens1f0np0 and ens2f0np0 on server2"
    assert s2["cabling:ens2f0np0"].fix == "swap the cables of ens1f0np0 and ens2f0np0 on server2"
    assert s2["cabling:ens2f1np1"].fix == "swap the cables of ens1f1np1 and ens2f1np1 on server2"
    assert s2["jumbo:ens1f0np0"].status == "skip"
    s1 = out["server1"]
    assert not [i for i in s1.values() if i.status == "fail"]
    assert s1["cabling:ens1f0np0"].status == "warn" and "reported there" in s1["cabling:ens1f0np0"].evidence


def test_on_a_switched_rail_the_odd_host_out_is_the_one_cross_wired() -> None:
    hosts = ("a", "b", "c")
    ans, facts = cluster(hosts)
    cables = straight(hosts)
    # host a (listed first) has its rail 0 and rail 1 cables in each other's leaf switch
    for n in ("ens1f0np0", "ens1f1np1"):
        other = "ens1f1np1" if n == "ens1f0np0" else "ens1f0np0"
        cables[("a", n)] = [("b", other), ("c", other)]
        for h in ("b", "c"):
            cables[(h, n)] = [x for x in cables[(h, n)] if x[0] != "a"] + [("a", other)]
    wire(ans, facts, cables)
    out = results(ans, facts)
    assert out["a"]["cabling:ens1f1np1"].fix == "swap the cables of ens1f0np0 and ens1f1np1 on a"
    assert out["a"]["cabling:ens1f0np0"].status == "fail"
    assert not [i for h in ("b", "c") for i in out[h].values() if i.status == "fail"]


def test_a_port_that_reaches_nobody_fails_with_where_its_cable_must_go() -> None:
    ans, facts = cluster()
    cables = straight(("server1", "server2"))
    cables[("server1", "ens1f1np1")] = []
    wire(ans, facts, cables)
    item = results(ans, facts)["server1"]["cabling:ens1f1np1"]
    assert item.status == "fail" and "reaches no rail 1 port of server2" in item.evidence
    assert item.fix and item.fix.startswith(
        "check where the cable of ens1f1np1 on server1 goes: it must reach rail 1 of server2"
    )


def test_a_dead_link_is_not_pinged_and_left_to_the_link_check() -> None:
    ans, facts = cluster(server2={"down": ("ens2f1np1",)})
    wire(ans, facts, straight(("server1", "server2")), jumbo_fail={("server1", "ens2f1np1")})
    out = results(ans, facts)
    assert out["server2"]["cabling:ens2f1np1"].status == "skip"
    assert "server1 ens2f1np1 has carrier" in out["server2"]["cabling:ens2f1np1"].evidence
    assert out["server1"]["jumbo:ens2f1np1"].status == "warn"
    assert "peer port server2 ens2f1np1 has no carrier" in out["server1"]["jumbo:ens2f1np1"].evidence


def test_a_jumbo_failure_is_blamed_on_the_port_whose_mtu_is_too_small() -> None:
    ans, facts = cluster(server1={"mtus": {"ens1f0np0": 1500}})
    wire(ans, facts, straight(("server1", "server2")), jumbo_fail={("server1", "ens1f0np0"), ("server2", "ens1f0np0")})
    out = results(ans, facts)
    assert out["server1"]["jumbo:ens1f0np0"].status == "fail"
    assert "ens1f0np0 MTU is 1500" in out["server1"]["jumbo:ens1f0np0"].evidence
    assert out["server2"]["jumbo:ens1f0np0"].status == "warn"
    assert "fix ens1f0np0 on server1" in (out["server2"]["jumbo:ens1f0np0"].fix or "")


def test_results_of_an_older_cross_host_test_are_ignored() -> None:
    ans, facts = cluster()
    stale = {("server2", "ens1f0np0"): [("server1", "ens2f0np0")], ("server2", "ens2f0np0"): [("server1", "ens1f0np0")]}
    wire(ans, facts, straight(("server1", "server2")) | stale)
    facts["server2"]["network"]["cluster"]["probe_id"] = "older"
    out = results(ans, facts)
    assert out["server1"]["cabling:ens1f0np0"].status == "pass"
    assert out["server1"]["cabling:ens2f0np0"].status == "pass"


def test_every_port_is_pinged_by_the_next_host_in_the_ring() -> None:
    keys = {h: {"rail0"} for h in ("a", "b", "c")} | {"d": set()}
    assert [ring_peer(["a", "b", "c", "d"], h, keys, "rail0") for h in ("a", "b", "c")] == ["b", "c", "a"]


class FakeExecutor:
    """Answers ping with canned iputils output and records every command."""

    name = "server1"

    def __init__(self) -> None:
        self.commands: list[list[str]] = []

    async def run(self, argv: list[str], **_: Any) -> CommandResult:
        self.commands.append(list(argv))
        if "ff02::1" in argv:
            out = "64 bytes from fe80::e42:a1ff:fe00:201%ens1f1np1: icmp_seq=1 ttl=64 time=0.2 ms\n"
            out += "2 packets transmitted, 2 received, 0% packet loss, time 1001ms\n"
            return CommandResult(" ".join(argv), 0, out, "", 0.1)
        return CommandResult(" ".join(argv), 1, "2 packets transmitted, 0 received, 100% packet loss\n", "", 0.1)


async def test_the_cross_host_probe_pings_each_live_port_and_skips_dark_ones() -> None:
    ans, facts = cluster(server1={"down": ("ens2f1np1",)})
    net = facts["server1"]["network"]
    d = design(ans, "server1", facts["server1"]["discovery"], net)
    ex = FakeExecutor()
    carrier = {n: i.carrier for n, i in net.interfaces.items()}
    peers = {e.key: ("server2", e.ip.rsplit(".", 1)[0] + ".2") for e in d.endpoints}
    result = await probe_host(ex, d.endpoints, carrier, {"ens2f0np0"}, peers, 9000)  # type: ignore[arg-type]
    assert result["ens2f1np1"] == {"key": "rail3", "skipped": "no carrier"}
    assert "link_local" not in result["ens2f0np0"] and result["ens2f0np0"]["jumbo"]["error"] == (
        "no reply (2 sent, 0 received)"
    )
    assert result["ens1f1np1"]["link_local"]["replies"] == ["fe80::e42:a1ff:fe00:201"]
    pinged = sorted(c[c.index("-I") + 1] for c in ex.commands if "ff02::1" in c)
    assert pinged == ["ens1f0np0", "ens1f1np1"]


def test_on_a_rail_that_is_one_large_segment_each_port_keeps_its_nearest_peers_and_a_swap_is_still_found() -> None:
    from steps.network.cabling import KEPT_PEERS, KEPT_REPLIES, nearest_replies, normal

    hosts = tuple(f"h{i:02d}" for i in range(1, KEPT_REPLIES + 12))
    ans, facts = cluster(hosts)
    cables = straight(hosts)
    for n in ("ens1f0np0", "ens1f1np1"):  # h05's rail 0 and rail 1 cables sit in each other's segment
        other = "ens1f1np1" if n == "ens1f0np0" else "ens1f0np0"
        cables[("h05", n)] = [(h, other) for h in hosts if h != "h05"]
        for h in hosts:
            if h != "h05":
                cables[(h, n)] = [x for x in cables[(h, n)] if x[0] != "h05"] + [("h05", other)]
    wire(ans, facts, cables)
    owners = {normal(link_local(mac_of(i, r))): (h, n) for i, h in enumerate(hosts, 1) for r, n in enumerate(NETDEVS)}
    for i, host in enumerate(hosts, 1):  # what the stage's cluster probe keeps (steps/network/stage.py)
        for r, netdev in enumerate(NETDEVS):
            ping = facts[host]["network"]["cluster"]["ports"][netdev]["link_local"]
            own = {normal(link_local(mac_of(i, r)))}
            ping["replies"], ping["replied"] = nearest_replies(ping["replies"], own, owners, list(hosts), host)
            assert len(ping["replies"]) == 1 + KEPT_PEERS and ping["replied"] == len(hosts) - 1
    out = results(ans, facts)
    assert out["h05"]["cabling:ens1f0np0"].status == "fail"
    assert out["h05"]["cabling:ens1f0np0"].fix == "swap the cables of ens1f0np0 and ens1f1np1 on h05"
    assert not [i for h in hosts if h != "h05" for i in out[h].values() if i.status == "fail"]
    evidence = out["h01"]["cabling:ens2f0np0"].evidence
    assert evidence.startswith("ens2f0np0 reaches h02 ens2f0np0 (rail 2), h03 ens2f0np0 (rail 2)")
    assert evidence.endswith(f"and {len(hosts) - 1 - KEPT_PEERS} more ports on its segment")


def test_a_small_segment_keeps_every_reply() -> None:
    from steps.network.cabling import nearest_replies

    replies = ["fe80::1", "fe80::2", "fe80::3"]
    assert nearest_replies(replies, {"fe80::1"}, {}, ["a"], "a") == (replies, 2)


async def test_the_cluster_probe_pings_in_waves_of_max_parallel_hosts() -> None:
    import asyncio

    from tests.steps.facts_builder import view as cluster_view
    from wizard.executors.base import CommandResult

    busy: set[str] = set()
    most: list[int] = [0]

    class Pinger:
        def __init__(self, name: str) -> None:
            self.name = name

        async def run(self, argv: Any, **_: Any) -> CommandResult:
            busy.add(self.name)
            most[0] = max(most[0], len(busy))
            await asyncio.sleep(0.01)
            busy.discard(self.name)
            return CommandResult(" ".join(argv), 0, "2 packets transmitted, 2 received", "", 0.01)

    hosts = tuple(f"h{i}" for i in range(1, 7))
    ans, facts = cluster(hosts, body=RAILS + "ssh:\n  max_parallel_hosts: 2\n")
    found = await STEP.cluster_probe(cluster_view(ans, facts), {h: Pinger(h) for h in hosts})  # type: ignore[arg-type]
    assert set(found) == set(hosts)
    assert most[0] == 2, "a fleet pings ff02::1 in waves: each host answers every port that pings at once"
