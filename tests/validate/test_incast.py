"""`roce-wizard bwtest --incast`: N:1 rounds per rail, judged from the counters; failures name host, port, switch port.

Pass needs pause frames at the senders (IEEE 802.1Qbb PFC under oversubscription), no drops or go-back-N on the
lossless priority and, with ECN on, CNPs from the receiver (DCQCN). A sender that resent and got no pauses points at
its leaf port (confirmed by the LLDP 802.1Qaz PFC TLV); no CNPs at all points at the receiver's leaf port.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from steps.discovery.facts import DiscoveryFacts, NicPort
from tests.validate.rails5 import brought_up
from wizard.cli.main import main
from wizard.errors import UsageError
from wizard.lab.switch_load import configure_demo_state
from wizard.parsers.lldp import LldpNeighbor
from wizard.validate import perftest
from wizard.validate.hostfacts import HostFacts
from wizard.validate.incast import IncastPlan, check_plan, schedule
from wizard.validate.incast_verdict import judge
from wizard.validate.model import IncastFlow, IncastRound, RailEnd, Report
from wizard.validate.verdict import conclude

ASSETS = Path(__file__).resolve().parents[2] / "assets"
RAIL0 = "enp24s0np0"
HOSTS = [f"gpu-00{i}" for i in range(1, 6)]


def facts(name: str, k: int, pfc: tuple[int, ...] | list[int] | None = (3,)) -> HostFacts:
    lldp = LldpNeighbor(local_port=RAIL0, chassis_name="leaf-r0", port_id=f"swp{k}",
                        pfc_enabled=list(pfc) if pfc is not None else None)  # fmt: skip
    port = NicPort(pci="0000:18:00.0", model="ConnectX-7", netdev=RAIL0, rdma_device="mlx5_0", lldp=lldp)
    return HostFacts(name, DiscoveryFacts(ports=[port]))


def end(name: str) -> RailEnd:
    return RailEnd(host=name, netdev=RAIL0, device="mlx5_0", speed_gbps=400.0)


def round_of(sender_deltas: dict[str, dict[str, int]], receiver_deltas: dict[str, int]) -> IncastRound:
    flows = [IncastFlow(sender=end(h), switch_port=f"leaf-r0 swp{HOSTS.index(h) + 1}", gbps=93.0, deltas=d)
             for h, d in sender_deltas.items()]  # fmt: skip
    return IncastRound(rail=0, round=0, receiver=end("gpu-001"), receiver_switch_port="leaf-r0 swp1", senders=flows,
                       line_gbps=400.0, receiver_deltas=receiver_deltas)  # fmt: skip


PAUSED = {"rx_prio3_pause": 1200, "rx_prio3_pause_duration": 90000, "rdma_rp_cnp_handled": 500}
CNPS = {"rdma_np_ecn_marked_roce_packets": 900, "rdma_np_cnp_sent": 700}
NOW = {(h, RAIL0): {"rx_prio3_pause": 1} for h in HOSTS}


def test_every_host_receives_once_from_the_next_hosts_by_default() -> None:
    fanin, rounds = check_plan(HOSTS, IncastPlan())
    assert (fanin, rounds) == (4, 5)
    plan = schedule(HOSTS, fanin, rounds)
    assert [r for r, _ in plan] == HOSTS
    assert plan[0] == ("gpu-001", ["gpu-002", "gpu-003", "gpu-004", "gpu-005"])
    assert plan[4] == ("gpu-005", ["gpu-001", "gpu-002", "gpu-003", "gpu-004"])
    assert schedule(HOSTS, 2, 2) == [("gpu-001", ["gpu-002", "gpu-003"]), ("gpu-002", ["gpu-003", "gpu-004"])]


def test_fanin_defaults_to_the_other_hosts_but_at_most_15() -> None:
    hosts = [f"h{i}" for i in range(20)]
    assert check_plan(hosts, IncastPlan()) == (15, 20)


def test_two_hosts_or_a_fanin_below_2_cannot_oversubscribe_anything() -> None:
    with pytest.raises(UsageError, match="two hosts back to back cannot oversubscribe"):
        check_plan(["server1", "server2"], IncastPlan())
    with pytest.raises(UsageError, match="--fanin 1: must be between 2 and 4"):
        check_plan(HOSTS, IncastPlan(fanin=1))
    with pytest.raises(UsageError, match="--fanin 5"):
        check_plan(HOSTS, IncastPlan(fanin=5))


def test_paused_senders_no_drops_and_cnps_pass() -> None:
    x = round_of({h: dict(PAUSED) for h in HOSTS[1:]}, dict(CNPS))
    judge(x, {h: facts(h, k) for k, h in enumerate(HOSTS, 1)}, NOW, 3, ecn=True)
    assert (x.status, x.pauses, x.drops, x.cnps) == ("pass", 4800, 0, 700)


def test_a_sender_that_resent_without_pauses_names_its_leaf_port_and_lldp_confirms() -> None:
    deltas = {h: dict(PAUSED) for h in HOSTS[1:]}
    deltas["gpu-005"] = {"rdma_packet_seq_err": 300, "rdma_local_ack_timeout_err": 3}
    x = round_of(deltas, CNPS | {"rdma_out_of_sequence": 300})
    all_facts = {h: facts(h, k) for k, h in enumerate(HOSTS, 1)} | {"gpu-005": facts("gpu-005", 5, pfc=[])}
    judge(x, all_facts, NOW, 3, ecn=True)
    assert x.status == "fail" and x.drops == 603
    assert x.cause is not None and x.fix is not None
    assert x.cause.startswith("gpu-005 enp24s0np0 (leaf-r0 swp5) got no PFC pause frames on priority 3")
    assert "its switch port leaf-r0 swp5 does not run PFC on priority 3" in x.cause
    assert "LLDP confirms: leaf-r0 swp5 advertises PFC on priorities none" in x.cause
    assert "leaf-r0 swp5" in x.fix and "gpu-002" not in x.cause


def test_a_sender_without_the_per_priority_pause_counter_is_a_host_without_pfc() -> None:
    deltas = {h: dict(PAUSED) for h in HOSTS[1:]}
    deltas["gpu-004"] = {"rdma_packet_seq_err": 300}
    now = NOW | {("gpu-004", RAIL0): {"rx_global_pause": 0}}
    x = round_of(deltas, CNPS | {"rdma_out_of_sequence": 300})
    judge(x, {h: facts(h, k) for k, h in enumerate(HOSTS, 1)}, now, 3, ecn=True)
    assert x.cause is not None and "the host does not run PFC on priority 3" in x.cause


def test_every_sender_dropped_and_unpaused_blames_the_receivers_leaf_port() -> None:
    deltas = {h: {"rdma_packet_seq_err": 300} for h in HOSTS[1:]}
    x = round_of(deltas, CNPS | {"rdma_out_of_sequence": 1200})
    all_facts = {h: facts(h, k) for k, h in enumerate(HOSTS, 1)} | {"gpu-001": facts("gpu-001", 1, pfc=[])}
    judge(x, all_facts, NOW, 3, ecn=True)
    assert x.cause is not None
    assert "the receiver's switch port leaf-r0 swp1 does not run PFC on priority 3" in x.cause


def test_no_cnps_with_ecn_on_blames_the_receivers_leaf_port_and_without_ecn_passes() -> None:
    x = round_of({h: dict(PAUSED) for h in HOSTS[1:]}, {})
    judge(x, {}, NOW, 3, ecn=True)
    assert x.status == "fail" and x.cause is not None
    assert "gpu-001 enp24s0np0 (leaf-r0 swp1)" in x.cause
    assert "the receiver's switch port leaf-r0 swp1 does not mark ECN" in x.cause
    y = round_of({h: dict(PAUSED) for h in HOSTS[1:]}, {})
    judge(y, {}, NOW, 3, ecn=False)
    assert y.status == "pass"


def test_marked_packets_without_cnps_point_at_the_receivers_notification_point() -> None:
    x = round_of({h: dict(PAUSED) for h in HOSTS[1:]}, {"rdma_np_ecn_marked_roce_packets": 900})
    judge(x, {}, NOW, 3, ecn=True)
    assert x.fix == "echo 1 | sudo tee /sys/class/net/enp24s0np0/ecn/roce_np/enable/3 on gpu-001 (stage roce sets it)"


def test_an_oversubscribed_round_without_pauses_does_not_prove_pfc() -> None:
    x = round_of({h: {"rdma_rp_cnp_handled": 5} for h in HOSTS[1:]}, dict(CNPS))
    judge(x, {}, NOW, 3, ecn=True)
    assert x.status == "fail" and x.cause is not None and "lossless is not proven" in x.cause


def test_a_failing_round_fails_the_verdict_once_per_cause_and_explains_its_ports_counters() -> None:
    from wizard.answers.model import load_answers
    from wizard.validate.model import CounterDelta

    answers = load_answers(ASSETS / "answers.rails-16.yaml")
    report = Report(simulated=True, cluster="rails-16", hosts=HOSTS, started="now")
    for number in range(2):
        deltas = {h: dict(PAUSED) for h in HOSTS[1:]}
        deltas["gpu-005"] = {"rdma_packet_seq_err": 300 + number}
        x = round_of(deltas, CNPS | {"rdma_out_of_sequence": 300})
        judge(x, {}, NOW, 3, ecn=True)
        report.incast.append(x)
    report.counters.append(CounterDelta(host="gpu-001", netdev=RAIL0, status="fail", note="packets dropped"))
    conclude(report, {}, answers)
    assert report.verdict == "fail" and len(report.causes) == 1
    assert report.causes[0].startswith("incast rail 0: gpu-005 enp24s0np0 (leaf-r0 swp5)")


def test_incast_on_the_two_host_reference_demo_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bwtest", "--demo", "--incast"]) == 2
    err = capsys.readouterr().err
    assert "--incast needs at least 3 hosts" in err and "two hosts back to back" in err
    assert "preparing the simulated hosts" not in err


def test_fanin_without_incast_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bwtest", "--demo", "--fanin", "3"]) == 2
    assert "--fanin and --incast-rounds only apply with --incast" in capsys.readouterr().err


# -- end to end on five rails-16 hosts (gpu-001..005: gpu-005 sits on swp5 of every leaf) -------------------------
@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int, str]:
    """One healthy `bwtest --incast` run on the five hosts (tests/validate/rails5.py), its switches loaded."""
    up = brought_up()
    state = up.copy_to(tmp_path_factory.mktemp("incast") / "state")
    configure_demo_state(state, up.answers)  # the operator's switch step: switch-config's files loaded
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.1")
        mp.setattr(perftest, "START_DELAY_S", 0.1)
        code, out = _bwtest(up.answers, state)
    return up.answers, state, code, out


def _bwtest(answers: Path, state: Path, *extra: str) -> tuple[int, str]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["bwtest", "--demo", "--profile", "rails-16", "--answers", str(answers), "--incast",
                     "--state-dir", str(state), *extra])  # fmt: skip
    return code, buf.getvalue()


@pytest.mark.slow  # 45-75 s: preparing five 8-rail hosts, then 5 rounds x 8 rails x 4 senders
def test_bwtest_incast_passes_on_the_healthy_fabric(prepared: tuple[Path, Path, int, str]) -> None:
    _, _, code, out = prepared
    assert code == 0, out[-3000:]
    assert "fabric validation of rails-16: PASS" in out
    assert "PASS  incast round 4: 4 -> gpu-005 on 8 rail(s)" in out and "drops 0" in out


@pytest.mark.slow  # ~10 s each: the prepared disks are reused, and one round (gpu-001 receives) shows the fault
@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (
            f"gpu-001:switch_pfc_off={RAIL0}",
            "every sender into gpu-001 enp24s0np0 (leaf-r0 swp1) retransmitted and none got PFC pause",
        ),
        ("gpu-001:switch_ecn_off", "into gpu-001 enp24s0np0 (leaf-r0 swp1): no ECN-marked packets and no CNPs"),
    ],
)
def test_bwtest_incast_fails_naming_host_port_and_leaf_port(
    prepared: tuple[Path, Path, int, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, expected: str
) -> None:
    answers, state, _, _ = prepared
    shutil.copytree(state, tmp_path / "state")
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.1")
    monkeypatch.setattr(perftest, "START_DELAY_S", 0.1)
    code, out = _bwtest(answers, tmp_path / "state", "--fault", fault, "--incast-rounds", "1")
    assert code == 1, out[-3000:]
    causes = [line for line in out.splitlines() if line.startswith("  cause ")]
    assert causes and expected in causes[0] and "leaf-r0 swp1" in causes[0]
    assert all("rail 0" in c for c in causes), "only rail 0's leaf port is wrong"
