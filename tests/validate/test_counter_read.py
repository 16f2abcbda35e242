"""The PFC/ECN counters before and after the tests are read one exec per host: every port of a host in one batch,
and a host that cannot be read loses only its own ports."""

from __future__ import annotations

from collections.abc import Sequence

from tests.fixture_files import real_output
from wizard.executors.base import CommandResult, ConnectionLost, render_command
from wizard.validate import counters

ETHTOOL_S = real_output("ethtool_S", "nic-stats-notes-cx4lx-discards-4.txt")


class BatchingHost:
    """An executor double that batches: it records each batch it gets and answers every command in it."""

    def __init__(self, name: str, *, lost: bool = False) -> None:
        self.name, self.lost = name, lost
        self.batches: list[list[str]] = []
        self.single: list[str] = []

    async def run_batch(self, commands: Sequence[Sequence[str]], **_: object) -> list[CommandResult]:
        if self.lost:
            raise ConnectionLost(self.name, "connection lost during a batch of probes")
        self.batches.append([render_command(c) for c in commands])
        return [self._answer(list(c)) for c in commands]

    async def run(self, argv: Sequence[str], **_: object) -> CommandResult:
        self.single.append(render_command(argv))
        return self._answer(list(argv))

    def _answer(self, argv: list[str]) -> CommandResult:
        if argv[:2] == ["ethtool", "-S"]:
            return CommandResult(render_command(argv), 0, ETHTOOL_S.rstrip("\n"), "", 0.0, ETHTOOL_S)
        # each device's out_of_sequence is its number (mlx5_2: 2), so a port given another's would show
        text = "".join(f"{path}:{path.split('/')[4][-1]}\n" for path in argv[3:] if path.endswith("/out_of_sequence"))
        return CommandResult(render_command(argv), 0, text.rstrip("\n"), "", 0.0, text)


class PlainHost(BatchingHost):
    """A double that cannot batch: it has only ``run``."""

    run_batch = None  # type: ignore[assignment]


PORTS = [("enp24s0np0", "mlx5_0"), ("enp64s0np0", "mlx5_1"), ("enp79s0np0", "mlx5_2")]


async def test_every_port_of_a_host_is_read_in_one_exec() -> None:
    hosts = {"gpu-1": BatchingHost("gpu-1"), "gpu-2": BatchingHost("gpu-2")}
    found = await counters.read(hosts, {name: PORTS for name in hosts})  # type: ignore[arg-type]
    for host in hosts.values():
        assert len(host.batches) == 1 and host.single == []
        assert host.batches[0] == [
            "ethtool -S enp24s0np0",
            "ethtool -S enp64s0np0",
            "ethtool -S enp79s0np0",
            "grep -sH . " + " ".join(f"/sys/class/infiniband/{device}/ports/1/hw_counters/{name}"
                                     for _, device in PORTS for name in counters.HW_COUNTERS),
        ]  # fmt: skip
    assert sorted(found) == sorted((h, netdev) for h in hosts for netdev, _ in PORTS)
    assert [found[("gpu-2", netdev)]["rdma_out_of_sequence"] for netdev, _ in PORTS] == [0, 1, 2]


async def test_a_host_whose_batch_is_cut_loses_only_its_own_ports() -> None:
    hosts = {"gpu-1": BatchingHost("gpu-1"), "gpu-2": BatchingHost("gpu-2", lost=True)}
    found = await counters.read(hosts, {name: PORTS for name in hosts})  # type: ignore[arg-type]
    assert {host for host, _ in found} == {"gpu-1"} and len(found) == len(PORTS)


async def test_an_executor_that_cannot_batch_is_asked_command_by_command() -> None:
    host = PlainHost("gpu-1")
    found = await counters.read({"gpu-1": host}, {"gpu-1": PORTS[:1]})  # type: ignore[dict-item]
    assert host.single[0] == "ethtool -S enp24s0np0" and host.single[1].startswith("grep -sH . /sys/class/infiniband/")
    assert set(found) == {("gpu-1", "enp24s0np0")}


def test_a_ports_counters_read_like_a_dict_and_share_their_names_with_ports_like_it() -> None:
    a = counters.PortCounters({"rx_prio3_pause": 12, "rx_prio3_bytes": 10**12})
    b = counters.PortCounters({"rx_prio3_pause": 0, "rx_prio3_bytes": 5})
    assert a == {"rx_prio3_pause": 12, "rx_prio3_bytes": 10**12} and a.get("rx_discards_phy", 0) == 0
    assert list(a) == ["rx_prio3_pause", "rx_prio3_bytes"] and len(b) == 2
    assert a._index is b._index  # one name table for every port with the same counters
    (d,) = counters.deltas({("h", "p"): b}, {("h", "p"): a}, 3)
    assert d.deltas == {"rx_prio3_pause": 12, "rx_prio3_bytes": 10**12 - 5} and d.status == "pass"
