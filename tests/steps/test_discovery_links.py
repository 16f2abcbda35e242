"""Specification of flap detection: carrier and PHY counters per RDMA port, read, compared between reads, judged."""

from __future__ import annotations

from typing import Any

from steps.discovery.facts import NicPort
from steps.discovery.links import (
    LinkCounters,
    compare,
    flap_item,
    link_counters,
    parse_carrier_counts,
    probe_links,
    recheck,
)
from tests.fixture_files import real_output
from wizard.executors.base import CommandResult
from wizard.parsers.ethtool import parse_ethtool_S
from wizard.parsers.lldp import LldpNeighbor

GREP = """/proc/uptime:3520.18 55123.40
/sys/class/net/enp64s0np0/carrier_changes:10
/sys/class/net/enp64s0np0/carrier_down_count:5
/sys/class/net/enp64s0np0/carrier_up_count:5
/sys/class/net/enp24s0np0/carrier_changes:2
/sys/class/net/enp24s0np0/carrier_down_count:1
/sys/class/net/enp24s0np0/carrier_up_count:1
"""
STATS = (
    "NIC statistics:\n     rx_crc_errors_phy: {crc}\n     rx_symbol_err_phy: {sym}\n     link_down_events_phy: {down}\n"
)


def _port(link: LinkCounters | None, netdev: str = "enp64s0np0", switch_port: str | None = "swp3") -> NicPort:
    lldp = LldpNeighbor(local_port=netdev, chassis_name="leaf-r1", port_id=switch_port) if switch_port else None
    rdma = "rocep64s0f0"
    return NicPort(pci="0000:40:00.0", model="ConnectX-7", netdev=netdev, rdma_device=rdma, lldp=lldp, link=link)


def _stats(down: int, crc: int = 0, sym: int = 0) -> Any:
    return parse_ethtool_S(STATS.format(down=down, crc=crc, sym=sym))


def test_the_carrier_grep_parses_per_netdev_and_the_uptime() -> None:
    read = parse_carrier_counts(GREP.replace("\n", "\r\n") + "/sys/class/net/eno1/operstate:up\n")
    assert read.uptime_s == 3520.18
    assert read.ports["enp64s0np0"] == {"carrier_changes": 10, "carrier_down_count": 5, "carrier_up_count": 5}
    assert read.ports["enp24s0np0"]["carrier_down_count"] == 1
    assert set(read.ports) == {"enp64s0np0", "enp24s0np0"}
    assert parse_carrier_counts("").ports == {}


def test_a_real_mlx5_dump_without_phy_error_lines_reads_as_unknown_not_zero() -> None:
    # The mail's author removed zero counters: link_down_events_phy is simply absent from this real dump.
    stats = parse_ethtool_S(real_output("ethtool_S", "bpf-xdp-regression-mlx5-k5.15-1.txt"))
    c = link_counters({"carrier_down_count": 1}, stats)
    assert c.link_down_events_phy is None and c.rx_crc_errors_phy is None
    assert flap_item("gpu-001", _port(c)).status == "pass"  # type: ignore[union-attr]


def test_a_port_whose_link_went_down_four_times_fails_naming_host_port_switch_port_and_errors() -> None:
    item = flap_item("gpu-003", _port(link_counters({"carrier_down_count": 5}, _stats(4, crc=1234))))
    assert item is not None and item.status == "fail"
    assert item.id == "link_flaps:enp64s0np0"
    assert item.evidence == (
        "gpu-003 enp64s0np0 (leaf-r1 swp3): link went down 4 times since boot, rx_crc_errors_phy 1234"
    )
    assert item.fix is not None and "reseat or replace the cable/optic" in item.fix and "switch port" in item.fix


def test_a_healthy_port_passes_and_a_single_loss_since_boot_only_warns() -> None:
    healthy = flap_item("gpu-001", _port(link_counters({"carrier_down_count": 1}, _stats(0))))
    assert healthy is not None and healthy.status == "pass" and healthy.fix is None
    once = flap_item("gpu-001", _port(link_counters({"carrier_down_count": 2}, _stats(1))))
    assert once is not None and once.status == "warn"  # a switch reboot or a reseat; not yet a flap


def test_carrier_drops_alone_warn_because_mtu_changes_and_ip_link_down_also_drop_the_carrier() -> None:
    item = flap_item("gpu-002", _port(link_counters({"carrier_down_count": 3}, None), switch_port=None))
    assert item is not None and item.status == "warn"
    assert item.evidence.startswith("gpu-002 enp64s0np0: link went down 2 times since boot")
    assert "MTU changes" in item.evidence


def test_counters_rising_between_two_reads_fail_even_without_losses_before() -> None:
    before = link_counters({"carrier_down_count": 1}, _stats(0, crc=10), read_at=100.0, boot_at=50.0)
    after = link_counters({"carrier_down_count": 1}, _stats(0, crc=52), read_at=104.0, boot_at=50.2)
    item = flap_item("gpu-004", _port(compare(after, before)))
    assert item is not None and item.status == "fail"
    assert "rising in 4 s: rx_crc_errors_phy +42" in item.evidence


def test_counters_of_another_boot_are_never_compared() -> None:
    before = link_counters({"carrier_down_count": 1}, _stats(0), read_at=100.0, boot_at=50.0)
    rebooted = link_counters({"carrier_down_count": 1}, _stats(1), read_at=900.0, boot_at=700.0)
    assert compare(rebooted, before).rising == {}
    reset = link_counters({"carrier_down_count": 1}, _stats(0), read_at=900.0)  # no uptime read: counters fell
    assert compare(reset, link_counters({"carrier_down_count": 3}, _stats(2), read_at=100.0)).rising == {}


class FakeHost:
    """Counters that move by ``step`` on every read of enp64s0np0 (a flapping link)."""

    def __init__(self, step: int) -> None:
        self.step, self.reads, self.commands = step, 0, []

    async def run(self, argv: list[str], **_: Any) -> CommandResult:
        self.commands.append(argv)
        if argv[0] == "grep":
            return _result(argv, GREP)
        if argv[-1] == "enp64s0np0":
            self.reads += 1
            return _result(argv, STATS.format(down=self.reads * self.step, crc=0, sym=0))
        return _result(argv, STATS.format(down=0, crc=0, sym=0))


def _result(argv: list[str], stdout: str) -> CommandResult:
    return CommandResult(command=" ".join(argv), exit_status=0, stdout=stdout, stderr="", duration_s=0.01)


async def test_discovery_reads_each_rdma_port_once_and_compares_with_the_previous_discovery() -> None:
    host = FakeHost(step=1)
    ports = [_port(None), _port(None, netdev="enp24s0np0")]
    await probe_links(host, ports, None)  # type: ignore[arg-type]
    assert [c[-1] for c in host.commands if c[0] == "ethtool"] == ["enp64s0np0", "enp24s0np0"]
    assert host.commands[0][:4] == ["grep", "-sH", ".", "/proc/uptime"]
    assert ports[0].link is not None and ports[0].link.link_down_events_phy == 1 and ports[0].link.rising == {}
    previous = {"ports": [p.model_dump(mode="json") for p in ports]}
    again = [_port(None), _port(None, netdev="enp24s0np0")]
    await probe_links(host, again, previous)  # type: ignore[arg-type]
    assert again[0].link is not None and again[0].link.rising == {"link_down_events_phy": 1}
    assert again[1].link is not None and again[1].link.rising == {}


async def test_the_doctor_second_read_catches_a_port_caught_between_flaps() -> None:
    host = FakeHost(step=2)
    ports = [_port(None)]
    await probe_links(host, ports, None)  # type: ignore[arg-type]
    items = await recheck(host, "gpu-003", ports, min_gap_s=0.0)  # type: ignore[arg-type]
    assert [(i.id, i.status) for i in items] == [("link_flaps:enp64s0np0", "fail")]
    assert "gpu-003 enp64s0np0 (leaf-r1 swp3): link went down 4 times since boot" in items[0].evidence
    assert "link_down_events_phy +2" in items[0].evidence


def test_a_carrier_drop_between_reads_without_physical_counters_only_warns() -> None:
    before = link_counters({"carrier_down_count": 1}, None, read_at=100.0, boot_at=50.0)
    after = link_counters({"carrier_down_count": 2}, None, read_at=160.0, boot_at=50.0)
    item = flap_item("gpu-006", _port(compare(after, before)))
    assert item is not None and item.status == "warn"  # an MTU change in between drops the carrier too
    assert "rising in 60 s: carrier_down_count +1" in item.evidence
