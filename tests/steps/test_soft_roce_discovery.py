"""Hosts whose RDMA runs in software (Soft-RoCE): discovery, rails for the bandwidth test, and the outputs behind it.

The inputs are real outputs of the project's qemu lab (Debian 12, kernel 6.1, rxe on a NIC and on a bond), kept in
tests/fixtures/real-outputs (see SOURCES.md), so these run everywhere.
"""

from __future__ import annotations

from steps.discovery import facts as df
from steps.discovery.stage import describe_host, discovery_checks
from tests.fixture_files import real_output
from wizard.answers.sections import DiscoverySection
from wizard.parsers import parse
from wizard.validate.hostfacts import HostFacts

LAB = "vmlab-debian12"


def lab_host() -> df.DiscoveryFacts:
    interfaces = parse("ip_json", real_output("ip_json", f"{LAB}-bond-rail-rxe.txt"))
    links = parse("rdma_link", real_output("rdma_link", f"{LAB}-rxe-rail-and-bond.txt"))
    facts = df.DiscoveryFacts(os_id="debian", os_version="12", ssh_server_address="10.0.2.15")
    facts.other_interfaces = df.link_netdevs(facts.ports, interfaces, links)
    facts.soft_rdma = df.soft_rdma_ports(facts.ports, interfaces, links)
    df.attach_gids(facts.soft_rdma, parse("sysfs_gids", real_output("sysfs_gids", f"{LAB}-rxe-first-4-slots.txt")))
    facts.ssh_interface = df.ssh_interface(facts.ssh_server_address, facts.ports, facts.other_interfaces)
    return facts


def test_rxe_devices_on_a_nic_and_on_a_bond_are_found_with_their_addresses_and_roce_v2_gid() -> None:
    facts = lab_host()
    assert facts.ports == [], "no ConnectX function in the VM"
    found = {p.rdma_device: p for p in facts.soft_rdma}
    assert sorted(found) == ["rxe_bond0", "rxe_eth3"]
    rail, bond = found["rxe_eth3"], found["rxe_bond0"]
    assert (rail.netdev, rail.model, rail.rdma_state, rail.ipv4) == (
        "eth3",
        "Soft-RoCE (rxe)",
        "ACTIVE",
        ["10.79.0.1/24"],
    )
    assert (bond.netdev, bond.mtu, bond.ipv4) == ("bond0", 9000, ["10.78.0.1/24"])
    assert bond.roce_v2_ipv4_gid == 1 and rail.roce_v2_ipv4_gid == 1
    assert facts.ssh_interface == "eth0"


def test_a_host_with_only_software_rdma_warns_instead_of_failing_and_says_what_it_has() -> None:
    nics = next(c for c in discovery_checks(lab_host(), DiscoverySection()) if c.id == "nics")
    assert nics.status == "warn"
    assert "software RDMA only: rxe_bond0 on bond0" in nics.evidence or "rxe_eth3 on eth3" in nics.evidence
    assert any("rxe_eth3/1" in line and "Soft-RoCE" in line for line in describe_host(lab_host()))


def test_a_host_without_connectx_or_soft_roce_still_fails_the_nic_check() -> None:
    bare = df.DiscoveryFacts(os_id="debian", os_version="12")
    nics = next(c for c in discovery_checks(bare, DiscoverySection()) if c.id == "nics")
    assert nics.status == "fail" and "lspci" in (nics.fix or "")


def test_the_bandwidth_test_uses_soft_roce_ports_when_a_host_has_no_connectx_rails() -> None:
    rails = HostFacts("vm1", lab_host()).rails()
    assert [p.rdma_device for p in rails] == ["rxe_eth3", "rxe_bond0"], "NICs before bonds, the same on every host"


def test_the_lab_bond_reads_as_the_kernel_printed_it() -> None:
    bond = parse("bonding", real_output("bonding", f"{LAB}-xor-l34-virtio-100g.txt"))
    assert (bond.mode, bond.transmit_hash_policy, bond.mii_polling_interval) == ("balance-xor", "layer3+4", 100)
    assert sorted((s.interface, s.speed_mbps, s.link_failure_count) for s in bond.slaves) == [
        ("eth1", 100000, 1),
        ("eth2", 100000, 1),
    ]
    assert parse("ethtool", real_output("ethtool", f"{LAB}-bond0-2x100g.txt")).speed_mbps == 200000


def test_soft_roce_bandwidth_is_read_in_gbits_even_when_the_peak_column_is_zero() -> None:
    result = parse("ib_write_bw", real_output("ib_write_bw", f"{LAB}-rxe-bond0-client-D3.txt"))
    row = result.results[-1]
    assert (row.bytes, row.average.gbps, row.peak.gbps) == (65536, 0.18, 0.0)
    assert (result.device, result.gid_index, result.link_type) == ("rxe_bond0", 1, "Ethernet")
