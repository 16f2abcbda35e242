"""Specification of the mlnx_qos parser on old and new MOFED/DOCA output and a `set -x` trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers.common import ParseError
from wizard.parsers.qos import parse_mlnx_qos

_DEFAULT_DSCP2PRIO = {dscp: dscp // 8 for dscp in range(64)}
_VENDOR_PRIO_TC = {0: 1, 1: 0, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7}  # what mlx5 reports before any ETS change


@pytest.mark.parametrize("path", real_outputs("mlnx_qos"), ids=lambda p: p.name)
def test_every_mlnx_qos_sample_reads_trust_eight_pfc_flags_and_eight_tcs(path: Path) -> None:
    qos = parse_mlnx_qos(path.read_text())
    assert qos.trust in ("dscp", "pcp")
    assert len(qos.pfc_enabled) == 8 and set(qos.pfc_enabled) <= {0, 1}
    assert [tc.tc for tc in qos.tcs] == list(range(8)) and len(qos.priority_to_tc) == 8
    assert qos.dcbx_mode == "OS controlled"


def test_mlnx_qos_trust_dscp_with_pfc_on_priority_3_in_a_set_x_trace() -> None:
    qos = parse_mlnx_qos(real_output("mlnx_qos", "att-netarbiter-1.txt"))
    assert (qos.interface, qos.trust, qos.cable_len) == ("eth4", "dscp", 7)
    assert qos.pfc_enabled == [0, 0, 0, 1, 0, 0, 0, 0] and qos.pfc_priorities() == [3]
    assert qos.dscp2prio == _DEFAULT_DSCP2PRIO and qos.priority_of_dscp(26) == 3
    assert qos.pfc_buffer is None and qos.receive_buffer is None  # older MOFED prints no buffers
    assert qos.priority_to_tc == _VENDOR_PRIO_TC
    assert {tc.tsa for tc in qos.tcs} == {"vendor"} and qos.tc_bandwidth == {}


def test_mlnx_qos_trust_pcp_has_no_dscp_map_and_reads_buffers() -> None:
    qos = parse_mlnx_qos(real_output("mlnx_qos", "dscp-notes-trust-pcp-pfc3-7.txt"))
    assert (qos.trust, qos.dscp2prio, qos.pfc_priorities()) == ("pcp", {}, [3])
    assert qos.receive_buffer == [80256, 80256, 896, 80256, 896, 896, 896, 896]
    assert qos.pfc_buffer == [0, 2, 5, 7, 1, 2, 3, 6]


def test_mlnx_qos_custom_dscp_map_ets_bandwidth_and_max_buffer_size() -> None:
    qos = parse_mlnx_qos(real_output("mlnx_qos", "lg-cmc-cx7-dscp-ets-prio5-4.txt"))
    assert qos.trust == "dscp" and qos.default_priority is None
    assert (qos.priority_of_dscp(40), qos.priority_of_dscp(48), qos.priority_of_dscp(26)) == (5, 6, 3)
    assert len(qos.dscp2prio) == 64
    assert qos.receive_buffer == [19872, 220896, 0, 0, 0, 0, 0, 0] and qos.receive_buffer_max_size == 4151520
    assert (qos.cable_len, qos.pfc_priorities(), qos.pfc_buffer) == (30, [5], [0, 0, 0, 0, 0, 1, 0, 0])
    assert qos.tc_bandwidth == {0: 9, 1: 1, 2: 80, 3: 10}
    assert [tc.tsa for tc in qos.tcs] == ["ets"] * 4 + ["strict"] * 4
    assert qos.priority_to_tc == {p: p for p in range(8)}


@pytest.mark.parametrize(("name", "trust"), [("tcp-ecn-note-dscp-2.txt", "dscp"), ("tcp-ecn-note-pcp-1.txt", "pcp")])
def test_mlnx_qos_all_pfc_off_with_one_receive_buffer(name: str, trust: str) -> None:
    qos = parse_mlnx_qos(real_output("mlnx_qos", name))
    assert (qos.interface, qos.trust, qos.pfc_priorities()) == ("ens6", trust, [])
    assert qos.receive_buffer == [524160, 0, 0, 0, 0, 0, 0, 0] and qos.pfc_buffer == [0] * 8
    assert qos.dscp2prio == (_DEFAULT_DSCP2PRIO if trust == "dscp" else {})


def test_mlnx_qos_trace_of_two_runs_reports_the_last_one() -> None:
    before = real_output("mlnx_qos", "tcp-ecn-note-pcp-1.txt")
    after = real_output("mlnx_qos", "dscp-notes-trust-pcp-pfc3-7.txt")
    qos = parse_mlnx_qos(before + "+ mlnx_qos -i ens6 --pfc 0,0,0,1,0,0,0,0\n" + after)
    assert (qos.interface, qos.pfc_priorities(), qos.pfc_buffer) == ("ens6", [3], [0, 2, 5, 7, 1, 2, 3, 6])


_NEW_FORMAT = """\
****** WARNING: lldpad service is running and may overwrite your settings ******

DCBX mode: OS controlled
Priority trust state: dscp
dscp2prio mapping:
\tprio:0 dscp:07,06,05,04,03,02,01,00,
\tprio:3 dscp:31,30,29,28,27,25,24,
\tprio:5 dscp:26,47,46,45,44,43,42,41,
\tprio:5 dscp:40,
default priority:
\tprio:0
Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,total_size=1048576
Cable len: 7
PFC configuration:
\tpriority    0   1   2   3   4   5   6   7
\tenabled     0   0   0   0   0   1   0   0   
\tbuffer      0   0   0   0   0   1   0   0   
tc: 0 ratelimit: 25.0 Gbps, tsa: ets, bw: 50%
\t priority:  0
\t priority:  1
tc: 1 ratelimit: unlimited, tsa: ets, bw: 50%
\t priority:  5
"""


def test_mlnx_qos_remapped_dscp_wrapped_rows_default_priority_total_size_and_ratelimit() -> None:
    qos = parse_mlnx_qos(_NEW_FORMAT)
    assert qos.warnings == ["WARNING: lldpad service is running and may overwrite your settings"]
    assert (qos.priority_of_dscp(26), qos.priority_of_dscp(40), qos.priority_of_dscp(31)) == (5, 5, 3)
    assert qos.default_priority == 0 and qos.receive_buffer_total_size == 1048576
    assert (qos.tcs[0].ratelimit, qos.tcs[0].ratelimit_gbps, qos.tcs[0].priorities) == ("25.0 Gbps", 25.0, [0, 1])
    assert qos.priority_to_tc == {0: 0, 1: 0, 5: 1} and qos.tc_bandwidth == {0: 50, 1: 50}


@pytest.mark.parametrize(
    ("tool", "name"),
    [
        ("ethtool", "proxmox-cx4lx-10g-up-2.txt"),
        ("show_gids", "tcp-ecn-note-1.txt"),
        ("bonding", "lacp-25g-kernel5.15-4.txt"),
    ],
)
def test_mlnx_qos_refuses_other_tools_output(tool: str, name: str) -> None:
    with pytest.raises(ParseError):
        parse_mlnx_qos(real_output(tool, name))


@pytest.mark.parametrize("text", ["", "Interface name is required\nUsage: mlnx_qos -i <interface> [options]\n"])
def test_mlnx_qos_refuses_empty_input_and_usage_errors(text: str) -> None:
    with pytest.raises(ParseError):
        parse_mlnx_qos(text)
