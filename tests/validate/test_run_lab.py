"""Validation against simulated hosts: the healthy pair passes everything; four hosts get a full matrix."""

from __future__ import annotations

from tests.validate.labkit import quick_start, validate  # noqa: F401 - the fixture applies to this module


async def test_the_healthy_reference_pair_passes_every_rail_the_aggregate_latency_and_lint():
    events: list = []
    report = await validate(sweep=True, events=events)
    assert report.verdict == "pass", report.causes
    assert report.simulated is True and report.hosts == ["server1", "server2"]
    assert [r.rail for r in report.rails] == [0, 1, 2, 3]
    for rail in report.rails:
        assert rail.server.host == "server1" and rail.client.host == "server2"
        assert rail.server.device == rail.client.device == f"mlx5_{rail.rail}"
        assert rail.server.gid_index == 3 and rail.expected_gbps == 25.0
        assert rail.gbps is not None and rail.gbps >= 22.5 and rail.mtu == 4096
        assert len(rail.sweep) == 23 and rail.sweep[0][0] == 2
        assert rail.output.startswith("# simulated by the roce-wizard lab"), "raw output kept for the ticket"
        assert "--tclass=106" in rail.command and "-x 3" in rail.command and "-a" in rail.command.split()
    (agg,) = report.aggregate
    assert agg.expected_gbps == 100.0 and agg.gbps >= 90.0 and agg.status == "pass"
    assert len({r.command.split("-p ")[1].split()[0] for r in report.together}) == 4, "one TCP port per pair"
    assert all(lat.status == "pass" and lat.typical_us < 5.0 for lat in report.latency)
    assert {i.status for i in report.lint} <= {"pass", "warn"}
    assert all(c.status == "pass" for c in report.counters), [c.note for c in report.counters]
    kinds = [k for k, _ in events]
    assert kinds.count("row") >= 4 * 23, "every sweep row is reported while it arrives"
    assert kinds.index("row") < kinds.index("rail") < kinds.index("done")


async def test_four_hosts_get_a_full_matrix_in_three_rounds_and_a_slow_host_points_at_its_port():
    events: list = []
    report = await validate("node2:mtu_mismatch=ens2f0np0", hosts=4, events=events)
    cells = {(c.a, c.b): c for c in report.matrix}
    assert len(cells) == 6 and sorted({c.round for c in cells.values()}) == [0, 1, 2]
    for number in range(3):
        busy = [h for c in report.matrix if c.round == number for h in (c.a, c.b)]
        assert len(busy) == len(set(busy)) == 4, "every host in exactly one test per round"
    slow = {k for k, c in cells.items() if c.status == "fail"}
    assert slow == {k for k in cells if "node2" in k}, "only the pairs with node2 are slow"
    assert all("node2 ens2f0np0" in (cells[k].hint or "") for k in slow)
    assert [e[1]["cell"].round for e in events if e[0] == "cell"] == sorted(c.round for c in report.matrix)


async def test_verifys_short_check_pairs_ring_neighbours_in_two_rounds_and_still_finds_the_slow_port():
    """`verify` measures each host with its ring neighbours only: two rounds at four hosts (all pairs takes
    three), every host in both, and the slow port is named as by the full matrix."""
    report = await validate("node2:mtu_mismatch=ens2f0np0", hosts=4, neighbours_only=True)

    cells = {(c.a, c.b): c for c in report.matrix}
    assert sorted(cells) == [("node0", "node1"), ("node0", "node3"), ("node1", "node2"), ("node2", "node3")]
    assert sorted({c.round for c in cells.values()}) == [0, 1]
    slow = {k for k, c in cells.items() if c.status == "fail"}
    assert slow == {("node1", "node2"), ("node2", "node3")}
    assert report.verdict == "fail" and any("node2 ens2f0np0" in cause for cause in report.causes), report.causes
