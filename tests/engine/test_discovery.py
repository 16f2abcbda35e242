"""Discovery against the simulated reference pair: every fact the later stages rely on, and what it flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from steps.discovery.facts import DiscoveryFacts
from steps.discovery.stage import Discovery, describe_host
from wizard.answers.model import load_answers
from wizard.engine.events import EventBus
from wizard.engine.logs import HostLogs, Redactor
from wizard.engine.runner import Runner, RunOptions
from wizard.engine.state import StateStore
from wizard.executors.ssh import SshExecutor, SshTarget
from wizard.lab import Lab, parse_fault
from wizard.paths import example_answers


async def discover(tmp_path: Path, *faults: str) -> tuple[int, dict[str, DiscoveryFacts], StateStore, list[Any]]:
    answers = load_answers(example_answers())
    lab = Lab.reference(["server1", "server2"], faults=[parse_fault(f) for f in faults])
    lab.time_scale = 0.01
    await lab.start()
    events: list[Any] = []
    bus = EventBus()
    bus.subscribe(events.append)
    store = StateStore(tmp_path)
    executors: dict[str, SshExecutor] = {}
    runner = Runner(answers, [Discovery()], executors, store, bus, HostLogs(tmp_path / "logs", Redactor()))
    for name in lab.names:
        host, port = lab.endpoint(name)
        target = SshTarget(name, host, port, "ubuntu", str(lab.client_key_path), str(lab.known_hosts_path))
        executors[name] = SshExecutor(target, listener=runner)
    try:
        code = await runner.run(RunOptions(stages=["discovery"]))
    finally:
        for ex in executors.values():
            await ex.close()
        await lab.stop()
    facts = {h: DiscoveryFacts.model_validate(f["discovery"]) for h, f in runner.facts.items() if "discovery" in f}
    return code, facts, store, events


async def test_the_reference_host_is_discovered_completely(tmp_path: Path) -> None:
    code, facts, store, _ = await discover(tmp_path)
    assert code == 0
    host = facts["server1"]
    assert (host.os_id, host.os_version, host.kernel) == ("ubuntu", "22.04", "5.15.0-125-generic")
    assert host.simulated is True
    assert host.ssh_interface == "eno1" and host.ssh_server_address == "10.0.0.11"
    ports = host.rdma_ports()
    assert [p.netdev for p in ports] == ["ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"]
    assert [p.rdma_device for p in ports] == ["rocep59s0f0", "rocep59s0f1", "rocep134s0f0", "rocep134s0f1"]
    assert {p.rdma_port for p in ports} == {1}, "ConnectX-4 Lx has one RDMA port per PCI function"
    assert [p.numa_node for p in ports] == [0, 0, 1, 1]
    assert {p.model for p in ports} == {"ConnectX-4 Lx"} and {p.device_id for p in ports} == {"1015"}
    assert {p.speed_mbps for p in ports} == {25000} and {p.mtu for p in ports} == {1500}
    assert {p.firmware for p in ports} == {"14.32.1010"} and {p.driver for p in ports} == {"mlx5_core"}
    assert [g.version for g in ports[0].gids] == ["v1", "v2"], "only the fe80 pair before any IPv4 is set"
    assert ports[0].roce_v2_ipv4_gid is None
    assert len(host.gpus) == 8 and host.gpus[0].memory_mib == 46068 and host.gpu_driver == "550.127.05"
    assert host.gpus[0].nearest_nics == ["rocep59s0f0", "rocep59s0f1"]
    assert host.gpus[7].nearest_nics == ["rocep134s0f0", "rocep134s0f1"]
    assert host.ofed_stack is None and "mlx5_ib" in host.modules and "nvidia_peermem" not in host.modules
    assert store.host("server2").stages["discovery"].status == "done"


async def test_checks_and_differences_name_host_and_port(tmp_path: Path) -> None:
    code, facts, store, _ = await discover(tmp_path, "server2:old_firmware", "server2:link_down=ens2f1np1")
    assert code == 1
    record = store.host("server2").stages["discovery"]
    assert record.status == "failed" and "ens2f1np1: no link" in record.reason
    diff = next(c for c in record.checks if c.id == "diff_firmware")
    assert diff.status == "warn" and "14.20.1010" in diff.evidence and "server1: 14.32.1010" in diff.evidence


async def test_refused_sudo_is_a_failed_check_with_the_fix(tmp_path: Path) -> None:
    code, facts, store, _ = await discover(tmp_path, "server1:sudo_refused")
    sudo = next(c for c in store.host("server1").stages["discovery"].checks if c.id == "sudo")
    assert sudo.status == "fail" and "password is required" in sudo.evidence
    assert store.host("server2").stages["discovery"].status == "done"


async def test_the_summary_shows_ports_and_gpu_affinity(tmp_path: Path) -> None:
    _, facts, _, events = await discover(tmp_path)
    lines = describe_host(facts["server1"])
    assert lines[0].startswith("Ubuntu 22.04.5 LTS (5.15.0-125-generic), inbox driver, SSH via eno1")
    assert any("ens2f1np1" in ln and "rocep134s0f1/1" in ln and "numa 1" in ln for ln in lines)
    assert any(ln.strip().startswith("GPU 0,1,2,3 nearest NIC: rocep59s0f0") for ln in lines)
    assert any(e.kind == "summary" and e.data["host"] == "server2" for e in events)
