"""Boot of a simulated host with a rail whose peer is off: systemd-networkd-wait-online and network-online.target.

Real behaviour simulated (sources also in wizard/lab/waitonline.py):
- systemd-networkd-wait-online.service(8): waits for every networkd-managed link (default timeout 120 s), then
  logs "Timeout occurred while waiting for network connectivity."; network-online.target is reached late and the
  units After= it start late (systemd.special(7), https://systemd.io/NETWORK_ONLINE/).
- netplan-yaml docs, `optional`: "An optional device is not required for booting" (networkd only); netplan writes
  RequiredForOnline=no (0.106, src/networkd.c) or leaves it out of the wait-online drop-in (>= 1.0,
  src/gen-networkd.c).
- nm-online(1) -s: NetworkManager's startup completes without devices that have no carrier.
"""

from __future__ import annotations

from tests.lab.conftest import make_lab, rails_yaml
from wizard.lab import waitonline
from wizard.lab.host import SimHost

LATE_UNIT = """[Unit]
Description=RoCE QoS (test)
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true

[Install]
WantedBy=multi-user.target
"""
TIMEOUT_LINE = "Timeout occurred while waiting for network connectivity."


def optional_rails(n: int) -> str:
    return rails_yaml(n).replace("addresses:", "optional: true, addresses:")


async def prepare(host: SimHost, netplan: str) -> None:
    host.fs.install("/etc/netplan/60-roce-wizard.yaml", netplan, 0o600)
    host.fs.install("/etc/systemd/system/roce-qos.service", LATE_UNIT)
    result = await host.run("netplan apply && systemctl enable roce-qos.service")
    assert result.status == 0, result.stderr


async def reboot(host: SimHost) -> waitonline.BootTiming:
    host.request_reboot()
    await host.wait_running()
    return host.boot_timing


def journal(host: SimHost) -> list[str]:
    return [f"{e.ident}: {e.message}" for e in host.journal]


async def test_a_rail_without_optional_holds_the_boot_for_two_minutes_when_its_peer_server_is_off() -> None:
    lab = await make_lab()
    try:
        server1, server2 = lab.host("server1"), lab.host("server2")
        await prepare(server1, rails_yaml(1))
        server2.power_off()
        timing = await reboot(server1)
        assert timing.timed_out and timing.wait_online == 120.0
        assert sorted(timing.waited_for) == sorted(
            [server1.profile.mgmt.netdev, "ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"]
        )
        lines = journal(server1)
        assert any(line.endswith(TIMEOUT_LINE) and "systemd-networkd-wait-online[" in line for line in lines)
        assert "systemd[1]: Failed to start Wait for Network to be Configured." in lines
        # The unit ordered after network-online.target started only after the timeout.
        assert timing.started["roce-qos.service"] >= 120.0 > timing.started["ssh.service"]
        assert "systemd[1]: Startup finished in 4.213s (kernel) + 2min 2.100s (userspace) = 2min 6.313s." in lines
        assert (await server1.run("systemctl is-active systemd-networkd-wait-online")).stdout == "failed\n"
    finally:
        await lab.stop()


async def test_optional_rails_let_the_boot_go_on_without_the_peer() -> None:
    lab = await make_lab()
    try:
        server1, server2 = lab.host("server1"), lab.host("server2")
        await prepare(server1, optional_rails(1))
        server2.power_off()
        timing = await reboot(server1)
        assert not timing.timed_out and timing.wait_online == 0.0
        assert timing.waited_for == [server1.profile.mgmt.netdev]
        assert not any(line.endswith(TIMEOUT_LINE) for line in journal(server1))
        assert timing.started["roce-qos.service"] < 3.0
        assert (await server1.run("systemctl is-active roce-qos")).stdout == "active\n"
    finally:
        await lab.stop()


async def test_the_wait_ends_as_soon_as_the_peer_comes_back() -> None:
    lab = await make_lab()
    try:
        server1, server2 = lab.host("server1"), lab.host("server2")
        await prepare(server1, rails_yaml(1))
        server2.power_off()
        server1.request_reboot()
        await server2.power_up()  # both come up together, as after a rack power cycle
        await server1.wait_running()
        timing = server1.boot_timing
        assert not timing.timed_out and timing.wait_online < 120.0
    finally:
        await lab.stop()


async def test_on_a_network_manager_host_rails_do_not_hold_the_boot() -> None:
    lab = await make_lab("server1:nm_renderer")
    try:
        server1, server2 = lab.host("server1"), lab.host("server2")
        yaml_nm = rails_yaml(1).replace("  renderer: networkd\n", "")
        await prepare(server1, yaml_nm)
        server2.power_off()
        timing = await reboot(server1)
        assert not timing.timed_out and timing.waited_for == []
        assert "systemd[1]: Finished Network Manager Wait Online." in journal(server1)
        assert (await server1.run("systemctl is-active NetworkManager")).stdout == "active\n"
        assert (await server1.run("systemctl is-active systemd-networkd")).stdout == "inactive\n"
    finally:
        await lab.stop()


def test_a_global_renderer_in_a_later_file_moves_every_definition_without_its_own() -> None:
    # netplan-yaml docs (`renderer`) and src/parse.c finish_iterator: the last global renderer read wins for all.
    cfg = {
        "network": {
            "renderer": "networkd",
            "ethernets": {"eno1": {"dhcp4": True}, "ens1f0np0": {"renderer": "NetworkManager"}},
        }
    }
    assert waitonline.backend_of(cfg, "ethernets", "eno1") == "networkd"
    assert waitonline.backend_of(cfg, "ethernets", "ens1f0np0") == "NetworkManager"


def test_systemd_timespans_read_like_systemd_analyze() -> None:
    assert waitonline.timespan(4.213) == "4.213s"
    assert waitonline.timespan(121.95) == "2min 1.950s"
    assert waitonline.timespan(120.302) == "2min 302ms"
