"""A simulated host remembers what ran for tests to inspect, within bounds: a 1,024-host lab that kept every
expanded argv (a grep over every GID file is 4,000 paths) grew to 8 GiB, and its collector's pauses broke SSH
keepalives."""

from __future__ import annotations

from wizard.lab import Lab
from wizard.lab.host import ARGV_KEPT, KEPT_COMMANDS


async def test_a_long_argv_is_kept_shortened_and_says_how_much_was_left_out() -> None:
    lab = Lab.reference(["server1", "server2"])
    host = lab.host("server1")
    await host.run("grep -sH . /sys/class/infiniband/*/ports/1/gids/*")
    grep = next(c for c in host.commands if c[0] == "grep")
    assert len(grep) == ARGV_KEPT + 1 and grep[:3] == ["grep", "-sH", "."]
    assert grep[-1].startswith("...(+") and grep[-1].endswith(" words)")


async def test_the_history_of_a_long_running_host_is_bounded_and_keeps_the_latest() -> None:
    lab = Lab.reference(["server1", "server2"])
    host = lab.host("server1")
    for i in range(KEPT_COMMANDS + 10):
        await host.run(f"true {i}")
    assert len(host.history) <= KEPT_COMMANDS and len(host.commands) <= KEPT_COMMANDS
    assert host.history[-1] == f"true {KEPT_COMMANDS + 9}" and host.commands[-1] == ["true", f"{KEPT_COMMANDS + 9}"]
