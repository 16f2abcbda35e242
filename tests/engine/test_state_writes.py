"""State writes are coalesced: probes are saved once per host per stage, changes once per command."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from wizard.cli.main import main
from wizard.engine import state as state_module


def count_writes(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    written: Counter[str] = Counter()
    real = state_module.atomic_write

    def counting(path: Path, text: str, *, durable: bool = True) -> None:
        written[f"{path.parent.name}/{path.name}"] += 1
        written[f"durable:{path.parent.name}/{path.name}"] += durable
        real(path, text, durable=durable)

    monkeypatch.setattr(state_module, "atomic_write", counting)
    return written


def test_discovery_saves_each_host_a_few_times_not_twice_per_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.01")
    written = count_writes(monkeypatch)
    assert main(["--demo", "--only", "discovery", "--json", "--state-dir", str(tmp_path)]) == 0
    commands = [line for line in capsys.readouterr().out.splitlines() if '"event": "command"' in line]
    per_host_commands = len(commands) / 2
    assert per_host_commands > 20  # discovery reads a host with many probes ...
    for host in ("server1", "server2"):
        host_saves = sum(n for name, n in written.items() if name.endswith(f"{host}.json") and ":" not in name)
        # ... and saves its record and facts a handful of times: running, facts, done (was 2 per probe)
        assert host_saves <= 6, (host, dict(written))
        # none of them waits for the disk: reading a host changes nothing a power cut could lose for good
        assert written[f"durable:hosts/{host}.json"] == 0 and written[f"durable:facts/{host}.json"] == 0


def test_a_change_still_records_the_command_in_flight_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wizard.engine.runner import Runner

    seen: list[str | None] = []
    real_started = Runner.command_started

    def started(self: Runner, host: str, command: str) -> None:
        real_started(self, host, command)
        if host in self._changing:  # what a kill -9 right now would leave on disk
            seen.append(self.store._read(self.store._host_path(host)).get("command_in_flight"))

    monkeypatch.setattr(Runner, "command_started", started)
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.01")
    assert main(["--demo", "--only", "discovery,ofed", "--yes", "--state-dir", str(tmp_path)]) == 0
    assert seen and all(command for command in seen)


def test_what_a_change_did_is_written_durably(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCE_WIZARD_LAB_TIME_SCALE", "0.01")
    written = count_writes(monkeypatch)
    assert main(["--demo", "--only", "discovery,ofed", "--yes", "--state-dir", str(tmp_path)]) == 0
    # every command of the ofed changes records itself (in flight, then done) with an fsync
    assert written["durable:hosts/server1.json"] >= 4
