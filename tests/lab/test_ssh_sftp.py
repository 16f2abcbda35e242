"""The SSH side: host keys verify against the written known_hosts, key-only auth, SFTP into the host's files."""

from __future__ import annotations

import asyncssh
import pytest

from tests.lab.conftest import connect, root, ssh
from wizard.lab import Lab


async def test_credentials_are_private_and_known_hosts_pins_every_endpoint(lab: Lab) -> None:
    assert lab.client_key_path.stat().st_mode & 0o777 == 0o600
    lines = lab.known_hosts_path.read_text().splitlines()
    for name, line in zip(lab.names, lines, strict=True):
        host, port = lab.endpoint(name)
        assert line.startswith(f"[{host}]:{port} ssh-ed25519 ")
    async with await connect(lab, "server1") as conn:
        assert "roce-wizard simulated host" in conn.get_extra_info("server_version")


async def test_a_host_key_not_in_known_hosts_is_rejected(lab: Lab, tmp_path) -> None:  # noqa: ANN001
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    host, port = lab.endpoint("server1")
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[{host}]:{port} {other}\n")
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        await asyncssh.connect(
            host, port, username="root", client_keys=[str(lab.client_key_path)], known_hosts=str(wrong)
        )


async def test_password_login_is_refused(lab: Lab) -> None:
    host, port = lab.endpoint("server1")
    with pytest.raises(asyncssh.PermissionDenied):
        await asyncssh.connect(host, port, username="root", password="root", client_keys=None, known_hosts=None)


async def test_sftp_upload_lands_owned_by_the_login_user_and_chmod_sticks(lab: Lab) -> None:
    async with await connect(lab, "server1", "operator") as conn:
        async with conn.start_sftp_client() as sftp:
            async with sftp.open("/tmp/.roce-wizard-upload", "w") as f:
                await f.write("network:\n  version: 2\n")
            assert (await sftp.stat("/tmp/.roce-wizard-upload")).permissions & 0o777 == 0o644
            await sftp.chmod("/tmp/.roce-wizard-upload", 0o600)
            await sftp.mkdir("/tmp/dir")
            assert sorted(await sftp.listdir("/tmp")) == [".", "..", ".roce-wizard-upload", "dir"]
            with pytest.raises(asyncssh.SFTPPermissionDenied):
                async with sftp.open("/etc/netplan/x.yaml", "w") as f:
                    await f.write("nope")
        r = await conn.run("stat -c '%a %U %G %s' /tmp/.roce-wizard-upload")
        assert r.stdout == "600 operator operator 22\n"
    install = "install -D -o root -g root -m 0600 -- /tmp/.roce-wizard-upload /etc/netplan/60-x.yaml"
    r = await root(
        lab, "server1", f"{install} && stat -c '%a %U %G' /etc/netplan/60-x.yaml && cat /etc/netplan/60-x.yaml"
    )
    assert r.stdout == "600 root root\nnetwork:\n  version: 2\n"


async def test_sftp_reads_back_what_commands_wrote(lab: Lab) -> None:
    await root(lab, "server2", "echo hello > /root/note.txt")
    async with await connect(lab, "server2", "root") as conn:
        async with conn.start_sftp_client() as sftp:
            async with sftp.open("note.txt") as f:
                assert await f.read() == "hello\n"
            assert await sftp.exists("/sys/class/net/eno1") is True


async def test_exec_requests_honour_env_and_stdin(lab: Lab) -> None:
    r = await ssh(lab, "server1", "printenv NCCL_DEBUG; cat", env={"NCCL_DEBUG": "INFO"}, input="from stdin\n")
    assert r.stdout == "INFO\nfrom stdin\n"


async def test_output_streams_while_a_command_runs(lab: Lab) -> None:
    lab.time_scale = 0.05
    async with await connect(lab, "server1") as conn:
        proc = await conn.create_process("ping -c 3 -I eno1 10.0.0.12")
        first = await proc.stdout.readline()
        assert first.startswith("PING 10.0.0.12 (10.0.0.12) from 10.0.0.11 eno1: 56(84) bytes of data.")
        await proc.wait()
        assert proc.exit_status == 0


async def test_reboot_drops_sessions_and_refuses_connections_until_the_host_is_back(lab: Lab) -> None:
    async with await connect(lab, "server1") as conn:
        r = await conn.run("sudo -n systemctl reboot")
        assert r.exit_status == 0
        await conn.wait_closed()
    with pytest.raises(OSError):
        await connect(lab, "server1")
    await lab.host("server1").wait_running()
    assert (await ssh(lab, "server1", "hostname")).stdout == "server1\n"


async def test_every_exec_request_is_recorded_in_the_host_history(lab: Lab) -> None:
    await ssh(lab, "server2", "uname -r")
    await ssh(lab, "server2", "sudo -n true")
    host = lab.host("server2")
    assert host.history == ["uname -r", "sudo -n true"]
    assert ["true"] in host.commands
