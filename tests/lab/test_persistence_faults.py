"""What a reboot and a port flap show on a simulated host, and the faults that break persistence
(``unit_disabled``, ``no_boot``, ``gid_reorder``): what `roce-wizard verify --reboot` and `--flap` read."""

from __future__ import annotations

import asyncssh
import pytest

from tests.lab.conftest import install_rails, make_lab, root
from wizard.lab import Lab

UNIT = (
    "[Unit]\nDescription=x\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"
)
WANTS = "/etc/systemd/system/multi-user.target.wants/x.service"
IPV4_GID = "0000:0000:0000:0000:0000:ffff:c0a8:0b01"  # 192.168.11.1, server1's rail 0 address


async def reboot(lab: Lab, name: str) -> None:
    try:
        await root(lab, name, "systemctl reboot")
    except (asyncssh.Error, OSError):
        pass  # the connection going away is what a reboot looks like
    await lab.host(name).wait_running()


async def boot_id(lab: Lab, name: str) -> str:
    return (await root(lab, name, "cat /proc/sys/kernel/random/boot_id")).stdout.strip()


async def test_the_boot_id_is_the_same_until_the_host_reboots_then_new() -> None:
    lab = await make_lab()
    try:
        first = await boot_id(lab, "server1")
        assert len(first) == 36 and first == await boot_id(lab, "server1")
        await reboot(lab, "server1")
        assert await boot_id(lab, "server1") not in ("", first)
    finally:
        await lab.stop()


async def test_ps_lists_pid_seconds_since_start_and_command_line_without_a_header() -> None:
    lab = await make_lab()
    try:
        out = (await root(lab, "server1", "ps -eo pid=,etimes=,args=")).stdout.splitlines()
        pid, etimes, args = out[0].split(None, 2)
        assert (pid, args) == ("1", "systemd") and etimes.isdigit()
        bad = await root(lab, "server1", "ps -eo pid,nosuch")
        assert bad.exit_status == 1 and 'unknown user-defined format specifier "nosuch"' in bad.stderr
    finally:
        await lab.stop()


async def test_unit_disabled_keeps_the_unit_enabled_until_the_next_boot_removes_its_link() -> None:
    lab = await make_lab("server1:unit_disabled=x.service")
    try:
        done = await root(lab, "server1", "tee /etc/systemd/system/x.service >/dev/null && systemctl enable x.service",
                          input=UNIT)  # fmt: skip
        assert done.exit_status == 0, done.stderr
        assert (await root(lab, "server1", f"test -L {WANTS}")).exit_status == 0  # runtime: nothing shows yet
        await reboot(lab, "server1")
        assert (await root(lab, "server1", "systemctl is-enabled x.service")).stdout.strip() == "disabled"
        assert f'Removed "{WANTS}".' in (await root(lab, "server1", "journalctl -b --no-pager")).stdout
    finally:
        await lab.stop()


async def test_no_boot_leaves_the_ssh_port_refusing_after_a_reboot() -> None:
    lab = await make_lab("server1:no_boot")
    try:
        await reboot(lab, "server1")  # the reboot ends with the host still off
        assert lab.host("server1").state == "rebooting"
        with pytest.raises(OSError, match="[Cc]onnect"):
            await root(lab, "server1", "true")
        assert (await root(lab, "server2", "true")).exit_status == 0, "the other host is untouched"
    finally:
        await lab.stop()


async def gid_index_of(lab: Lab, name: str, netdev: str, gid: str) -> int | None:
    dev = (await root(lab, name, f"ls /sys/class/net/{netdev}/device/infiniband")).stdout.split()[0]
    out = (await root(lab, name, f"grep -H . /sys/class/infiniband/{dev}/ports/1/gids/*")).stdout
    found = [int(line.split("/gids/")[1].split(":")[0]) for line in out.splitlines() if line.endswith(gid)]
    return min(found) if found else None


@pytest.mark.parametrize(("fault", "after"), [((), 2), (("server1:gid_reorder=ens1f0np0",), 4)])
async def test_a_flap_keeps_the_ipv4_gid_index_unless_a_running_job_holds_the_old_entries(
    fault: tuple[str, ...], after: int
) -> None:
    """The v1/v2 pair of the rail address sits at 2/3; with gid_reorder the old slots stay held and the address's
    GIDs come back at 4/5 (NVIDIA/nccl#2157)."""
    lab = await make_lab(*fault)
    try:
        await install_rails(lab)
        assert await gid_index_of(lab, "server1", "ens1f0np0", IPV4_GID) == 2
        flap = await root(lab, "server1", "ip link set dev ens1f0np0 down; ip link set dev ens1f0np0 up")
        assert flap.exit_status == 0, flap.stderr
        assert await gid_index_of(lab, "server1", "ens1f0np0", IPV4_GID) == after
        other = await gid_index_of(lab, "server1", "ens1f1np1", IPV4_GID.replace("0b01", "0c01"))
        assert other == 2, "only the flapped port's table moves"
    finally:
        await lab.stop()
