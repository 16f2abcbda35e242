"""Port readings become samples in the metric's unit: real mlx5 ethtool -S output, sysfs link state, RDMA counters."""

from __future__ import annotations

from pathlib import Path

from wizard.executors.base import CommandResult
from wizard.metrics.collect import Port, port_commands, port_samples, read_port
from wizard.metrics.names import BY_NAME

FIXTURES = Path(__file__).parents[2] / "fixtures" / "real-outputs" / "ethtool_S"
PORT = Port("ens1f0np0", "mlx5_0", 1, 0)
NET, IB = "/sys/class/net/ens1f0np0", "/sys/class/infiniband/mlx5_0/ports/1"


def _result(text: str, status: int = 0) -> CommandResult:
    return CommandResult("x", status, text.removesuffix("\n"), "", 0.0, text)


def _values(samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:  # type: ignore[no-untyped-def]
    base = set(PORT.labels("h1"))
    return {tuple(sorted((k, v) for k, v in labels.items() if k not in base)): value
            for n, labels, value in samples if n == name}  # fmt: skip


def test_real_mlx5_global_pause_discards_and_out_of_buffer_become_counters_in_seconds_and_packets():
    text = (FIXTURES / "bpf-xdp-regression-mlx5-k5.15-1.txt").read_text()
    samples = port_samples("h1", read_port(PORT, _result(text), _result("")), priority=3)
    assert _values(samples, "roce_port_global_pause_frames_total") == {(("direction", "tx"),): 5745042}
    # the driver counts pause duration in microseconds; Prometheus wants seconds
    assert _values(samples, "roce_port_global_pause_duration_seconds_total") == {(("direction", "tx"),): 771.10381}
    assert _values(samples, "roce_port_discards_total") == {(("direction", "rx"),): 58591428329,
                                                            (("direction", "tx"),): 0}  # fmt: skip
    assert _values(samples, "roce_port_priority_rx_discards_total") == {(("priority", "0"),): 58591314012}
    assert _values(samples, "roce_port_rx_out_of_buffer_total") == {(): 990473555}
    # only global pause listed: mlx5e has PFC on no priority
    assert set(_values(samples, "roce_port_pfc_enabled").values()) == {0.0}
    assert len(_values(samples, "roce_port_pfc_enabled")) == 8


def test_per_priority_pause_counters_mark_that_priority_pfc_enabled():
    text = "NIC statistics:\n     rx_prio3_pause: 12\n     tx_prio3_pause: 7\n     rx_prio3_pause_duration: 2500\n"
    samples = port_samples("h1", read_port(PORT, _result(text), _result("")), priority=3)
    frames = _values(samples, "roce_port_pfc_pause_frames_total")
    assert frames == {(("direction", "rx"), ("priority", "3")): 12, (("direction", "tx"), ("priority", "3")): 7}
    assert _values(samples, "roce_port_pfc_pause_duration_seconds_total") == {
        (("direction", "rx"), ("priority", "3")): 0.0025
    }
    enabled = _values(samples, "roce_port_pfc_enabled")
    assert enabled[(("priority", "3"),)] == 1.0 and enabled[(("priority", "0"),)] == 0.0


def test_sysfs_link_state_rdma_state_and_hw_counters():
    grep = (
        f"{NET}/carrier:1\n{NET}/operstate:up\n{NET}/speed:100000\n{NET}/mtu:9000\n{NET}/carrier_changes:6\n"
        f"{NET}/ecn/roce_np/enable/3:1\n{NET}/ecn/roce_rp/enable/3:0\n{IB}/state:4: ACTIVE\n"
        f"{IB}/hw_counters/np_cnp_sent:3773741\n{IB}/hw_counters/np_ecn_marked_roce_packets:79402419\n"
        f"{IB}/hw_counters/rp_cnp_handled:42\n{IB}/hw_counters/out_of_sequence:5\n"
    )
    samples = port_samples("h1", read_port(PORT, _result("", 1), _result(grep)), priority=3)
    single = {n: v for n, labels, v in samples if "role" not in labels}
    assert single["roce_port_link_up"] == 1.0
    assert single["roce_port_speed_bytes"] == 12_500_000_000  # 100 Gb/s, as node_network_speed_bytes
    assert single["roce_port_mtu_bytes"] == 9000 and single["roce_port_carrier_changes_total"] == 6
    assert single["roce_port_rdma_state_id"] == 4
    assert single["roce_port_cnp_sent_total"] == 3773741 and single["roce_port_cnp_handled_total"] == 42
    assert single["roce_port_ecn_marked_packets_total"] == 79402419
    assert single["roce_port_out_of_sequence_packets_total"] == 5
    assert _values(samples, "roce_port_ecn_enabled") == {(("priority", "3"), ("role", "np")): 1.0,
                                                         (("priority", "3"), ("role", "rp")): 0.0}  # fmt: skip
    # ethtool -S failed: no ethtool-derived series at all, rather than zeros that look healthy
    assert not [n for n, _, _ in samples if "pause" in n or "discards" in n]


def test_a_port_without_link_reads_link_down_and_has_no_speed():
    grep = f"{NET}/operstate:down\n{NET}/speed:-1\n{NET}/mtu:9000\n{IB}/state:1: DOWN\n"
    samples = port_samples("h1", read_port(PORT, _result(""), _result(grep)), priority=3)
    single = {n: v for n, _, v in samples}
    assert single["roce_port_link_up"] == 0.0 and single["roce_port_rdma_state_id"] == 1.0
    assert "roce_port_speed_bytes" not in single


def test_every_sample_name_is_in_the_catalogue_with_its_labels():
    text = (FIXTURES / "bpf-xdp-regression-mlx5-k5.15-1.txt").read_text()
    grep = f"{NET}/carrier:1\n{NET}/ecn/roce_np/enable/3:1\n{IB}/hw_counters/np_cnp_sent:1\n"
    for name, labels, _ in port_samples("h1", read_port(PORT, _result(text), _result(grep)), priority=3):
        assert set(labels) == set(BY_NAME[name].labels), name


def test_a_port_costs_two_read_only_commands_naming_its_netdev_and_rdma_port():
    ethtool, grep = port_commands(Port("ens2f1np1", "rocep134s0f1", 1, 3), priority=3)
    assert ethtool == ["ethtool", "-S", "ens2f1np1"]
    assert grep[:3] == ["grep", "-sH", "."]
    assert "/sys/class/infiniband/rocep134s0f1/ports/1/hw_counters/np_cnp_sent" in grep
    assert "/sys/class/net/ens2f1np1/ecn/roce_rp/enable/3" in grep
