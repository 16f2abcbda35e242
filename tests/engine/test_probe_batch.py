"""Read-only probes in one exec: the same results as one exec each, one SSH exec, each probe still logged alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.test_ssh_executor import executor, lab, start_lab  # noqa: F401 - the lab fixture
from wizard.answers.model import parse_answers
from wizard.engine.events import Event, EventBus
from wizard.engine.logs import HostLogs, Redactor
from wizard.engine.runner import Runner
from wizard.engine.state import StateStore
from wizard.executors import ConnectionLost, SudoRefused
from wizard.executors.batch import new_token, script, shell_argv, split
from wizard.lab import Lab

PROBES: list[Any] = [
    ["uname", "-r"],
    ["cat", "/etc/os-release"],
    ["cat", "/no/such/file"],  # fails with its own status and stderr
    ["printf", "no newline at the end"],
    ["printf", "two\\n\\nblank lines\\n\\n"],
    "echo to-stderr >&2; exit 3",
    ["lspci", "-D", "-nn", "-d", "15b3:"],
]


def test_a_split_batch_gives_each_command_its_exact_output_and_status() -> None:
    token = new_token()
    stdout = f"\n{token} 0\nabc\n\n{token} 0 0\n\n{token} 1\nno-newline\n{token} 1 2\n\n{token} 2\npartial"
    stderr = f"\n{token} 0\n\n{token} 0 end\n\n{token} 1\noops\n\n{token} 1 end\n\n{token} 2\n"
    parts = split(stdout, stderr, token, 4)
    assert [(p.exit_status, p.stdout, p.stderr) for p in parts] == [
        (0, "abc\n", ""),
        (2, "no-newline", "oops\n"),
        (None, "partial", ""),  # the batch died here
        (None, "", ""),
    ]


def test_output_that_looks_like_a_delimiter_cannot_end_a_command_early() -> None:
    token = new_token()
    text = script([["echo", "@@roce-wizard-0000000000000000 0 0"]])
    assert token not in text and shell_argv(token)[-1] == token  # an argument, kept in a variable, never printed
    assert text.startswith('T="$1"\n')


def test_the_same_probes_make_the_same_script_whatever_the_token() -> None:
    """So a fleet's hosts all run one text (the simulated lab parses it once, not once per host and run)."""
    assert script(PROBES) == script(list(PROBES))
    assert shell_argv(new_token()) != shell_argv(new_token())


async def test_a_batch_returns_what_one_exec_per_command_returns(lab: Lab) -> None:  # noqa: F811
    ex = executor(lab)
    try:
        alone = [await ex.run(p) for p in PROBES]
        batched = await ex.run_batch(PROBES)
    finally:
        await ex.close()
    for one, many in zip(alone, batched, strict=True):
        assert (many.command, many.exit_status, many.stdout, many.stderr, many.raw_stdout) == (
            one.command, one.exit_status, one.stdout, one.stderr, one.raw_stdout,
        )  # fmt: skip


async def test_a_batch_is_one_exec_and_the_log_still_shows_each_probe(lab: Lab) -> None:  # noqa: F811
    class Listener:
        def __init__(self) -> None:
            self.events: list[tuple[str, ...]] = []

        def command_started(self, host: str, command: str) -> None:
            self.events.append(("start", command))

        def output_line(self, host: str, stream: str, line: str) -> None:
            self.events.append((stream, line))

        def command_finished(self, host: str, command: str, result: Any, error: str | None) -> None:
            self.events.append(("end", command, str(result.exit_status if result else error)))

    ex = executor(lab)
    ex.listener = Listener()  # type: ignore[assignment]
    try:
        await ex.run_batch(PROBES[:3])
    finally:
        await ex.close()
    events = ex.listener.events  # type: ignore[attr-defined]
    assert [e for e in events if e[0] in ("start", "end")] == [
        ("start", "uname -r"), ("end", "uname -r", "0"),
        ("start", "cat /etc/os-release"), ("end", "cat /etc/os-release", "0"),
        ("start", "cat /no/such/file"), ("end", "cat /no/such/file", "1"),
    ]  # fmt: skip
    assert ("stderr", "cat: /no/such/file: No such file or directory") in events
    assert not any("@@roce-wizard" in " ".join(e) for e in events)


async def test_a_batch_cut_off_mid_way_is_a_lost_connection_naming_the_probe(lab: Lab) -> None:  # noqa: F811
    ex = executor(lab)
    real_exec = ex._exec

    async def dies_after_the_first_probe(*args: Any, **kwargs: Any) -> Any:
        result = await real_exec(*args, **kwargs)
        cut = result.raw_stdout.index("\n", result.raw_stdout.index(" 0 0\n") + 1)  # shell killed after probe 0
        return type(result)(result.command, 137, "", "", 0.1, result.raw_stdout[: cut + 1])

    ex._exec = dies_after_the_first_probe  # type: ignore[method-assign]
    try:
        await ex.run_batch([["true"], ["uname", "-r"]])
    except ConnectionLost as exc:
        assert "before 'uname -r' finished" in exc.detail
    else:
        raise AssertionError("a batch whose shell died must not return results")
    finally:
        await ex.close()


async def test_a_probes_output_from_a_batch_is_one_event_and_each_line_is_logged(lab: Lab, tmp_path: Path) -> None:  # noqa: F811
    # One event per probe and stream (not one per line: at 256 hosts those were most of the control machine's CPU);
    # the log file still has every line, prefixed and redacted, as a probe run alone would have written it.
    answers = parse_answers("version: 1\nhosts:\n  - name: server1\n    address: 10.0.0.1\n")
    bus = EventBus()
    events: list[Event] = []
    bus.subscribe(events.append)
    logs = HostLogs(tmp_path / "logs", Redactor(["Ubuntu"]))
    ex = executor(lab)
    runner = Runner(answers, [], {"server1": ex}, StateStore(tmp_path / "state"), bus, logs)
    ex.listener = runner
    try:
        await ex.run_batch([["cat", "/etc/os-release"], ["printf", "a\\nb\\n"]])
    finally:
        await ex.close()
        logs.close()
    outputs = [e.data for e in events if e.kind == "output"]
    assert [o["lines"] for o in outputs][1] == ["a", "b"]
    assert len(outputs) == 2, "one event per probe, however many lines it printed"
    assert not any("Ubuntu" in line for o in outputs for line in o["lines"]), "secrets are redacted in events"
    log = (tmp_path / "logs" / "server1.log").read_text()
    assert "  | a\n" in log and "  | b\n" in log
    assert 'NAME="******' in log and "Ubuntu" not in log


async def test_a_sudo_batch_goes_straight_to_sudo_and_a_refusal_reads_as_a_lone_sudo_command_would() -> None:
    # No `sudo -n true` round trip in front of the first sudo batch; where sudo refuses, the refusal is worded by the
    # usual proof (and the script's stdin, which sudo never read, is no error of its own).
    faulty = await start_lab("server2:sudo_refused")
    ok, refused = executor(faulty, "server1"), executor(faulty, "server2")
    commands: list[str] = []
    for ex in (ok, refused):
        real = ex._exec

        async def counted(shown: str, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            commands.append(shown)
            return await _real(shown, *args, **kwargs)

        ex._exec = counted  # type: ignore[method-assign]
    try:
        first, second = await ok.run_batch([["id", "-u"], ["cat", "/proc/cmdline"]], sudo=True)
        assert (first.command, first.stdout) == ("sudo id -u", "0")
        assert len(commands) == 1 and "sudo -n true" not in commands
        await ok.run(["id", "-u"], sudo=True)  # sudo is known to work now: no proof later either
        assert "sudo -n true" not in commands
        commands.clear()
        with pytest.raises(SudoRefused, match="a password is required"):
            await refused.run_batch([["id", "-u"]], sudo=True)
        assert commands[1:] == ["sudo -n true"], "the proof that words the refusal"
    finally:
        await ok.close()
        await refused.close()
        await faulty.stop()
