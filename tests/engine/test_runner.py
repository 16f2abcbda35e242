"""The runner: hosts in parallel with isolated failures, confirmation for disruptive changes, resume without redoing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wizard.answers.model import parse_answers
from wizard.engine.events import EventBus
from wizard.engine.logs import HostLogs, Redactor
from wizard.engine.runner import Runner, RunOptions
from wizard.engine.state import StateStore
from wizard.engine.step import (
    Change,
    CheckItem,
    ClusterView,
    FileWrite,
    HostPlan,
    Impact,
    ProbeContext,
    RemoteCommand,
    Step,
)
from wizard.executors.base import CommandResult, HostUnreachable

ANSWERS = parse_answers(
    "version: 1\nhosts:\n" + "".join(f"  - name: h{i}\n    address: 10.0.0.{i}\n" for i in range(1, 4))
)


class FakeHost:
    """An in-memory host: files and a command log; optionally unreachable."""

    def __init__(self, name: str, *, unreachable: bool = False) -> None:
        self.name = name
        self.files: dict[str, str] = {}
        self.commands: list[str] = []
        self.unreachable = unreachable

    async def connect(self) -> None:
        if self.unreachable:
            raise HostUnreachable(self.name, "cannot connect to 10.0.0.9:22: Connection refused")

    async def run(
        self,
        argv: Any,
        *,
        sudo: bool = False,
        input: str | None = None,
        timeout_s: float | None = None,
        on_line: Any = None,
    ) -> CommandResult:
        await self.connect()
        command = " ".join(argv)
        self.commands.append(command)
        if argv[0] == "cat":
            content = self.files.get(argv[-1])
            return CommandResult(command, 0 if content is not None else 1, content or "", "", 0.0)
        return CommandResult(command, 0, "", "", 0.0)

    async def read_file(self, path: str, *, sudo: bool = False) -> str | None:
        await self.connect()
        self.commands.append(f"cat {path}")
        return self.files.get(path)

    async def write_file(self, path: str, content: str, **kwargs: Any) -> str | None:
        await self.connect()
        self.files[path] = content
        return None

    async def wait_until_back(self, *, timeout_s: float) -> None:
        return None

    async def check_new_connection(self) -> None:
        await self.connect()

    async def close(self) -> None:
        return None


class MarkerStep(Step):
    """Writes /etc/marker with the given impact; verified when the file holds the host's name."""

    id = "marker"
    title = "Marker"
    summary = "test stage"

    def __init__(self, impact: Impact = Impact.SAFE) -> None:
        self.impact = impact

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        return {"marker": await ctx.executor.read_file("/etc/marker")}

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        facts = view.stage_facts(host, self.id) or {}
        if facts.get("marker") == host:
            return HostPlan(stage=self.id, host=host, noop_reason="marker already written")
        change = Change(
            summary="write marker",
            impact=self.impact,
            files=[FileWrite(path="/etc/marker", content=host)],
            commands=[RemoteCommand(argv=["sync"])],
        )
        return HostPlan(stage=self.id, host=host, changes=[change])

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        ok = (view.stage_facts(host, self.id) or {}).get("marker") == host
        return [CheckItem(id="marker", title="marker", status="pass" if ok else "fail", evidence=str(ok))]


class Discovery(MarkerStep):
    id = "discovery"

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        await ctx.executor.connect()
        return {}

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        return HostPlan(stage=self.id, host=host, noop_reason="reads only")

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        return []


def make_runner(tmp_path: Path, hosts: dict[str, FakeHost], step: Step) -> tuple[Runner, list[Any]]:
    events: list[Any] = []
    bus = EventBus()
    bus.subscribe(events.append)
    store = StateStore(tmp_path)
    runner = Runner(ANSWERS, [Discovery(), step], hosts, store, bus, HostLogs(tmp_path / "logs", Redactor()))  # type: ignore[arg-type]
    return runner, events


async def test_one_unreachable_host_fails_alone_and_the_others_finish(tmp_path: Path) -> None:
    hosts = {"h1": FakeHost("h1"), "h2": FakeHost("h2", unreachable=True), "h3": FakeHost("h3")}
    runner, _ = make_runner(tmp_path, hosts, MarkerStep())
    code = await runner.run(RunOptions(stages=["discovery", "marker"]))
    assert code == 1
    store = StateStore(tmp_path)
    assert store.host("h1").stages["marker"].status == "done"
    assert store.host("h3").stages["marker"].status == "done"
    assert store.host("h2").stages["discovery"].status == "failed"
    assert "Connection refused" in store.host("h2").stages["discovery"].reason
    assert store.host("h2").stages["marker"].status == "skipped"


async def test_disruptive_changes_wait_for_yes_and_say_how_to_continue(tmp_path: Path) -> None:
    hosts = {n: FakeHost(n) for n in ("h1", "h2", "h3")}
    runner, _ = make_runner(tmp_path, hosts, MarkerStep(Impact.DISRUPTIVE))
    assert await runner.run(RunOptions(stages=["discovery", "marker"])) == 1
    record = StateStore(tmp_path).host("h1").stages["marker"]
    assert record.status == "pending"
    assert "--from marker --yes" in record.reason
    assert hosts["h1"].files == {}
    runner, _ = make_runner(tmp_path, hosts, MarkerStep(Impact.DISRUPTIVE))
    assert await runner.run(RunOptions(stages=["discovery", "marker"], allow_disruptive=True)) == 0
    assert hosts["h1"].files["/etc/marker"] == "h1"
    armed = [c for c in hosts["h1"].commands if c.startswith("systemd-run --unit=roce-wizard-revert-")]
    assert len(armed) == 1, "a disruptive change is applied with a revert armed on the host"
    unit = armed[0].split("--unit=")[1].split()[0]
    assert f"systemctl stop {unit}.timer" in hosts["h1"].commands, "and disarmed once a new connection works"


async def test_a_second_run_re_verifies_and_changes_nothing(tmp_path: Path) -> None:
    hosts = {n: FakeHost(n) for n in ("h1", "h2", "h3")}
    runner, _ = make_runner(tmp_path, hosts, MarkerStep())
    assert await runner.run(RunOptions(stages=["discovery", "marker"])) == 0
    before = list(hosts["h1"].commands)
    runner, events = make_runner(tmp_path, hosts, MarkerStep())
    assert await runner.run(RunOptions(stages=["discovery", "marker"])) == 0
    new = hosts["h1"].commands[len(before) :]
    assert "sync" not in new, "verified work must not be redone"
    assert "cat /etc/marker" in new, "it must re-check the host, not trust the state file"
    reasons = [e.data["reason"] for e in events if e.kind == "host_status" and e.data["status"] == "done"]
    assert any("marker already written" in r for r in reasons)


async def test_a_host_changed_behind_our_back_is_fixed_on_the_next_run(tmp_path: Path) -> None:
    hosts = {n: FakeHost(n) for n in ("h1", "h2", "h3")}
    runner, _ = make_runner(tmp_path, hosts, MarkerStep())
    await runner.run(RunOptions(stages=["discovery", "marker"]))
    hosts["h2"].files.clear()
    runner, _ = make_runner(tmp_path, hosts, MarkerStep())
    assert await runner.run(RunOptions(stages=["discovery", "marker"])) == 0
    assert hosts["h2"].files == {"/etc/marker": "h2"}
    assert hosts["h1"].commands.count("sync") == 1


def test_runs_started_within_one_second_back_up_into_different_folders(tmp_path: Path) -> None:
    # A run killed and resumed at once (an automatic retry) must not copy the wizard's own version of a file over
    # the original's backup: each run's backup folder is its own, even within the same second.
    ids = {make_runner(tmp_path, {}, MarkerStep())[0].run_id for _ in range(20)}
    assert len(ids) == 20
    assert all(i[:8].isdigit() and "T" in i for i in ids), ids  # still sorted by time first
