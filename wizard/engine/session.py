"""Builds a run from answers: executors per host (production SSH or the simulated lab on loopback), state, logs."""

from __future__ import annotations

import contextlib
import getpass
import os
import sys
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.answers.model import SUDO_PASSWORD_ENV, Answers
from wizard.answers.ranges import hosts_text
from wizard.engine.events import EventBus
from wizard.engine.logs import HostLogs, Redactor
from wizard.engine.runner import Runner
from wizard.engine.state import StateStore
from wizard.engine.step import Step
from wizard.errors import UsageError, WizardError
from wizard.executors.jump import Jump, Jumps, JumpSettings
from wizard.executors.ssh import SshExecutor, SshTarget
from wizard.paths import default_state_dir

LAB_TIME_SCALE_ENV = "ROCE_WIZARD_LAB_TIME_SCALE"
LAB_PROCESS_KEEPALIVE_S = 30.0  # SSH keepalive interval (x3) and connect timeout for hosts of a lab in its own process
LAB_PROCESS_HOSTS = 64  # more simulated hosts than this: the lab runs in its own process (wizard/lab/child.py)


@dataclass(slots=True)
class Session:
    """Everything one run needs; close it to release connections and log files."""

    answers: Answers
    runner: Runner
    store: StateStore
    executors: dict[str, SshExecutor]
    logs: HostLogs
    simulated: bool

    async def close(self) -> None:
        for executor in self.executors.values():
            await executor.close()
        await close_jumps(executor.target for executor in self.executors.values())
        self.logs.close()


def sudo_password(answers: Answers, *, interactive: bool) -> str | None:
    """The sudo password from the environment or a prompt; never from a file."""
    if answers.ssh.sudo != "password":
        return None
    value = os.environ.get(SUDO_PASSWORD_ENV)
    if value:
        return value
    if interactive and sys.stdin.isatty():
        return getpass.getpass("sudo password for the hosts (not stored): ")
    raise WizardError(f"ssh.sudo is 'password' but ${SUDO_PASSWORD_ENV} is not set and there is no terminal to prompt")


def production_targets(answers: Answers, password: str | None, *, jumps: bool = True) -> dict[str, SshTarget]:
    """Targets of the answers' hosts; ``jumps``: resolve bastions (ssh.jump_host, a host's jump_host, else the
    ProxyJump ~/.ssh/config gives its address), hosts behind one bastion sharing its connection."""
    ssh = answers.ssh
    bastions = Jumps(
        JumpSettings(ssh.known_hosts, ssh.accept_new_host_keys, ssh.connect_timeout_s, ssh.keepalive_interval_s),
        default_user=ssh.user,
        default_identity=ssh.identity_file,
    )
    return {
        host.name: SshTarget(
            name=host.name,
            address=host.address,
            port=host.port or ssh.port,
            username=host.user or ssh.user,
            identity_file=host.identity_file or ssh.identity_file,
            known_hosts=ssh.known_hosts,
            accept_new_host_keys=ssh.accept_new_host_keys,
            connect_timeout_s=ssh.connect_timeout_s,
            keepalive_interval_s=ssh.keepalive_interval_s,
            command_timeout_s=ssh.command_timeout_s,
            sudo_password=password,
            jump=bastions.for_host(
                host.jump_host if host.jump_host is not None else ssh.jump_host,
                host.address,
                host.port or ssh.port,
                host.user or ssh.user,
            )
            if jumps
            else None,
        )
        for host in answers.hosts
    }


async def close_jumps(targets: Iterable[SshTarget]) -> None:
    """Close the bastion connections of ``targets`` (after their hosts' connections), last hops of chains first."""
    seen: dict[int, Jump] = {}
    for target in targets:
        jump = target.jump
        while jump is not None:
            seen.setdefault(id(jump), jump)
            jump = jump.via
    for jump in sorted(seen.values(), key=lambda j: -j.depth()):
        with contextlib.suppress(Exception):
            await jump.close()


@contextlib.asynccontextmanager
async def simulated_targets(
    answers: Answers,
    faults: Sequence[str],
    password: str | None,
    state_dir: Path | None = None,
    profile: str = "reference",
    switch_os: str | None = None,
    lab_process: bool | None = None,
) -> AsyncIterator[dict[str, SshTarget]]:
    """Start the simulated lab for the answers' hosts and yield targets that reach it on 127.0.0.1.

    The answers' addresses appear only inside the simulation (as the hosts' management addresses); nothing
    is ever sent to them. ``lab_process`` runs the lab in a child process (wizard/lab/child.py); by default a lab
    of more than LAB_PROCESS_HOSTS hosts does, so that the lab's work has its own core and the wizard's memory is
    its own.
    """
    parsed = check_faults(answers, faults)
    # Tests shrink the simulated durations (package installs, reboots); the demo keeps them life-like.
    scale = lab_time_scale()
    disks = state_dir / "lab" if state_dir is not None else None
    separate = len(answers.hosts) > LAB_PROCESS_HOSTS if lab_process is None else lab_process
    lab = _make_lab(answers, faults, parsed, profile, switch_os, scale, separate)
    try:
        # The simulated hosts keep their disks next to the wizard's state, as real hosts keep theirs between runs.
        booted = await lab.boot(disks)
        if booted and disks is not None:
            who = hosts_text(booted)
            sys.stderr.write(
                f"[simulated] {who} booted from the disks saved in {disks} (--reset starts from bare hosts)\n"
            )
        targets = production_targets(answers, password, jumps=False)
        for name, target in targets.items():
            target.address, target.port = lab.endpoint(name)
            target.identity_file = str(lab.client_key_path)
            target.known_hosts = str(lab.known_hosts_path)
            target.accept_new_host_keys = False
            target.connect_timeout_s = min(target.connect_timeout_s, 5.0)
            if separate:
                # Hundreds of simulated hosts share one Python process: a burst (every port of a 1,024-host rail
                # pinging ff02::1 at once, 16 million reply lines) holds its loop longer than a real host's sshd
                # ever holds a keepalive or a handshake. Real hosts keep the answers' values.
                target.keepalive_interval_s = max(target.keepalive_interval_s, LAB_PROCESS_KEEPALIVE_S)
                target.connect_timeout_s = LAB_PROCESS_KEEPALIVE_S
        yield targets
    finally:
        await lab.stop()
    if lab.disk_error is not None and state_dir is not None:
        # The hosts' disks are part of the state directory: one that could not be saved ends the run the way
        # the wizard's own state does (the hosts refused every command after it).
        from wizard.engine.state import write_error

        raise write_error(state_dir, lab.disk_error, state_dir / "lab")
    if separate and getattr(lab, "peak_rss_mib", None) is not None:
        cpu = f" and used {lab.cpu_s:.0f} s of CPU" if getattr(lab, "cpu_s", None) is not None else ""
        sys.stderr.write(f"[simulated] the lab's own process peaked at {lab.peak_rss_mib:.0f} MiB{cpu}\n")


def _make_lab(answers: Answers, faults: Sequence[str], parsed: list, profile: str,  # type: ignore[type-arg]
              switch_os: str | None, scale: float, separate: bool) -> Any:  # fmt: skip
    """The in-process Lab or a LabProcess: both offer boot(disks), endpoint(), the key paths, stop()."""
    from wizard.lab import Lab
    from wizard.lab.lab_process import LabProcess, build_error

    names, mgmt = [h.name for h in answers.hosts], {h.name: h.address for h in answers.hosts}
    if separate:
        return LabProcess(profile, names, mgmt_addresses=mgmt, faults=list(faults), switch_os=switch_os,
                          switch_os_of=answers.switches.os_of, time_scale=scale)  # fmt: skip
    try:
        lab = Lab.for_profile(
            profile, names, mgmt_addresses=mgmt, faults=parsed, switch_os=switch_os,
            switch_os_of=answers.switches.os_of,
        )  # fmt: skip
    except ValueError as exc:
        raise build_error(str(exc)) from None
    lab.time_scale = scale
    lab.reboot_seconds = max(0.2, lab.reboot_seconds * scale)
    return lab


def lab_time_scale() -> float:
    """How much faster the simulated lab's clocks run (tests shrink them; the demo keeps them life-like)."""
    try:
        return max(0.0001, float(os.environ.get(LAB_TIME_SCALE_ENV, "1") or 1))
    except ValueError:
        raise UsageError(f"${LAB_TIME_SCALE_ENV} must be a number") from None


def check_faults(answers: Answers, faults: Sequence[str]) -> list:  # type: ignore[type-arg]
    """Parse --fault specs and check they name hosts of the answers; a bad spec is a usage error."""
    from wizard.lab import parse_fault

    try:
        parsed = [parse_fault(spec) for spec in faults]
    except ValueError as exc:
        raise UsageError(f"--fault: {exc}") from None
    from wizard.lab.degraded import SWITCH_SIDE_KINDS

    names = [h.name for h in answers.hosts]
    # a switch-side fault (degraded_uplink) names a leaf switch: the lab checks it against its switches
    unknown = sorted({f.host for f in parsed if f.kind not in SWITCH_SIDE_KINDS} - set(names))
    if unknown:
        raise UsageError(f"--fault names unknown host(s): {', '.join(unknown)} (hosts: {', '.join(names)})")
    return parsed


def demo_state_dir(answers: Answers, state_dir: Path | None, *, reset: bool) -> Path:
    """The demo's state directory; ``reset`` forgets saved progress and the simulated hosts' disks."""
    import shutil

    chosen = state_dir or default_state_dir(answers.cluster.name, demo=True)
    if reset and chosen.exists():
        ours = (chosen / "run.json").exists() or (chosen / "lab").exists()
        if not ours and {p.name for p in chosen.iterdir()} - {"lock"}:  # (a fresh directory holds only our lock)
            raise UsageError(f"--reset: {chosen} does not look like a roce-wizard state directory; not removing it")
        shutil.rmtree(chosen)
    return chosen


def open_session(
    answers: Answers,
    steps: Sequence[Step],
    targets: dict[str, SshTarget],
    state_dir: Path | None,
    bus: EventBus,
    *,
    simulated: bool,
    password: str | None,
) -> Session:
    store = StateStore(state_dir or default_state_dir(answers.cluster.name, demo=simulated))
    logs = HostLogs(store.logs_dir, Redactor([password] if password else []))
    executors: dict[str, SshExecutor] = {}
    runner = Runner(answers, steps, executors, store, bus, logs)  # type: ignore[arg-type]
    for name, target in targets.items():
        executors[name] = SshExecutor(target, listener=runner)
    return Session(answers, runner, store, executors, logs, simulated)


def chosen_hosts(answers: Answers, wanted: Sequence[str]) -> list[str]:
    """``--host`` values checked against the answers (all hosts when none is named)."""
    names = [h.name for h in answers.hosts]
    unknown = [h for h in wanted if h not in names]
    if unknown:
        raise UsageError(f"--host: unknown host(s) {', '.join(unknown)} (hosts: {', '.join(names)})")
    return list(wanted) or names


def session_for_args(args: Any, answers: Answers, **extra: Any) -> contextlib.AbstractAsyncContextManager[Session]:
    """``command_session`` for a subcommand's parsed ``--demo``, ``--fault``, ``--state-dir`` and ``--profile``, with
    every stage and the sudo password asked once (plan and the exports read hosts the same way)."""
    from steps import all_steps

    return command_session(
        answers,
        all_steps(),
        demo=args.demo,
        faults=args.fault,
        state_dir=args.state_dir,
        password=sudo_password(answers, interactive=True),
        profile=getattr(args, "profile", None) or "reference",
        switch_os=getattr(args, "switch_os", None),
        **extra,
    )


@contextlib.asynccontextmanager
async def command_session(
    answers: Answers,
    steps: Sequence[Step],
    *,
    demo: bool,
    faults: Sequence[str],
    state_dir: Path | None,
    password: str | None,
    hosts: Sequence[str] | None = None,
    bus: EventBus | None = None,
    profile: str = "reference",
    switch_os: str | None = None,
) -> AsyncIterator[Session]:
    """The session a one-off command (plan, check, rollback) works in: the simulated cluster with ``demo`` (its
    state kept where the demo keeps it), the real hosts otherwise; only ``hosts`` get executors when given.
    Connections and logs are closed on the way out."""
    async with contextlib.AsyncExitStack() as stack:
        if demo:
            state_dir = demo_state_dir(answers, state_dir, reset=False)
            simulated = simulated_targets(answers, faults, password, state_dir, profile, switch_os)
            targets = await stack.enter_async_context(simulated)
        else:
            targets = production_targets(answers, password)
        if hosts is not None:
            targets = {name: targets[name] for name in hosts}
        session = open_session(answers, steps, targets, state_dir, bus or EventBus(), simulated=demo, password=password)
        try:
            yield session
        finally:
            await session.close()
