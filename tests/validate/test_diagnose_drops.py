"""Packets dropped or resent on a slow rail: named by where they are lost, not always blamed on the hosts' PFC.

On the 1,024-host benchmark a bad cable (symbol and CRC errors on gpu-0516's port) made its peers' queue pairs
resend, and every such flow was explained as "not lossless on priority 3 (trust dscp, PFC 00010000)": a PFC setup
that was right, named as the cause. Corrupted frames are dropped by the receiving MAC whatever PFC does."""

from __future__ import annotations

from steps.discovery.facts import DiscoveryFacts
from steps.roce.facts import RoceFacts, RocePort
from wizard.validate.diagnose import explain
from wizard.validate.hostfacts import HostFacts
from wizard.validate.model import CounterDelta, RailEnd, RailResult

ND = "enp24s0np0"
LOSSLESS = [0, 0, 0, 1, 0, 0, 0, 0]


def _rail() -> RailResult:
    end = {"netdev": ND, "device": "mlx5_0", "network": "10.16.0.0/16", "speed_gbps": 400.0}
    return RailResult(
        rail=0, mode="together", status="fail", gbps=225.0, expected_gbps=400.0, mtu=4096,
        server=RailEnd(host="gpu-0516", ipv4="10.16.2.4", **end),
        client=RailEnd(host="gpu-0515", ipv4="10.16.2.3", **end),
    )  # fmt: skip


def _facts(pfc: dict[str, list[int]]) -> dict[str, HostFacts]:
    return {
        host: HostFacts(
            host,
            DiscoveryFacts(),
            roce=RoceFacts(
                ports=[RocePort(netdev=ND, pci="0000:18:00.0", rdma_device="mlx5_0", trust="dscp", pfc=vector)]
            ),
        )  # fmt: skip
        for host, vector in pfc.items()
    }


RESENT = CounterDelta(host="gpu-0515", netdev=ND, deltas={"rdma_out_of_sequence": 82401}, status="fail",
                      note="packets dropped or resent: rdma_out_of_sequence +82401")  # fmt: skip


def test_errors_on_the_wire_name_the_cable_not_a_right_pfc_setup() -> None:
    wire = CounterDelta(host="gpu-0516", netdev=ND, deltas={"rx_crc_errors_phy": 164345, "rx_symbol_err_phy": 493035})
    cause, fix = explain(_rail(), _facts({"gpu-0515": LOSSLESS, "gpu-0516": LOSSLESS}), [RESENT, wire], 3, 9000)
    assert cause.startswith("gpu-0516 enp24s0np0 (mlx5_0): errors on the wire during the run (rx_symbol_err_phy")
    assert "rx_crc_errors_phy +164,345" in cause and "bad cable or transceiver" in cause
    assert "resent: gpu-0515 enp24s0np0: packets dropped or resent: rdma_out_of_sequence +82401" in cause
    assert "not lossless" not in cause
    assert "ethtool -S enp24s0np0" in fix


def test_drops_with_pfc_right_on_both_hosts_are_placed_on_the_path() -> None:
    cause, fix = explain(_rail(), _facts({"gpu-0515": LOSSLESS, "gpu-0516": LOSSLESS}), [RESENT], 3, 9000)
    assert "although both ends trust DSCP with PFC on priority 3: the drop is on the path" in cause
    assert "leaf ports" in fix


def test_a_host_without_pfc_on_the_priority_is_still_named() -> None:
    facts = _facts({"gpu-0515": LOSSLESS, "gpu-0516": [0] * 8})
    wire = CounterDelta(host="gpu-0516", netdev=ND, deltas={"rx_crc_errors_phy": 5})
    cause, fix = explain(_rail(), facts, [RESENT, wire], 3, 9000)
    assert "gpu-0516 enp24s0np0 (mlx5_0) is not lossless on priority 3 (trust dscp, PFC 00000000)" in cause
    assert "mlnx_qos -i enp24s0np0" in fix
