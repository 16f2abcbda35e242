"""A run reads each host's saved facts when it first needs them: bwtest on 1,024 hosts never needs them, and
loading them all when the run opened held tens of megabytes before a single test ran."""

from __future__ import annotations

from pathlib import Path

from wizard.engine.state import StateStore
from wizard.engine.stored_facts import StoredFacts


def test_nothing_is_read_until_a_host_is_asked_for_and_then_only_that_host(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state")
    for name in ("h1", "h2", "h3"):
        store.save_facts(name, {"discovery": {"hostname": name}})
    facts = StoredFacts(store, ["h1", "h2", "h3"])

    assert list(facts) == ["h1", "h2", "h3"] and len(facts) == 3 and "h2" in facts and "h9" not in facts
    assert facts.loaded() == 0
    assert facts["h2"]["discovery"]["hostname"] == "h2"
    assert facts.get("h9") is None
    assert facts.loaded() == 1


def test_a_host_without_saved_facts_starts_empty_and_what_the_run_sets_is_kept(tmp_path: Path) -> None:
    facts = StoredFacts(StateStore(tmp_path / "state"), ["h1"])
    facts.setdefault("h1", {})["network"] = {"mtu": 9000}
    facts["h4"] = {"discovery": {}}
    assert facts["h1"] == {"network": {"mtu": 9000}}
    assert list(facts) == ["h1", "h4"]
    assert dict(facts.items())["h4"] == {"discovery": {}}


async def test_a_runner_opened_on_a_thousand_hosts_state_holds_none_of_their_facts(tmp_path: Path) -> None:
    from steps import all_steps
    from wizard.answers.model import parse_answers
    from wizard.answers.profiles import demo_answers
    from wizard.engine.events import EventBus
    from wizard.engine.logs import HostLogs, Redactor
    from wizard.engine.runner import Runner

    answers = parse_answers(demo_answers("rails-16").read_text())
    store = StateStore(tmp_path / "state")
    for h in answers.hosts:
        store.save_facts(h.name, {"network": {"cluster": {"hosts": [x.name for x in answers.hosts]}}})
    runner = Runner(answers, all_steps(), {}, store, EventBus(), HostLogs(tmp_path / "logs", Redactor()))
    assert runner.facts.loaded() == 0
    assert runner.view().facts[answers.hosts[0].name]["network"]["cluster"]["hosts"][0] == answers.hosts[0].name


async def test_commands_outside_a_stage_leave_the_host_records_on_disk(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """bwtest's thousands of tests run through the runner's listener but in no stage: nothing reads the command in
    flight then, and loading each host's record (its checks, ~200 KB as objects) to note it cost 15 MiB at 96 hosts."""
    from steps import all_steps
    from wizard.answers.model import parse_answers
    from wizard.answers.profiles import demo_answers
    from wizard.engine.events import EventBus
    from wizard.engine.logs import HostLogs, Redactor
    from wizard.engine.runner import Runner

    answers = parse_answers(demo_answers("rails-16").read_text())
    store = StateStore(tmp_path / "state")
    runner = Runner(answers, all_steps(), {}, store, EventBus(), HostLogs(tmp_path / "logs", Redactor()))
    loaded: list[str] = []
    original = store.host
    monkeypatch.setattr(store, "host", lambda name: loaded.append(name) or original(name))
    host = answers.hosts[0].name
    runner.command_started(host, "ib_write_bw -d mlx5_0")
    runner.command_finished(host, "ib_write_bw -d mlx5_0", None, None)
    assert loaded == []
    runner._stage = "roce"  # inside a stage the record names the command, for an interruption to report
    runner.command_started(host, "sysctl -w net.ipv4.tcp_ecn=1")
    assert loaded == [host] and store.host(host).command_in_flight == "sysctl -w net.ipv4.tcp_ecn=1"
