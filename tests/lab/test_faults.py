"""Every fault kind shows up the way the real failure does."""

from __future__ import annotations

import asyncssh
import pytest

from tests.lab.conftest import connect, install_doca, install_rails, make_lab, root, ssh
from wizard.lab import FAULT_KINDS, Fault, parse_fault
from wizard.parsers import parse


def test_parse_fault_reads_host_kind_and_argument() -> None:
    assert parse_fault("server1:link_down=ens1f0np0") == Fault("server1", "link_down", "ens1f0np0")
    assert parse_fault("gpu-003:ssh_drop") == Fault("gpu-003", "ssh_drop", None)
    assert parse_fault("server2:ssh_drop=openibd").arg == "openibd"


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("server1", "expected HOST:KIND"),
        ("server1:melted", "unknown kind 'melted'"),
        ("server1:link_down", "needs an argument"),
        ("server1:crosswire=yes", "takes no argument"),
        (":pfc_off", "expected HOST:KIND"),
    ],
)
def test_bad_fault_specs_fail_with_a_one_line_message_naming_the_spec(spec: str, why: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_fault(spec)
    assert repr(spec) in str(err.value) and why in str(err.value) and "\n" not in str(err.value)


def test_a_fault_on_a_host_the_lab_does_not_have_is_refused() -> None:
    from wizard.lab import Lab

    with pytest.raises(ValueError, match="unknown host 'nobody'"):
        Lab.reference(["a", "b"], faults=[parse_fault("nobody:pfc_off")])


def test_every_documented_fault_kind_is_tested_here() -> None:
    tested = {
        "link_down",
        "crosswire",
        "mtu_mismatch",
        "pfc_off",
        "no_peermem",
        "old_firmware",
        "ssh_drop",
        "unreachable",
        "sudo_refused",
        "sudo_password",
        "auth_refused",
        # hosts that answer strangely: tests/lab/test_strange_hosts.py
        "locale",
        "sudo_lecture",
        "motd",
        "missing",
        "lockout",
        "nm_renderer",
        "hang",  # tests/engine/test_interrupt.py
        "engine_socket",  # tests/steps/test_inference_transport_demo.py
        "hf_logged_out",  # tests/steps/test_inference_weights.py
        # InfiniBand: tests/lab/test_ib_sim.py
        "no_sm",
        "pkey_mismatch",
        "ib_link_degraded",
        "mixed_link_layer",
        # PCIe platform faults: tests/lab/test_pcie_sim.py
        "acs_enabled",
        "iommu_translated",
        "pcie_downgrade",
        "vpi_ib_mode",
        # what NCCL inherits: tests/steps/test_nccl_demo.py
        "user_nccl_conf",
        "memlock_limited",
        # switched fabric (rails-16 profile): tests/lab/test_rails16_sim.py
        "wrong_leaf",
        "switch_pfc_off",
        "switch_mtu",
        "switch_ecn_off",
        "flap",
        "pfc_storm",  # tests/validate/test_switch_os_fabric.py
        # slow links (rails-N profiles): tests/lab/test_degraded_faults.py
        "degraded",
        "degraded_uplink",
        # what a reboot or a flap loses: tests/lab/test_persistence_faults.py
        "unit_disabled",
        "no_boot",
        "gid_reorder",
    }
    assert set(FAULT_KINDS) == tested


async def test_nm_renderer_hands_netplan_to_network_manager() -> None:
    # Ubuntu Desktop's 01-network-manager-all.yaml sets the global renderer (netplan-yaml docs, `renderer`).
    lab = await make_lab("server2:nm_renderer")
    try:
        host = lab.host("server2")
        assert (await host.run("netplan get")).stdout.count("renderer: NetworkManager") == 1
        assert (await host.run("systemctl is-active NetworkManager")).stdout == "active\n"
        assert (await lab.host("server1").run("systemctl is-active NetworkManager")).status == 3
    finally:
        await lab.stop()


async def test_link_down_takes_the_port_and_its_peer_down() -> None:
    lab = await make_lab("server1:link_down=ens1f1np1")
    try:
        links = {x.netdev: x for x in parse("rdma_link", (await ssh(lab, "server1", "rdma link")).stdout).links}
        assert (links["ens1f1np1"].state, links["ens1f1np1"].physical_state) == ("DOWN", "DISABLED")
        assert links["ens1f0np0"].state == "ACTIVE"
        eth = (await ssh(lab, "server1", "ethtool ens1f1np1")).stdout
        assert "\tSpeed: Unknown!\n" in eth and "\tLink detected: no\n" in eth
        assert (await ssh(lab, "server1", "cat /sys/class/net/ens1f1np1/operstate")).stdout == "down\n"
        peer = {x.netdev: x.state for x in parse("rdma_link", (await ssh(lab, "server2", "rdma link")).stdout).links}
        assert peer["ens1f1np1"] == "DOWN"  # a cable with one dead end has no link on either end
    finally:
        await lab.stop()


async def test_crosswire_sends_each_port_to_the_other_cards_peer() -> None:
    lab = await make_lab("server1:crosswire")
    try:
        await install_rails(lab)
        ping = await ssh(lab, "server1", "ping -n -c 2 -w 3 -I ens1f0np0 192.168.11.2")
        assert ping.exit_status == 1 and "Destination Host Unreachable" in ping.stdout
        neighbours = await ssh(lab, "server1", "ping -6 -n -c 2 -w 3 -I ens1f0np0 ff02::1")
        peer_ll = "fe80::e42:a1ff:fe00:102"  # server2's ens2f0np0 (card B port 0)
        assert f"bytes from {peer_ll}%ens1f0np0: icmp_seq=1 ttl=64" in neighbours.stdout
        assert "(DUP!)" in neighbours.stdout
    finally:
        await lab.stop()


async def test_straight_cables_reach_the_same_port_on_the_peer(lab) -> None:  # noqa: ANN001
    await install_rails(lab)
    neighbours = await ssh(lab, "server1", "ping -6 -n -c 1 -I ens2f1np1 ff02::1")
    assert "fe80::e42:a1ff:fe00:103%ens2f1np1" in neighbours.stdout
    assert (await ssh(lab, "server2", "ping -c 1 192.168.13.1")).exit_status == 0


async def test_mtu_mismatch_port_stays_at_1500_though_the_change_reports_success() -> None:
    lab = await make_lab("server2:mtu_mismatch=ens2f0np0")
    try:
        await install_rails(lab)
        r = await root(
            lab, "server2", "ip link set dev ens2f0np0 mtu 9000; echo rc=$?; cat /sys/class/net/ens2f0np0/mtu"
        )
        assert r.stdout == "rc=0\n1500\n"
        await root(lab, "server2", "apt-get install -y ibverbs-utils")
        info = parse("ibv_devinfo", (await ssh(lab, "server2", "ibv_devinfo -d rocep134s0f0")).stdout)
        assert info.devices[0].ports[0].active_mtu == 1024
        jumbo = await ssh(lab, "server1", "ping -c 2 -M do -s 8972 -I ens2f0np0 192.168.13.2")
        assert "0 received, 100% packet loss" in jumbo.stdout
        small = await ssh(lab, "server1", "ping -c 2 -M do -s 1472 -I ens2f0np0 192.168.13.2")
        assert small.exit_status == 0
    finally:
        await lab.stop()


async def test_pfc_off_lldpad_overwrites_pfc_until_it_is_stopped() -> None:
    lab = await make_lab("server1:pfc_off")
    try:
        await install_doca(lab, "server1")
        assert (await ssh(lab, "server1", "systemctl is-active lldpad")).stdout == "active\n"
        r = await root(lab, "server1", "mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0")
        assert r.stdout.startswith("****** WARNING: lldpad service is running and may overwrite your settings ******")
        after = parse("mlnx_qos", (await ssh(lab, "server1", "mlnx_qos -i ens1f0np0")).stdout)
        assert after.pfc_enabled == [0] * 8
        await root(lab, "server1", "systemctl disable --now lldpad")
        await root(lab, "server1", "mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0")
        kept = parse("mlnx_qos", (await ssh(lab, "server1", "mlnx_qos -i ens1f0np0")).stdout)
        assert kept.pfc_enabled == [0, 0, 0, 1, 0, 0, 0, 0]
    finally:
        await lab.stop()


async def test_no_peermem_fails_even_on_doca() -> None:
    lab = await make_lab("server2:no_peermem")
    try:
        await install_doca(lab, "server2")
        r = await root(lab, "server2", "modprobe nvidia-peermem")
        assert r.exit_status == 1 and "could not insert 'nvidia_peermem': Unknown symbol in module" in r.stderr
        assert "Unknown symbol ib_register_peer_memory_client" in (await root(lab, "server2", "dmesg")).stdout
    finally:
        await lab.stop()


async def test_old_firmware_shows_everywhere_the_firmware_version_is_read() -> None:
    lab = await make_lab("server1:old_firmware")
    try:
        info = parse("ethtool_i", (await ssh(lab, "server1", "ethtool -i ens1f0np0")).stdout)
        assert info.firmware_version == "14.20.1010"
        dev = (await ssh(lab, "server1", "cat /sys/class/infiniband/rocep134s0f1/fw_ver")).stdout
        assert dev == "14.20.1010\n"
        assert "14.32.1010" in (await ssh(lab, "server2", "ethtool -i ens1f0np0")).stdout
    finally:
        await lab.stop()


async def test_ssh_drop_kills_the_connection_once_without_an_exit_status() -> None:
    lab = await make_lab("server1:ssh_drop")
    try:
        async with await connect(lab, "server1") as conn:
            assert (await conn.run("hostname")).stdout == "server1\n"
            dropped = await conn.run("sudo -n modprobe bonding")
            assert dropped.exit_status is None
        assert "sudo -n modprobe bonding" in lab.host("server1").history
        again = await ssh(lab, "server1", "sudo -n true")
        assert again.exit_status == 0  # once only
    finally:
        await lab.stop()


async def test_ssh_drop_with_an_argument_waits_for_a_matching_command() -> None:
    lab = await make_lab("server2:ssh_drop=netplan apply")
    try:
        assert (await root(lab, "server2", "sudo -n true")).exit_status == 0
        assert (await root(lab, "server2", "netplan apply")).exit_status is None
    finally:
        await lab.stop()


async def test_unreachable_host_refuses_connections() -> None:
    lab = await make_lab("server2:unreachable")
    try:
        with pytest.raises(ConnectionRefusedError):
            await connect(lab, "server2")
        assert (await ssh(lab, "server1", "hostname")).stdout == "server1\n"
    finally:
        await lab.stop()


async def test_an_unreachable_hosts_port_stays_taken_so_no_other_listener_can_answer_for_it() -> None:
    # CI once saw server1's listener get the port just released for server2: "2 of 2 hosts ready" with server2
    # unreachable. The port is held (bound, never listening) for as long as the lab runs.
    import socket

    lab = await make_lab("server2:unreachable")
    try:
        _, port = lab.endpoint("server2")
        with socket.socket() as other, pytest.raises(OSError, match="Address already in use"):
            other.bind(("127.0.0.1", port))
    finally:
        await lab.stop()


async def test_sudo_refused_needs_a_password_it_never_accepts() -> None:
    lab = await make_lab("server1:sudo_refused")
    try:
        r = await ssh(lab, "server1", "sudo -n true")
        assert (r.exit_status, r.stderr) == (1, "sudo: a password is required\n")
        pw = await ssh(lab, "server1", "sudo -k -S -p '' -- true", input="secret\n")
        assert pw.exit_status == 1 and "incorrect password attempt" in pw.stderr
        assert (await ssh(lab, "server2", "sudo -n true")).exit_status == 0
    finally:
        await lab.stop()


async def test_sudo_password_asks_for_a_password_and_takes_one_on_stdin() -> None:
    lab = await make_lab("server1:sudo_password")
    try:
        r = await ssh(lab, "server1", "sudo -n true")
        assert (r.exit_status, r.stderr) == (1, "sudo: a password is required\n")
        pw = await ssh(lab, "server1", "sudo -k -S -p '' -- id -u", input="secret\n")
        assert (pw.exit_status, pw.stdout) == (0, "0\n")
        empty = await ssh(lab, "server1", "sudo -k -S -p '' -- true", input="\n")
        assert empty.exit_status == 1 and "a password is required" in empty.stderr
    finally:
        await lab.stop()


async def test_auth_refused_rejects_the_lab_key() -> None:
    lab = await make_lab("server2:auth_refused")
    try:
        with pytest.raises(asyncssh.PermissionDenied):
            await connect(lab, "server2")
    finally:
        await lab.stop()


async def test_lockout_cuts_ssh_after_the_matching_command_until_an_armed_revert_runs() -> None:
    import asyncio

    lab = await make_lab("server2:lockout=netplan apply")
    try:
        # A revert timer is a safety window: 15 s run at no less than 10 % of real time (wizard/engine/clock.py),
        # 1.5 s here, so the cut is seen before the revert even on a busy machine
        armed = await ssh(lab, "server2", "sudo systemd-run --unit=revert-1 --on-active=15s /bin/true")
        assert "Running timer as unit: revert-1.timer" in armed.stderr
        await ssh(lab, "server2", "sudo netplan apply")
        await asyncio.sleep(0.05)
        with pytest.raises(OSError):
            await connect(lab, "server2")
        host = lab.host("server2")
        for _ in range(1000):
            if not getattr(host, "locked_out", False):
                break
            await asyncio.sleep(0.01)
        assert (await ssh(lab, "server2", "hostname")).stdout == "server2\n"
    finally:
        await lab.stop()


async def test_a_stopped_transient_timer_never_fires() -> None:
    import asyncio

    lab = await make_lab()
    try:
        await ssh(lab, "server1", "sudo systemd-run --unit=t1 --on-active=500s /usr/bin/touch /tmp/fired")
        await ssh(lab, "server1", "sudo systemctl stop t1.timer")
        await asyncio.sleep(0.05)
        assert (await ssh(lab, "server1", "test -e /tmp/fired")).exit_status == 1
    finally:
        await lab.stop()


async def test_a_revert_timer_on_the_fast_lab_clock_keeps_a_floor_of_real_time() -> None:
    """The lab runs at 0.1 % here; a 10 s revert timer still gives the wizard 1 s (10 %), not 10 ms: what runs in
    that window is the wizard's own work, which a faster simulated clock does not speed up (a loaded machine
    missed a 1.2 s window on every rails-16 host)."""
    import asyncio

    lab = await make_lab()
    try:
        await ssh(lab, "server1", "sudo systemd-run --unit=t2 --on-active=10s /usr/bin/touch /tmp/fired")
        await asyncio.sleep(0.3)
        assert (await ssh(lab, "server1", "test -e /tmp/fired")).exit_status == 1, "fired before the floor"
        for _ in range(100):
            if (await ssh(lab, "server1", "test -e /tmp/fired")).exit_status == 0:
                break
            await asyncio.sleep(0.1)
        assert (await ssh(lab, "server1", "test -e /tmp/fired")).exit_status == 0, "the timer fires after the floor"
    finally:
        await lab.stop()


def test_a_safety_window_says_both_the_answers_value_and_the_one_in_force() -> None:
    from wizard.engine.clock import said, window_scale

    assert (window_scale(1.0), window_scale(0.5), window_scale(0.02), window_scale(0.001)) == (1.0, 0.5, 0.1, 0.1)
    assert said(120, 1.0) == "120s"
    assert said(120, 0.02) == "120s (12s on the simulated clock)"
