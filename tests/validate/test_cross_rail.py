"""bwtest --cross-rail: rail i of one host to every rail j != i of another, through the rails-16 leaves and spine.

Behaviour modelled in the lab (tests/lab/test_policy_routing_sim.py): RoCE resolves the peer's GID address over
the GID's own port (drivers/infiniband/core/addr.c), so cross-rail QPs need the per-rail table and rule; without
them perftest fails with "Failed to modify QP .. to RTR" (perftest write_bw.c, perftest_resources.c).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import yaml

from tests.validate.labkit import lab_executors, quick_start  # noqa: F401 - the fixture applies to this module
from wizard.answers.model import Answers, load_answers, parse_answers
from wizard.answers.profiles import demo_answers
from wizard.cli import bwtest as cli
from wizard.engine.session import production_targets
from wizard.errors import UsageError
from wizard.executors.ssh import SshExecutor
from wizard.lab import Lab, packages
from wizard.paths import example_answers
from wizard.validate.cross_rail import NO_SPINE, CrossRailPlan, judge, plan, skip_reason
from wizard.validate.model import RailEnd, RailResult, Report
from wizard.validate.run import Options, Validation

RAILS = 8
NETDEVS = ["enp24s0np0", "enp64s0np0", "enp79s0np0", "enp94s0np0", "enp154s0np0", "enp192s0np0", "enp206s0np0",
           "enp220s0np0"]  # fmt: skip


def rails16_answers(hosts: int = 2) -> Answers:
    doc = yaml.safe_load(demo_answers("rails-16").read_text())
    doc["hosts"] = doc["hosts"][:hosts]
    return parse_answers(yaml.safe_dump(doc))


def netplan(k: int, policy: bool) -> str:
    """All eight rails as stage network writes them on the switched fabric (with or without the policy)."""
    lines = ["network:", "  version: 2", "  ethernets:"]
    for i, dev in enumerate(NETDEVS):
        lines += [f"    {dev}:", "      mtu: 9000", "      addresses:", f"        - 10.10.{i}.{k}/24"]
        if policy:
            lines += ["      routes:", f"        - to: 10.10.{i}.0/24", f"          table: {100 + i}"]
            for j in range(RAILS):
                if j != i:
                    lines += [f"        - to: 10.10.{j}.0/24", f"          via: 10.10.{i}.254"]
                    lines += [f"          table: {100 + i}"]
            lines += ["      routing-policy:", f"        - from: 10.10.{i}.{k}", f"          table: {100 + i}"]
    return "\n".join(lines) + "\n"


@asynccontextmanager
async def rails16(without_policy: tuple[str, ...] = ()) -> AsyncIterator[tuple[Answers, dict[str, SshExecutor]]]:
    """Two rails-16 hosts as stages ofed, network and roce leave them, reached over SSH."""
    answers = rails16_answers()
    lab = Lab.rails16([h.name for h in answers.hosts], mgmt_addresses={h.name: h.address for h in answers.hosts})
    lab.time_scale = 0.05
    for host in lab.hosts.values():
        for pkg in packages.DOCA:
            packages.install_files(host, pkg)
    await lab.start()
    for k, host in enumerate(lab.hosts.values(), start=1):
        host.fs.install("/etc/netplan/60-roce-wizard.yaml", netplan(k, host.name not in without_policy), 0o600)
        assert (await host.run("netplan apply")).status == 0
        for dev in NETDEVS:
            assert (await host.run(f"mlnx_qos -i {dev} --trust dscp --pfc 0,0,0,1,0,0,0,0")).status == 0
    executors = {}
    for name, target in production_targets(answers, None).items():
        target.address, target.port = lab.endpoint(name)
        target.identity_file, target.known_hosts = str(lab.client_key_path), str(lab.known_hosts_path)
        executors[name] = SshExecutor(target)
    try:
        yield answers, executors
    finally:
        for ex in executors.values():
            await ex.close()
        await lab.stop()


async def cross_report(without_policy: tuple[str, ...] = (), events: list | None = None) -> Report:
    seen = events if events is not None else []
    async with rails16(without_policy) as (answers, executors):
        options = Options(sweep=False, latency=False, nccl=False, cross_rail=CrossRailPlan(seconds=0.2))
        return await Validation(answers, executors, simulated=True, options=options,
                                on_event=lambda kind, data: seen.append((kind, data))).run()  # fmt: skip


def test_pair_option_takes_two_different_hosts() -> None:
    assert plan("gpu-003, gpu-001", 2.0) == CrossRailPlan(("gpu-003", "gpu-001"), 2.0)
    assert plan(None, 3.0).pair is None
    for bad in ("gpu-001", "gpu-001,gpu-001", "a,b,c"):
        with pytest.raises(UsageError, match="--pair takes two different host names"):
            plan(bad, 1.0)


def test_only_a_routed_fabric_has_cross_rail_paths() -> None:
    assert skip_reason(load_answers(example_answers())) == NO_SPINE
    assert skip_reason(rails16_answers()) is None


def end(host: str, rail: int) -> RailEnd:
    return RailEnd(host=host, netdev=NETDEVS[rail], device=f"dev{rail}", ipv4=f"10.10.{rail}.1",
                   network=f"10.10.{rail}.0/24", speed_gbps=400.0)  # fmt: skip


def test_a_run_without_result_names_the_side_whose_qp_could_not_reach_rtr() -> None:
    x = RailResult(rail=1, peer_rail=2, mode="cross", client=end("gpu-001", 1), server=end("gpu-002", 2))
    x.expected_gbps = 400.0
    judge(x, "Failed to modify QP 851 to RTR\n Unable to Connect the HCA's through the link\n", "", ("10.10.1.254",
          "10.10.2.254"))  # fmt: skip
    assert x.status == "fail"
    assert x.cause is not None and x.cause.startswith(
        "gpu-001 enp64s0np0 (10.10.1.1) cannot reach gpu-002 enp79s0np0 (10.10.2.1) through the spine"
    )
    assert "gpu-001's rail 1 policy routing" in x.cause
    assert x.fix is not None and "ip route get 10.10.2.1 from 10.10.1.1" in x.fix and "via 10.10.1.254" in x.fix
    y = x.model_copy(update={"status": "skip", "cause": None, "fix": None})
    judge(y, " Failed to exchange data between server and clients\n", "Failed to modify QP 852 to RTR\n Unable to "
          "Connect the HCA's through the link\n", ("10.10.1.254", "10.10.2.254"))  # fmt: skip
    assert y.cause is not None and y.cause.startswith("gpu-002 enp79s0np0 (10.10.2.1) cannot reach gpu-001")


def test_a_slow_path_through_the_spine_fails_against_the_line_rate() -> None:
    x = RailResult(rail=0, peer_rail=3, mode="cross", client=end("gpu-001", 0), server=end("gpu-002", 3))
    x.gbps, x.expected_gbps = 200.0, 400.0
    judge(x, "", "")
    assert x.status == "fail" and "200.0 of 400 Gb/s through the spine" in (x.cause or "")
    x.gbps = 380.0
    judge(x, "", "")
    assert x.status == "pass"


async def test_the_reference_back_to_back_pair_skips_cross_rail_with_one_line() -> None:
    seen: list = []
    async with lab_executors() as (_lab, answers, executors):
        options = Options(sweep=False, latency=False, nccl=False, cross_rail=CrossRailPlan(seconds=0.2))
        report = await Validation(answers, executors, simulated=True, options=options,
                                  on_event=lambda kind, data: seen.append((kind, data))).run()  # fmt: skip
    assert report.cross_rail == [] and report.matrix == [] and report.together == []
    phases = [d["text"] for k, d in seen if k == "phase" and d["name"] == "cross_rail"]
    assert phases == [f"cross-rail: skipped: {NO_SPINE}"]
    assert report.verdict == "pass", report.causes


@pytest.mark.slow  # 56 ib_write_bw runs over SSH on a two-host rails-16 lab
async def test_every_rail_reaches_every_other_rail_of_the_peer_through_the_spine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list = []
    report = await cross_report(events=seen)
    assert [(x.rail, x.peer_rail) for x in report.cross_rail] == [
        (i, j) for i in range(RAILS) for j in range(RAILS) if i != j
    ]
    assert all(x.mode == "cross" and x.status == "pass" for x in report.cross_rail), report.causes
    assert all(x.gbps and x.gbps >= 0.9 * 400 for x in report.cross_rail)
    assert sum(1 for k, _ in seen if k == "rail") == 56
    assert report.verdict == "pass"
    cli.print_summary(report)
    assert "PASS  cross rail 1 -> rail 2: gpu-001 enp64s0np0 -> gpu-002 enp79s0np0: " in capsys.readouterr().out


@pytest.mark.slow
async def test_without_the_servers_rules_every_cross_rail_run_fails_naming_its_port() -> None:
    report = await cross_report(without_policy=("gpu-002",))
    assert report.verdict == "fail"
    assert all(x.status == "fail" and x.gbps is None for x in report.cross_rail)
    first = report.cross_rail[0]
    assert (first.rail, first.peer_rail) == (0, 1)
    assert first.cause is not None and first.cause.startswith(
        "gpu-002 enp64s0np0 (10.10.1.2) cannot reach gpu-001 enp24s0np0 (10.10.0.1) through the spine"
    )
    assert any(c.startswith("cross-rail 0->1: gpu-002 enp64s0np0") for c in report.causes)
