"""Network facts: parsers of the probe's raw outputs, plus builders of live state the other network tests use."""

from __future__ import annotations

from typing import Any

from steps.discovery.facts import DiscoveryFacts
from steps.network.cabling import jumbo_argv, multicast_argv, parse_ping
from steps.network.design import expected_roce_mtu
from steps.network.facts import (
    Iface,
    NetworkFacts,
    RdmaPort,
    Route,
    Rule,
    interfaces_from,
    parse_sysctl,
    routes_from,
    rules_from,
    sysctl_argv,
)
from wizard.parsers import parse

MGMT = "eno1"


def link_local(mac: str) -> str:
    """fe80:: address the kernel derives from a MAC (modified EUI-64)."""
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    eui = b[:3] + [0xFF, 0xFE] + b[3:]
    groups = [f"{eui[i] << 8 | eui[i + 1]:x}" for i in range(0, 8, 2)]
    return "fe80::" + ":".join(groups)


def mac_of(host_index: int, port: int) -> str:
    return f"0c:42:a1:00:{host_index:02x}:{port:02x}"


def live(
    disc: DiscoveryFacts,
    *,
    host_index: int = 1,
    addresses: dict[str, str] | None = None,
    mtu: int = 1500,
    mtus: dict[str, int] | None = None,
    down: tuple[str, ...] = (),
    netplan: str | None = None,
    sysctl: str | None = None,
    sysctls: dict[str, str] | None = None,
    rules: list[Rule] | None = None,
    routes: list[Route] | None = None,
    bonds: dict[str, tuple[str, list[str]]] | None = None,
    lag_devices: dict[str, str] | None = None,
    others: dict[str, str] | None = None,
) -> NetworkFacts:
    """Live state of a host built from its discovery facts: ports up at ``mtu`` with ``addresses``.

    ``bonds`` maps a bond name to (mode, members); ``lag_devices`` maps a bond to the RDMA device it formed.
    """
    addresses = dict(addresses or {})
    mtus = dict(mtus or {})
    bonds = dict(bonds or {})
    interfaces = {
        MGMT: Iface(
            name=MGMT,
            mtu=1500,
            mac=mac_of(host_index, 99),
            link_type="ether",
            up=True,
            carrier=True,
            ipv4=[f"{disc.ssh_server_address}/24"],
            ipv6=[f"{link_local(mac_of(host_index, 99))}/64"],
        ),
    }
    masters = {m: b for b, (_, members) in bonds.items() for m in members}
    rdma: list[RdmaPort] = []
    for index, p in enumerate(disc.ports):
        assert p.netdev
        mac = mac_of(host_index, index)
        enslaved = p.netdev in masters
        cidr = addresses.get(p.netdev)
        interfaces[p.netdev] = Iface(
            name=p.netdev,
            mtu=mtus.get(p.netdev, mtu),
            mac=mac,
            link_type="ether",
            up=True,
            carrier=p.netdev not in down,
            master=masters.get(p.netdev),
            parent_dev=p.pci,
            ipv4=[cidr] if cidr and p.netdev not in down else [],
            ipv6=[] if enslaved else [f"{link_local(mac)}/64"],
        )
        lagged = any(p.netdev in members for b, (_, members) in bonds.items() if b in (lag_devices or {}))
        if p.rdma_device and not lagged:
            state = "DOWN" if p.netdev in down else "ACTIVE"
            rdma.append(
                RdmaPort(
                    device=p.rdma_device,
                    port=1,
                    state=state,
                    physical_state="LINK_UP",
                    netdev=p.netdev,
                    active_mtu=expected_roce_mtu(mtus.get(p.netdev, mtu)),
                    gids_v2_ipv4=[cidr.split("/")[0]] if cidr and p.netdev not in down else [],
                )
            )
    for name, (mode, _) in bonds.items():
        cidr = addresses.get(name)
        interfaces[name] = Iface(
            name=name,
            mtu=mtu,
            mac=mac_of(host_index, 50),
            link_type="ether",
            up=True,
            carrier=True,
            kind="bond",
            bond_mode=mode,
            ipv4=[cidr] if cidr else [],
            ipv6=[f"{link_local(mac_of(host_index, 50))}/64"],
        )
        device = (lag_devices or {}).get(name)
        if device:
            # a formed LAG leaves one RDMA device, which `rdma link` pairs with the first PF's netdev
            rdma.append(
                RdmaPort(
                    device=device,
                    port=1,
                    state="ACTIVE",
                    netdev=bonds[name][1][0],
                    active_mtu=expected_roce_mtu(mtu),
                    gids_v2_ipv4=[cidr.split("/")[0]] if cidr else [],
                )
            )
    return NetworkFacts(
        interfaces=interfaces,
        rdma=rdma,
        netplan_file=netplan,
        netplan_mode="600" if netplan is not None else None,
        netplan_owner="root:root" if netplan is not None else None,
        netplan_others=dict(others or {}),
        sysctl_file=sysctl,
        sysctl_live=dict(sysctls or {}),
        rules=list(rules or []),
        routes=list(routes or []),
    )


# --------------------------------------------------------------------------------------------- parsers

IP_JSON = """[{"ifindex":4,"ifname":"ens1f0np0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":9000,
"operstate":"UP","link_type":"ether","address":"0c:42:a1:00:01:00","parentbus":"pci","parentdev":"0000:3b:00.0",
"addr_info":[{"family":"inet","local":"192.168.11.1","prefixlen":24},
{"family":"inet6","local":"fe80::e42:a1ff:fe00:100","prefixlen":64,"scope":"link"}]},
{"ifindex":6,"ifname":"ens2f1np1","flags":["NO-CARRIER","BROADCAST","MULTICAST","UP"],"mtu":9000,
"operstate":"DOWN","link_type":"ether","address":"0c:42:a1:00:01:03","addr_info":[]},
{"ifindex":9,"ifname":"bond0","flags":["BROADCAST","MULTICAST","MASTER","UP","LOWER_UP"],"mtu":9000,
"link_type":"ether","address":"0c:42:a1:00:01:00","linkinfo":{"info_kind":"bond","info_data":{"mode":"802.3ad"}},
"addr_info":[]}]"""


def test_interfaces_read_carrier_from_lower_up_and_keep_link_local_addresses() -> None:
    interfaces = interfaces_from(parse("ip_json", IP_JSON))
    assert interfaces["ens1f0np0"].carrier is True
    assert interfaces["ens1f0np0"].link_local == ["fe80::e42:a1ff:fe00:100"]
    assert interfaces["ens1f0np0"].ipv4 == ["192.168.11.1/24"]
    assert interfaces["ens2f1np1"].carrier is False and interfaces["ens2f1np1"].up is True
    assert interfaces["bond0"].kind == "bond" and interfaces["bond0"].bond_mode == "802.3ad"


def test_multicast_ping_lists_every_replying_link_local_address_once() -> None:
    # iputils -n form: the local host answers its own multicast echo first, peers follow (DUP! only with -v).
    text = (
        "PING ff02::1%ens1f0np0 (ff02::1%ens1f0np0) 56 data bytes\n"
        "64 bytes from fe80::e42:a1ff:fe00:100%ens1f0np0: icmp_seq=1 ttl=64 time=0.041 ms\n"
        "64 bytes from fe80::e42:a1ff:fe00:200%ens1f0np0: icmp_seq=1 ttl=64 time=0.262 ms\n"
        "64 bytes from fe80::e42:a1ff:fe00:100%ens1f0np0: icmp_seq=2 ttl=64 time=0.038 ms\n"
        "\n--- ff02::1%ens1f0np0 ping statistics ---\n"
        "2 packets transmitted, 2 received, +1 duplicates, 0% packet loss, time 1001ms\n"
    )
    result = parse_ping(text)
    assert result["replies"] == ["fe80::e42:a1ff:fe00:100", "fe80::e42:a1ff:fe00:200"]
    assert (result["sent"], result["received"]) == (2, 2)


def test_ping_with_name_resolution_and_failures_parse() -> None:
    named = "64 bytes from server2 (fe80::e42:a1ff:fe00:200%ens1f0np0): icmp_seq=1 ttl=64 time=0.2 ms\n"
    assert parse_ping(named)["replies"] == ["fe80::e42:a1ff:fe00:200"]
    failed = (
        "PING 192.168.11.2 (192.168.11.2) from 192.168.11.1 ens1f0np0: 8972(9000) bytes of data.\n"
        "ping: local error: message too long, mtu=1500\n\n--- 192.168.11.2 ping statistics ---\n"
        "2 packets transmitted, 0 received, +2 errors, 100% packet loss, time 1002ms\n"
    )
    assert parse_ping(failed) == {"replies": [], "sent": 2, "received": 0}


def test_jumbo_ping_fills_exactly_one_mtu_with_dont_fragment() -> None:
    argv = jumbo_argv("ens1f0np0", "192.168.11.2", 9000)
    assert argv[argv.index("-s") + 1] == "8972" and argv[argv.index("-M") + 1] == "do"
    assert argv[argv.index("-I") + 1] == "ens1f0np0" and argv[-1] == "192.168.11.2"
    assert multicast_argv("ens1f0np0") == ["ping", "-6", "-n", "-c", "2", "-w", "3", "-I", "ens1f0np0", "ff02::1"]


def test_sysctl_reads_the_arp_and_reverse_path_keys_of_every_interface() -> None:
    argv = sysctl_argv(["ens1f0np0"])
    assert argv[:2] == ["sysctl", "-e"] and "net.ipv4.conf.all.rp_filter" in argv
    assert "net.ipv4.conf.ens1f0np0.arp_announce" in argv
    text = "net.ipv4.conf.all.rp_filter = 2\nnet.ipv4.conf.ens1f0np0.arp_ignore = 1\n"
    assert parse_sysctl(text) == {"net.ipv4.conf.all.rp_filter": "2", "net.ipv4.conf.ens1f0np0.arp_ignore": "1"}


def test_rules_and_routes_from_ip_json() -> None:
    rules: list[Any] = [
        {"priority": 0, "src": "all", "table": "local"},
        {"priority": 100, "src": "192.168.11.1", "table": "100"},
    ]
    assert rules_from(rules)[1] == Rule(priority=100, src="192.168.11.1", table="100")
    routes: list[Any] = [
        {"dst": "default", "gateway": "10.0.0.1", "dev": "eno1"},
        {"dst": "192.168.11.0/24", "dev": "ens1f0np0", "table": "100", "scope": "link"},
        {"type": "local", "dst": "192.168.11.1", "dev": "ens1f0np0", "table": "local"},
    ]
    assert routes_from(routes) == [
        Route(dst="default", dev="eno1", gateway="10.0.0.1", table="main"),
        Route(dst="192.168.11.0/24", dev="ens1f0np0", table="100"),
    ]
