"""A simulated host's output reaches the SSH client in blocks, as a real program's buffered stdout reaches sshd:
ethtool -S printed line by line went out one encrypted packet per line, a third of the lab's CPU on a fleet's
counter reads, and as much of the wizard's work reading them."""

from __future__ import annotations

import asyncssh

from tests.lab.conftest import connect
from wizard.lab import Lab


class Counting(asyncssh.SSHClientSession[str]):
    def __init__(self) -> None:
        self.messages: dict[str, int] = {"stdout": 0, "stderr": 0}
        self.text = {"stdout": "", "stderr": ""}

    def data_received(self, data: str, datatype: asyncssh.DataType) -> None:
        stream = "stderr" if datatype == asyncssh.EXTENDED_DATA_STDERR else "stdout"
        self.messages[stream] += 1
        self.text[stream] += data


async def run_counting(lab: Lab, command: str) -> tuple[Counting, int | None]:
    async with await connect(lab, "server1", "root") as conn:
        chan, session = await conn.create_session(Counting, command)
        await chan.wait_closed()
        return session, chan.get_exit_status()


async def test_ethtool_counters_arrive_in_one_block_and_whole(lab: Lab) -> None:
    netdev = sorted(n for n in lab.host("server1").netdevs if n.startswith("ens"))[0]
    session, status = await run_counting(lab, f"ethtool -S {netdev}")
    lines = session.text["stdout"].splitlines()
    assert status == 0 and lines[0] == "NIC statistics:" and len(lines) > 20
    assert session.messages["stdout"] <= 2, f"{len(lines)} lines came in {session.messages['stdout']} messages"


async def test_output_before_a_wait_is_sent_before_it_and_stderr_and_the_status_still_come(lab: Lab) -> None:
    session, status = await run_counting(lab, "echo one; sleep 0.3; echo two; echo oops >&2; exit 3")
    assert session.text == {"stdout": "one\ntwo\n", "stderr": "oops\n"}
    assert session.messages["stdout"] == 2  # "one" went out before the sleep, not with "two"
    assert status == 3
