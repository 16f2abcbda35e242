"""Why the rails did not come back at boot, from what systemd-networkd says it configured each link with
(steps/network/boot.py), on `networkctl status` captured from a real Debian 12 guest after a real reboot."""

from __future__ import annotations

from pathlib import Path

from steps.network.boot import boot_causes, managed_links, network_files

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "vmlab" / "networkctl-status-leftover-eth3.txt"
NETPLAN = """network:
  version: 2
  ethernets:
    eth1: {}
    eth2: {}
    eth3:
      mtu: 9000
      addresses: [10.79.0.2/24]
  bonds:
    bond0:
      interfaces: [eth1, eth2]
      mtu: 9000
"""


def test_each_link_is_read_with_the_network_file_networkd_configured_it_with() -> None:
    files = network_files(CAPTURED.read_text())

    assert files == {
        "eth1": "/run/systemd/network/10-netplan-eth1.network",
        "eth2": "/run/systemd/network/10-netplan-eth2.network",
        "eth3": "/etc/systemd/network/10-eth3.network",
        "bond0": "/run/systemd/network/10-netplan-bond0.network",
    }


def test_a_leftover_network_file_that_sorts_first_is_named_as_the_cause() -> None:
    links = managed_links(NETPLAN)
    causes = boot_causes(links, network_files(CAPTURED.read_text()), "enabled")

    assert links == ["bond0", "eth1", "eth2", "eth3"]
    assert causes == [
        "at boot systemd-networkd configured eth3 with /etc/systemd/network/10-eth3.network, not with netplan's "
        "/run/systemd/network/10-netplan-eth3.network: the first matching .network file in name order wins "
        "(systemd.network(5)); remove that file or give it a name that sorts after netplan's"
    ]


def test_networkd_disabled_and_a_link_without_any_file_are_named() -> None:
    text = "* 5: eth3\n                  Network File: n/a\n                         State: off (unmanaged)\n"

    causes = boot_causes(["eth3"], network_files(text), "disabled")

    assert causes[0] == "systemd-networkd.service is disabled: nothing applies netplan's configuration at boot"
    assert causes[1].startswith("systemd-networkd configured eth3 with no .network file at boot")


def test_links_configured_by_netplan_give_no_cause() -> None:
    files = network_files(CAPTURED.read_text())

    assert boot_causes(["bond0", "eth1", "eth2"], files, "enabled") == []
