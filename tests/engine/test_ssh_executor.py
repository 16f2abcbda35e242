"""The SSH executor against the simulated lab's real SSH server: streaming, sudo, files, timeouts, dead links."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import pytest

from wizard.executors import (
    AuthenticationFailed,
    CommandTimeout,
    ConnectionLost,
    HostKeyRejected,
    HostUnreachable,
    SudoRefused,
)
from wizard.executors.ssh import SshExecutor, SshTarget
from wizard.lab import Lab, parse_fault


async def start_lab(*faults: str) -> Lab:
    lab = Lab.reference(["server1", "server2"], faults=[parse_fault(f) for f in faults])
    lab.time_scale = 0.001
    lab.reboot_seconds = 0.3
    await lab.start()
    return lab


def executor(lab: Lab, name: str = "server1", **overrides: object) -> SshExecutor:
    host, port = lab.endpoint(name)
    target = SshTarget(
        name=name,
        address=host,
        port=port,
        username="ubuntu",
        identity_file=str(lab.client_key_path),
        known_hosts=str(lab.known_hosts_path),
        connect_timeout_s=5,
        keepalive_interval_s=1,
    )
    for key, value in overrides.items():
        setattr(target, key, value)
    return SshExecutor(target)


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    lab = await start_lab()
    try:
        yield lab
    finally:
        await lab.stop()


async def test_output_is_streamed_line_by_line_with_its_stream(lab: Lab) -> None:
    ex = executor(lab)
    seen: list[tuple[str, str]] = []
    result = await ex.run(["lspci", "-D", "-nn", "-d", "15b3:"], on_line=lambda s, line: seen.append((s, line)))
    assert result.ok
    assert [line for s, line in seen if s == "stdout"] == result.stdout.splitlines()
    assert len(result.stdout.splitlines()) == 4
    missing = await ex.run(["no-such-tool"], on_line=lambda s, line: seen.append((s, line)))
    assert missing.exit_status == 127
    assert ("stderr", "bash: line 1: no-such-tool: command not found") in seen
    await ex.close()


async def test_one_connection_is_reused_for_many_commands(lab: Lab) -> None:
    ex = executor(lab)
    await ex.run(["hostname"])
    first = ex._conn
    for _ in range(5):
        assert (await ex.run(["uname", "-r"])).stdout == "5.15.0-125-generic"
    assert ex._conn is first
    await ex.close()


async def test_arguments_are_quoted_not_interpreted(lab: Lab) -> None:
    ex = executor(lab)
    result = await ex.run(["echo", "a; rm -rf /", "$(hostname)", "*"])
    assert result.stdout == "a; rm -rf / $(hostname) *"
    await ex.close()


async def test_a_command_past_its_time_limit_is_stopped_and_the_host_stays_usable(lab: Lab) -> None:
    lab.time_scale = 1.0
    ex = executor(lab)
    with pytest.raises(CommandTimeout, match="server1: 'sleep 30' still running after 0.5s"):
        await ex.run(["sleep", "30"], timeout_s=0.5)
    assert (await ex.run(["hostname"])).stdout == "server1"
    await ex.close()


async def test_a_connection_dropped_mid_command_raises_and_the_next_command_reconnects() -> None:
    lab = await start_lab("server1:ssh_drop=lsmod")
    try:
        ex = executor(lab)
        assert (await ex.run(["hostname"])).ok
        with pytest.raises(ConnectionLost, match="server1: connection lost during 'lsmod'"):
            await ex.run(["lsmod"])
        assert (await ex.run(["hostname"])).stdout == "server1"
        await ex.close()
    finally:
        await lab.stop()


async def test_an_unreachable_host_gives_a_one_line_error_naming_it() -> None:
    lab = await start_lab("server2:unreachable")
    try:
        with pytest.raises(HostUnreachable) as caught:
            await executor(lab, "server2").run(["true"])
        assert str(caught.value).startswith("server2: cannot connect to 127.0.0.1:")
        assert "\n" not in str(caught.value)
    finally:
        await lab.stop()


async def test_a_refused_key_is_an_authentication_error() -> None:
    lab = await start_lab("server1:auth_refused")
    try:
        with pytest.raises(AuthenticationFailed, match="server1: authentication refused for user 'ubuntu'"):
            await executor(lab).run(["true"])
    finally:
        await lab.stop()


async def test_refused_sudo_is_reported_with_what_to_do() -> None:
    lab = await start_lab("server2:sudo_refused")
    try:
        ex = executor(lab, "server2")
        assert (await ex.run(["hostname"])).ok
        with pytest.raises(SudoRefused, match="a password is required.*ROCE_WIZARD_SUDO_PASSWORD"):
            await ex.run(["true"], sudo=True)
    finally:
        await lab.stop()


async def test_an_unknown_host_key_is_refused_by_default(lab: Lab, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(HostKeyRejected, match="server1: host key of .* not verified"):
        await executor(lab, known_hosts=str(empty)).run(["true"])


async def test_a_new_host_key_is_recorded_only_when_allowed(lab: Lab, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    ex = executor(lab, known_hosts=str(known), accept_new_host_keys=True)
    assert (await ex.run(["hostname"])).ok
    await ex.close()
    host, port = lab.endpoint("server1")
    assert known.read_text().startswith(f"[{host}]:{port} ssh-ed25519 ")
    again = executor(lab, known_hosts=str(known))
    assert (await again.run(["hostname"])).ok
    await again.close()


async def test_a_changed_host_key_is_refused_even_when_new_keys_are_accepted(lab: Lab, tmp_path: Path) -> None:
    host, port = lab.endpoint("server1")
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key("openssh").decode()
    known = tmp_path / "known_hosts"
    known.write_text(f"[{host}]:{port} {other}")
    with pytest.raises(HostKeyRejected, match="host key changed"):
        await executor(lab, known_hosts=str(known), accept_new_host_keys=True).run(["true"])


async def test_files_are_installed_with_owner_and_mode_and_the_old_content_is_backed_up(lab: Lab) -> None:
    ex = executor(lab)
    first = await ex.write_file("/etc/roce-test.conf", "one\n", mode=0o600, backup_dir="/var/lib/roce-wizard/b1")
    assert first is None, "nothing to back up for a new file"
    backup = await ex.write_file("/etc/roce-test.conf", "two\n", mode=0o600, backup_dir="/var/lib/roce-wizard/b2")
    assert backup == "/var/lib/roce-wizard/b2/etc/roce-test.conf"
    assert await ex.read_file("/etc/roce-test.conf", sudo=True) == "two\n"
    assert await ex.read_file(backup, sudo=True) == "one\n"
    stat = await ex.run(["stat", "-c", "%a %U %G", "/etc/roce-test.conf"], sudo=True)
    assert stat.stdout == "600 root root"
    leftovers = await ex.run("ls -a /tmp")
    assert ".roce-wizard-" not in leftovers.stdout, "the upload temp file must be removed"
    await ex.close()


async def test_a_missing_file_reads_as_none(lab: Lab) -> None:
    assert await executor(lab).read_file("/etc/does-not-exist") is None


async def test_after_a_reboot_the_executor_waits_and_reconnects(lab: Lab) -> None:
    ex = executor(lab)
    try:
        await ex.run(["systemctl", "reboot"], sudo=True, timeout_s=5)
    except ConnectionLost:
        pass
    await ex.wait_until_back(timeout_s=30)
    assert (await ex.run(["hostname"])).stdout == "server1"
    await ex.close()


async def test_files_read_back_byte_for_byte(lab: Lab) -> None:
    ex = executor(lab)
    for content in ("a\nb\n", "no newline at the end", "blank lines\n\n\n", ""):
        await ex.write_file("/etc/roce-exact", content, mode=0o644)
        assert await ex.read_file("/etc/roce-exact") == content
    await ex.close()
