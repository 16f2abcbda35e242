"""A test that timed out after the ends exchanged queue pairs is a stalled RDMA path, not a cross-wired cable: the
rail address answered over TCP, so the cable lands where it should (seen on a loaded 64-host lab run, where the
old verdict told the operator to trace 133 healthy cables)."""

from __future__ import annotations

from wizard.validate.diagnose import explain
from wizard.validate.model import RailEnd, RailResult

CONNECTED = """ local address: LID 0000 QPN 0x042c PSN 0x1081d6 RKey 0x203d00 VAddr 0x007f5f29b83000
 remote address: LID 0000 QPN 0x042d PSN 0x83c3ee RKey 0x203d00 VAddr 0x007f5f29b83000
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"""
TIMED_OUT = "gpu-056: ib_write_bw to gpu-055 over enp24s0np0 did not finish within 33s (the RDMA path stalls: ...)"


def _rail(output: str, errors: list[str]) -> RailResult:
    end = {"netdev": "enp24s0np0", "device": "mlx5_0", "network": "10.16.0.0/16", "speed_gbps": 400.0}
    return RailResult(
        rail=0, mode="together", status="fail", errors=errors, output=output, expected_gbps=400.0,
        server=RailEnd(host="gpu-055", ipv4="10.16.0.55", **end),
        client=RailEnd(host="gpu-056", ipv4="10.16.0.56", **end),
    )  # fmt: skip


def test_a_timeout_after_the_queue_pair_exchange_is_a_stalled_path_with_the_counters_to_read() -> None:
    cause, fix = explain(_rail(CONNECTED, [TIMED_OUT, "ib_write_bw printed no result rows"]), {}, [], 3, 9000)
    assert "exchanged queue pairs" in cause and "stalls" in cause
    assert "cross-wired" not in cause
    assert "ethtool -S enp24s0np0 on gpu-056" in fix and "--suspects" in fix


def test_a_client_that_never_reached_the_server_still_points_at_the_cabling() -> None:
    cause, _ = explain(_rail("", ["Couldn't connect to 10.16.0.55:18515"]), {}, [], 3, 9000)
    assert "cross-wired" in cause


def test_a_test_whose_ssh_connection_was_lost_blames_no_cable() -> None:
    """On the 1,024-host run a dropped SSH session (the lab's ssh_drop fault) was reported as eight cross-wired
    cables: nothing was measured, and the cause says so."""
    lost = "gpu-056: connection lost during 'timeout 33 ib_write_bw -d mlx5_0 ... 10.16.0.55': Connection lost"
    cause, fix = explain(_rail("", [lost]), {}, [], 3, 9000)
    assert "cross-wired" not in cause and "not measured" in cause and "connection lost during" in cause
    assert "SSH connection to gpu-056" in fix and "--suspects" in fix
