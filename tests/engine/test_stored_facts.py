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
