"""Discovery's read-only probes as data: the first read of a fresh host is one batch per privilege plus only the
reads that depend on it, and recorded tables answer the probe with no host at all."""

from __future__ import annotations

import json
from pathlib import Path

from steps.discovery.gid_read import GID_VALUES, gid_attrs_command
from steps.discovery.infiniband import PKEYS, PORT_ATTRS
from steps.discovery.stage import GPU_LIST, Discovery
from tests.record_probes import EXAMPLE, TABLES, NoHost, first_read, table_executor, table_rows
from wizard.answers.model import load_answers
from wizard.engine.prefetch import Prefetched, explain_misses
from wizard.engine.step import ProbeContext
from wizard.executors.base import CommandResult, render_command

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-outputs"
NETDEVS = ["ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"]
# A bare host's GID slots in use: each port's link-local GID as RoCE v1 (0) and v2 (1), in the glob's order
GID_SLOTS = [(device, index) for device in ("rocep134s0f0", "rocep134s0f1", "rocep59s0f0", "rocep59s0f1")
             for index in (0, 1)]  # fmt: skip
# The reads a fresh host's first discovery cannot batch, in the order the probe runs them:
DEPENDENT = [
    # the type and netdev of each GID slot in use: which are in use is known only once the GID values have answered
    "grep -sH . "
    + " ".join(
        f"/sys/class/infiniband/{device}/ports/1/gid_attrs/{kind}/{index}"
        for device, index in GID_SLOTS
        for kind in ("types", "ndevs")
    ),  # fmt: skip
    # link state and driver per netdev: which netdevs are ConnectX ports is known only after lspci, ip and rdma link
    *(c for d in NETDEVS for c in (f"ethtool {d}", f"ethtool -i {d}")),
    # link counters of the RDMA ports' netdevs (same dependency), one grep for all, then ethtool -S per netdev
    "grep -sH . /proc/uptime "
    + " ".join(
        f"/sys/class/net/{d}/{f}"
        for d in NETDEVS
        for f in ("carrier_changes", "carrier_down_count", "carrier_up_count")
    ),  # fmt: skip
    *(f"ethtool -S {d}" for d in NETDEVS),
    # (no firmware query: `command -v mlxconfig mstconfig` in the first batch found neither on a bare host)
]
# Where the firmware tools are installed, one query per ConnectX card, with the tool the first batch found:
FIRMWARE = ["mlxconfig -d 0000:3b:00.0 -e q", "mstconfig -d 0000:3b:00.0 -e q"]


async def test_the_first_read_of_a_fresh_host_misses_only_the_per_port_and_per_card_reads() -> None:
    declared, reader, _ = await first_read("discovery", "server1", prepared=False)
    assert set(declared) <= set(reader.calls), "every declared command is one the probe runs on this host"
    assert reader.misses == DEPENDENT
    assert len(reader.calls) == len(declared) + len(DEPENDENT)  # nothing else went to the host


def test_every_miss_is_named_with_what_it_depends_on() -> None:
    text = explain_misses(DEPENDENT + FIRMWARE, Discovery.dependent_probes)
    assert "not declared by the stage" not in text
    assert text.startswith("the type and netdev of each GID slot in use, known only once the GID values of this read")
    assert " | per netdev of a ConnectX port (ethtool, ethtool -i, ethtool -S), known only once lspci" in text
    assert "per ConnectX card that lspci of this read found: mlxconfig -d 0000:3b:00.0 -e q" in text
    assert "where mlxconfig is not installed: mstconfig -d 0000:3b:00.0 -e q" in text


def test_an_undeclared_miss_is_named_as_such() -> None:
    assert explain_misses(["uptime"], Discovery.dependent_probes) == "not declared by the stage: uptime"


async def test_a_recorded_lab_table_answers_discovery_with_no_host() -> None:
    answers = load_answers(EXAMPLE)
    reader = table_executor(TABLES / "discovery-server1.json")
    facts = await Discovery().probe(ProbeContext(answers.hosts[0], reader, answers, {}))
    assert reader.misses == []
    assert (facts["hostname"], facts["kernel"], facts["os_version"]) == ("server1", "5.15.0-125-generic", "22.04")
    assert [
        (p["netdev"], p["rdma_device"], p["numa_node"], p["speed_mbps"], p["firmware"]) for p in facts["ports"]
    ] == [
        ("ens1f0np0", "rocep59s0f0", 0, 25000, "14.32.1010"),
        ("ens1f1np1", "rocep59s0f1", 0, 25000, "14.32.1010"),
        ("ens2f0np0", "rocep134s0f0", 1, 25000, "14.32.1010"),
        ("ens2f1np1", "rocep134s0f1", 1, 25000, "14.32.1010"),
    ]
    assert [g["nearest_nics"] for g in facts["gpus"]][:2] == [["rocep59s0f0", "rocep59s0f1"]] * 2
    assert len(facts["gpus"]) == 8 and facts["gpu_driver"] == "550.127.05"
    assert facts["ssh_interface"] == "eno1" and facts["lldp_status"] == "not installed"
    # the PCI paths glob over every device; the facts keep the endpoints' chains only (8 GPUs + 4 functions)
    assert len(facts["platform"]["chains"]) == 12
    assert facts["platform"]["chains"]["0000:3b:00.1"] == ["0000:35:01.0", "0000:36:00.0", "0000:37:02.0",
                                                           "0000:3b:00.1"]  # fmt: skip


def _real(tool: str, name: str) -> CommandResult:
    text = (REAL / tool / name).read_text(encoding="utf-8")
    return CommandResult("", 0, text.removesuffix("\n"), "", 0.0, text)


def _gid_reads(wide: CommandResult) -> dict[str, CommandResult]:
    """The two GID reads (steps/discovery/gid_read.py) answered from a capture of the one wide grep over all three
    trees: the first gets the slots in use, the second their types and netdevs (the capture's empty slots printed
    no attributes: EINVAL, as the kernel answers for them)."""
    lines = wide.raw_stdout.splitlines()
    values = "".join(
        f"{line}\n" for line in lines if "/gids/" in line and not line.endswith(":" + ":".join(["0000"] * 8))
    )
    attrs = "".join(f"{line}\n" for line in lines if "/gid_attrs/" in line)
    command = gid_attrs_command(values)
    assert command is not None
    return {GID_VALUES: CommandResult("", 0, values.rstrip("\n"), "", 0.0, values),
            command: CommandResult("", 0, attrs.rstrip("\n"), "", 0.0, attrs)}  # fmt: skip


def _not_captured() -> CommandResult:
    return CommandResult("", 1, "", "(not captured on this host)", 0.0, "")


def vmlab_table() -> dict[tuple[str, bool], CommandResult]:
    """Discovery of the project's Debian 12 Soft-RoCE VM (tests/vmlab; rows in real-outputs/SOURCES.md) from its
    captured real outputs; each other command the probe runs is answered as a failure (not captured)."""
    real = {
        "ip -j -d addr show": _real("ip_json", "vmlab-debian12-bond-rail-rxe.txt"),
        "rdma link show": _real("rdma_link", "vmlab-debian12-rxe-rail-and-bond.txt"),
        **_gid_reads(_real("sysfs_gids", "vmlab-debian12-rxe-first-4-slots.txt")),
        "ethtool bond0": _real("ethtool", "vmlab-debian12-bond0-2x100g.txt"),
        "lsmod": _real("lsmod", "vmlab-debian12-rxe-bonding.txt"),
        # a virtio VM has no Mellanox function: lspci -d 15b3: prints nothing and exits 0
        "lspci -D -nn -d 15b3:": CommandResult("", 0, "", "", 0.0, ""),
    }
    others = ["cat /etc/os-release", "uname -r", "hostname", "printenv SSH_CONNECTION",
              "grep -sH . /sys/bus/pci/devices/*/numa_node", "ethtool eth3", "ethtool -i eth3", "ethtool -i bond0",
              "ofed_info -s", "dpkg-query -W", render_command(GPU_LIST), PORT_ATTRS, PKEYS]  # fmt: skip
    table = {(c, False): r for c, r in real.items()} | {(c, False): _not_captured() for c in others}
    return table | {("true", True): CommandResult("", 0, "", "", 0.0, ""), ("lldpctl -f json", True): _not_captured()}


async def test_a_table_of_real_outputs_answers_discovery_of_a_soft_roce_vm() -> None:
    answers = load_answers(EXAMPLE)
    reader = Prefetched(NoHost(), vmlab_table())  # type: ignore[arg-type]
    facts = await Discovery().probe(ProbeContext(answers.hosts[0], reader, answers, {}))
    assert reader.misses == []
    assert facts["ports"] == [] and facts["gpus"] == [] and facts["platform"]["chains"] == {}
    soft = {p["netdev"]: p for p in facts["soft_rdma"]}
    assert sorted(soft) == ["bond0", "eth3"]
    assert (soft["bond0"]["rdma_device"], soft["bond0"]["speed_mbps"]) == ("rxe_bond0", 200000)
    assert soft["eth3"]["speed_mbps"] is None  # ethtool eth3 was not captured
    assert [g["index"] for g in soft["bond0"]["gids"] if g["version"] == "v2" and g["ipv4"]] == [1]
    assert facts["modules"] == ["bonding", "ib_core", "ib_uverbs", "rdma_cm", "rdma_rxe"]
    assert facts["other_interfaces"]["bond0"] == ["10.78.0.1/24"] and facts["other_interfaces"]["eth3"] == [
        "10.79.0.1/24"
    ]


def test_recorded_tables_hold_each_command_once_with_its_result() -> None:
    data = json.loads((TABLES / "discovery-server1.json").read_text(encoding="utf-8"))
    keys = [(row["command"], row["sudo"]) for row in data["commands"]]
    assert (
        len(keys) == len(set(keys)) == 37
    )  # with `command -v` finding no firmware tool, the 2 IB port reads and 2 GID reads
    assert table_rows({("uname -r", False): CommandResult("uname -r", 0, "6.1", "", 0.0, "6.1\n")}) == [
        {"command": "uname -r", "sudo": False, "exit": 0, "stdout": "6.1\n", "stderr": ""}
    ]
