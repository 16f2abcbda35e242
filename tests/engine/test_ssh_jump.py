"""Bastions: ssh.jump_host, a host's jump_host and ~/.ssh/config's ProxyJump, through a real asyncssh bastion that
forwards direct-tcpip channels to the simulated lab's hosts on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncssh
import pytest
import yaml

from wizard.answers.model import parse_answers
from wizard.engine.session import close_jumps, production_targets
from wizard.errors import AnswersError, WizardError
from wizard.executors import AuthenticationFailed, ConnectionLost, HostKeyRejected, HostUnreachable
from wizard.executors.jump import HOSTS_PER_CONNECTION, Jumps, JumpSettings
from wizard.executors.ssh import SshExecutor
from wizard.lab import Lab, parse_fault


class Bastion:
    """An SSH server that only forwards: it counts connections and the channels opened through them."""

    def __init__(self, client_key: asyncssh.SSHKey, *, refuse_key: bool = False) -> None:
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = client_key
        self.refuse_key = refuse_key
        self.connections: list[asyncssh.SSHServerConnection] = []
        self.channels: list[tuple[str, int]] = []
        self.acceptor: asyncssh.SSHAcceptor | None = None
        self.port = 0

    async def start(self) -> Bastion:
        bastion = self

        class Server(asyncssh.SSHServer):
            def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
                bastion.connections.append(conn)

            def begin_auth(self, username: str) -> bool:
                return True

            def public_key_auth_supported(self) -> bool:
                return True

            def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
                return not bastion.refuse_key and key.public_data == bastion.client_key.public_data

            def connection_requested(self, dest_host: str, dest_port: int, orig_host: str, orig_port: int) -> bool:
                bastion.channels.append((dest_host, dest_port))
                return dest_host == "127.0.0.1"  # True: asyncssh connects and forwards; never anything off loopback

        self.acceptor = await asyncssh.create_server(Server, "127.0.0.1", 0, server_host_keys=[self.host_key])
        self.port = self.acceptor.sockets[0].getsockname()[1]
        return self

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_key.export_public_key().decode().strip()}\n"

    def drop_all(self) -> None:
        for conn in self.connections:
            conn.abort()

    async def stop(self) -> None:
        self.drop_all()
        if self.acceptor is not None:
            self.acceptor.close()
            await self.acceptor.wait_closed()


@pytest.fixture
async def lab() -> AsyncIterator[Lab]:
    lab = Lab.reference(["server1", "server2"], faults=[parse_fault("server2:unreachable")])
    lab.time_scale = 0.001
    await lab.start()
    try:
        yield lab
    finally:
        await lab.stop()


@pytest.fixture
async def bastion(lab: Lab) -> AsyncIterator[Bastion]:
    server = await Bastion(lab.client_key).start()
    try:
        yield server
    finally:
        await server.stop()


def answers(lab: Lab, tmp_path: Path, ssh: dict[str, Any], hosts: int = 1, **host_extra: Any) -> Any:
    """Answers for server1 (and server2, whose port has no listener) of the lab, with a known_hosts file of their
    keys plus the bastion's, when the test writes it there."""
    known = tmp_path / "known_hosts"
    if not known.exists():
        known.write_text(lab.known_hosts_path.read_text())
    entries = []
    for name in ["server1", "server2"][:hosts]:
        address, port = lab.endpoint(name)
        entries.append({"name": name, "address": address, "port": port, **host_extra.get(name, {})})
    data = {
        "version": 1,
        "ssh": {"user": "ubuntu", "identity_file": str(lab.client_key_path), "known_hosts": str(known), **ssh},
        "hosts": entries,
    }
    return parse_answers(yaml.safe_dump(data))


async def run_all(targets: dict[str, Any], argv: list[str]) -> dict[str, str]:
    executors = {name: SshExecutor(t) for name, t in targets.items()}
    try:
        return {name: (await ex.run(argv)).stdout for name, ex in executors.items()}
    finally:
        for ex in executors.values():
            await ex.close()
        await close_jumps(targets.values())


# -- the answers key ----------------------------------------------------------------------------------------------
def test_jump_host_is_written_as_user_at_address_colon_port_or_as_a_mapping() -> None:
    base = "version: 1\nhosts: [{name: a, address: 10.0.1.1}]\nssh:\n  jump_host: "
    short = parse_answers(base + "ops@10.0.0.1:2222").ssh.jump_host
    assert short is not None and (short.address, short.port, short.user) == ("10.0.0.1", 2222, "ops")
    v6 = parse_answers(base + "'[fd00::1]:22'").ssh.jump_host
    assert v6 is not None and (v6.address, v6.port, v6.user) == ("fd00::1", 22, None)
    mapping = parse_answers(base + "{address: bastion.example.com, identity_file: ~/.ssh/bastion}").ssh.jump_host
    assert mapping is not None and (mapping.address, mapping.port, mapping.identity_file) == (
        "bastion.example.com",
        None,
        "~/.ssh/bastion",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a,b", "ssh.jump_host (line 4): 'a,b': one bastion here; a chain of bastions goes in ~/.ssh/config"),
        ("ops@h:70000", "ssh.jump_host (line 4): 'ops@h:70000': port '70000' is not a number from 1 to 65535"),
        ("'@h'", "ssh.jump_host (line 4): '@h' is not [user@]host[:port]"),
        ("{address: h, port: 22, via: x}", "ssh.jump_host.via (line 4): unknown key"),
    ],
)
def test_a_bad_jump_host_is_refused_naming_the_key(value: str, message: str) -> None:
    with pytest.raises(AnswersError) as caught:
        parse_answers(f"version: 1\nhosts: [{{name: a, address: 10.0.1.1}}]\nssh:\n  jump_host: {value}\n")
    assert message in str(caught.value)


def test_a_host_may_take_another_bastion_or_none_and_a_range_shares_it() -> None:
    parsed = parse_answers(
        "version: 1\nssh: {jump_host: 10.0.0.1}\nhosts:\n"
        "  - {name: a, address: 10.0.1.1, jump_host: none}\n"
        "  - {name: 'b[1-2]', address_start: 10.0.1.10, jump_host: ops@10.0.0.2}\n"
    )
    assert parsed.hosts[0].jump_host == "none"
    assert [h.jump_host.address for h in parsed.hosts[1:]] == ["10.0.0.2", "10.0.0.2"]  # type: ignore[union-attr]


# -- resolution: answers, ~/.ssh/config, sharing ----------------------------------------------------------------------
def jumps(tmp_path: Path, config: str = "") -> Jumps:
    path = tmp_path / "ssh_config"
    path.write_text(config)
    return Jumps(JumpSettings(), default_user="ubuntu", default_identity="~/.ssh/fleet", config_path=path)


def test_hosts_with_the_same_bastion_share_one_connection_per_256_hosts(tmp_path: Path) -> None:
    built = jumps(tmp_path)
    spec = parse_answers("version: 1\nssh: {jump_host: 10.0.0.1}\nhosts: [{name: a, address: 10.0.1.1}]").ssh.jump_host
    given = [built.for_host(spec, f"10.0.{i // 200}.{i % 200 + 1}", 22, "ubuntu") for i in range(300)]
    assert len({id(j) for j in given}) == 2
    assert given[0] is given[HOSTS_PER_CONNECTION - 1] and given[0] is not given[HOSTS_PER_CONNECTION]
    hop = given[0].hop  # type: ignore[union-attr]
    assert (hop.address, hop.port, hop.username, hop.identity_files) == ("10.0.0.1", 22, "ubuntu", ("~/.ssh/fleet",))


def test_proxy_jump_of_ssh_config_is_honoured_with_the_bastions_own_entry(tmp_path: Path) -> None:
    built = jumps(
        tmp_path,
        "Host bastion\n  HostName 192.0.2.10\n  Port 2222\n  User jump\n  IdentityFile ~/.ssh/jump\n"
        "Host 10.0.1.* !10.0.1.9\n  ProxyJump bastion\nHost 10.0.2.*\n  ProxyJump ops@outer:2200,bastion\n",
    )
    via_config = built.for_host(None, "10.0.1.5", 22, "ubuntu")
    assert via_config is not None and via_config.describe() == "192.0.2.10:2222"
    assert (via_config.hop.username, via_config.hop.identity_files) == ("jump", ("~/.ssh/jump",))
    assert built.for_host(None, "10.0.1.9", 22, "ubuntu") is None  # excluded by the pattern: direct
    assert built.for_host("none", "10.0.1.5", 22, "ubuntu") is None  # the answers say direct
    chain = built.for_host(None, "10.0.2.7", 22, "ubuntu")
    assert chain is not None and chain.describe() == "192.0.2.10:2222 (via outer:2200)"
    assert chain.via is not None and chain.via.hop.username == "ops"


def test_a_proxy_jump_loop_in_ssh_config_is_refused(tmp_path: Path) -> None:
    built = jumps(tmp_path, "Host *\n  ProxyJump bastion\n")
    with pytest.raises(WizardError, match="ProxyJump for bastion loops through bastion:22"):
        built.for_host(None, "10.0.1.5", 22, "ubuntu")


# -- through a real bastion ---------------------------------------------------------------------------------------
async def test_hosts_behind_a_bastion_run_commands_over_one_bastion_connection(
    lab: Lab, bastion: Bastion, tmp_path: Path
) -> None:
    (tmp_path / "known_hosts").write_text(lab.known_hosts_path.read_text() + bastion.known_hosts_line())
    two = answers(lab, tmp_path, {"jump_host": f"ubuntu@127.0.0.1:{bastion.port}"})
    targets = production_targets(two, None)
    targets["again"] = production_targets(two, None)["server1"]  # a second session to the same host
    targets["again"].jump = targets["server1"].jump
    assert await run_all(targets, ["hostname"]) == {"server1": "server1", "again": "server1"}
    assert len(bastion.connections) == 1
    assert bastion.channels == [("127.0.0.1", lab.endpoint("server1")[1])] * 2


async def test_a_host_the_bastion_cannot_reach_fails_naming_host_and_bastion(
    lab: Lab, bastion: Bastion, tmp_path: Path
) -> None:
    (tmp_path / "known_hosts").write_text(lab.known_hosts_path.read_text() + bastion.known_hosts_line())
    targets = production_targets(answers(lab, tmp_path, {"jump_host": f"127.0.0.1:{bastion.port}"}, hosts=2), None)
    with pytest.raises(HostUnreachable) as caught:
        await run_all({"server2": targets["server2"]}, ["true"])
    port = lab.endpoint("server2")[1]
    assert str(caught.value).startswith(
        f"server2: cannot reach server2 through bastion 127.0.0.1:{bastion.port}: "
        f"the bastion cannot connect to 127.0.0.1:{port} ("
    )
    assert "\n" not in str(caught.value)


async def test_an_unreachable_bastion_fails_every_host_with_one_line_naming_it(lab: Lab, tmp_path: Path) -> None:
    closed = lab.endpoint("server2")[1]  # nothing listens there
    targets = production_targets(answers(lab, tmp_path, {"jump_host": f"127.0.0.1:{closed}"}, hosts=2), None)
    for name in ("server1", "server2"):
        with pytest.raises(HostUnreachable) as caught:
            await run_all({name: targets[name]}, ["true"])
        assert str(caught.value).startswith(
            f"{name}: cannot reach {name} through bastion 127.0.0.1:{closed}: the bastion does not answer: "
            "connection refused"
        )


async def test_a_bastion_key_not_in_known_hosts_is_refused_unless_new_keys_are_accepted(
    lab: Lab, bastion: Bastion, tmp_path: Path
) -> None:
    jump = {"jump_host": f"127.0.0.1:{bastion.port}"}
    with pytest.raises(HostKeyRejected) as caught:
        await run_all(production_targets(answers(lab, tmp_path, jump), None), ["true"])
    assert str(caught.value).startswith(
        f"server1: cannot reach server1 through bastion 127.0.0.1:{bastion.port}: its host key is not verified "
        f"against {tmp_path / 'known_hosts'}"
    )
    accepting = answers(lab, tmp_path, {**jump, "accept_new_host_keys": True})
    assert await run_all(production_targets(accepting, None), ["hostname"]) == {"server1": "server1"}
    assert bastion.known_hosts_line() in (tmp_path / "known_hosts").read_text()


async def test_a_bastion_refusing_the_key_is_an_authentication_error_naming_it(lab: Lab, tmp_path: Path) -> None:
    refusing = await Bastion(lab.client_key, refuse_key=True).start()
    try:
        (tmp_path / "known_hosts").write_text(lab.known_hosts_path.read_text() + refusing.known_hosts_line())
        targets = production_targets(answers(lab, tmp_path, {"jump_host": f"jump@127.0.0.1:{refusing.port}"}), None)
        with pytest.raises(AuthenticationFailed, match=r"server1: cannot reach server1 through bastion 127\.0\.0\.1:"):
            await run_all(targets, ["true"])
    finally:
        await refusing.stop()


async def test_a_dropped_bastion_connection_is_reopened_for_the_next_command(
    lab: Lab, bastion: Bastion, tmp_path: Path
) -> None:
    (tmp_path / "known_hosts").write_text(lab.known_hosts_path.read_text() + bastion.known_hosts_line())
    target = production_targets(answers(lab, tmp_path, {"jump_host": f"127.0.0.1:{bastion.port}"}), None)["server1"]
    ex = SshExecutor(target)
    try:
        assert (await ex.run(["hostname"])).stdout == "server1"
        bastion.drop_all()
        try:
            again = await ex.run(["hostname"])
        except ConnectionLost:  # the drop may be seen by this command; the one after must reconnect
            again = await ex.run(["hostname"])
        assert again.stdout == "server1"
        assert len(bastion.connections) == 2
    finally:
        await ex.close()
        await close_jumps([target])


async def test_proxy_jump_from_ssh_config_carries_the_hosts(
    lab: Lab, bastion: Bastion, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text(
        f"Host jumpbox\n  HostName 127.0.0.1\n  Port {bastion.port}\n  User ubuntu\n"
        "Host 127.0.0.1\n  ProxyJump jumpbox\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "known_hosts").write_text(lab.known_hosts_path.read_text() + bastion.known_hosts_line())
    targets = production_targets(answers(lab, tmp_path, {}), None)
    assert await run_all(targets, ["hostname"]) == {"server1": "server1"}
    assert len(bastion.connections) == 1 and len(bastion.channels) == 1
    direct = production_targets(answers(lab, tmp_path, {}, server1={"jump_host": "none"}), None)
    assert direct["server1"].jump is None
    assert await run_all(direct, ["hostname"]) == {"server1": "server1"}
    assert len(bastion.channels) == 1  # not through the bastion
