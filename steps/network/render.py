"""Generated files of the network stage: the netplan v2 file and the multi-NIC sysctl file, as exact text."""

from __future__ import annotations

from steps.network.design import Design, Endpoint

HEADER = "# Written by roce-wizard (stage network). Re-run the wizard to change it; edits here are replaced.\n"
SYSCTLS = (
    ("arp_ignore", 1, "answer ARP only for addresses of the port the request arrived on (no ARP flux)"),
    ("arp_announce", 2, "announce the outgoing port's own address in ARP requests"),
    ("rp_filter", 2, "loose reverse-path filter: replies arriving on a rail are not dropped"),
)


def netplan_yaml(design: Design, mtu: int, renderer: str = "networkd") -> str:
    """The whole /etc/netplan/60-roce-wizard.yaml for one host (netplan v2).

    ``renderer`` is written per interface, never as the global `network: renderer:`: netplan applies the global
    key of the last file read to every definition of every file, the management interface's included (netplan-yaml
    docs, `renderer`; steps/network/renderer.py). Rails are `optional: true` ("not required for booting",
    netplan-yaml docs): a back-to-back rail whose peer is off has no carrier, and systemd-networkd-wait-online would
    hold network-online.target for its 120 s timeout (systemd-networkd-wait-online.service(8)). The SSH interface
    is never optional: the host is online only once it is configured.
    """
    lines = [HEADER.rstrip("\n"), f"# Fabric: {design.fabric.replace('_', '-')}; MTU {mtu} on every rail."]
    if design.ssh_interface and all(design.ssh_interface != e.netdev for e in design.endpoints):
        lines.append(f"# {design.ssh_interface} carries the management SSH session and is deliberately absent.")
    lines.append(
        f"# renderer {renderer} per interface (the host's own); rails are optional: booting never waits for a rail."
    )
    lines += ["network:", "  version: 2", "  ethernets:"]
    bonds = [e for e in design.endpoints if e.bond is not None]
    for endpoint in design.endpoints:
        if endpoint.bond is None:
            lines += _interface(endpoint, mtu, design, renderer)
    for endpoint in bonds:
        for member in endpoint.members:
            lines += [
                f"    {member}:",
                f"      # member of {endpoint.netdev}",
                f"      renderer: {renderer}",
                *_optional(member, design),
                "      dhcp4: false",
                "      dhcp6: false",
                "      link-local: []",
                f"      mtu: {mtu}",
            ]
    if bonds:
        lines.append("  bonds:")
        for endpoint in bonds:
            lines += _interface(endpoint, mtu, design, renderer, bond=True)
    return "\n".join(lines) + "\n"


def _optional(netdev: str, design: Design) -> list[str]:
    return [] if netdev == design.ssh_interface else ["      optional: true"]


def _interface(endpoint: Endpoint, mtu: int, design: Design, renderer: str, *, bond: bool = False) -> list[str]:
    endpoints = design.endpoints
    out = [f"    {endpoint.netdev}:", f"      # {endpoint.label}: {endpoint.subnet}", f"      renderer: {renderer}"]
    carries_ssh = design.ssh_interface in (endpoint.netdev, *endpoint.members)
    out += [] if carries_ssh else ["      optional: true"]
    if bond and endpoint.bond is not None:
        out.append(f"      interfaces: [{', '.join(endpoint.members)}]")
    out += [
        "      dhcp4: false",
        "      dhcp6: false",
        "      accept-ra: false",
        "      link-local: [ipv6]",
        f"      mtu: {mtu}",
        "      addresses:",
        f"        - {endpoint.address}",
    ]
    if endpoint.table is not None:
        out += _policy(endpoint, endpoints)
    if bond and endpoint.bond is not None:
        out += _bond_parameters(endpoint)
    return out


def _policy(endpoint: Endpoint, endpoints: list[Endpoint]) -> list[str]:
    """Per-rail table and source rule: traffic from this rail's address leaves by this rail's port."""
    table = endpoint.table
    out = ["      routes:", f"        - to: {endpoint.subnet}", f"          table: {table}"]
    if endpoint.gateway:
        for other in endpoints:
            if other is not endpoint and other.subnet.version == endpoint.subnet.version:
                out += [
                    f"        - to: {other.subnet}",
                    f"          via: {endpoint.gateway}",
                    f"          table: {table}",
                ]
    out += [
        "      routing-policy:",
        f"        - from: {endpoint.ip}",
        f"          table: {table}",
        f"          priority: {table}",
    ]
    return out


def _bond_parameters(endpoint: Endpoint) -> list[str]:
    bond = endpoint.bond
    assert bond is not None
    out = ["      parameters:", f"        mode: {bond.mode}", "        mii-monitor-interval: 100"]
    if bond.mode == "802.3ad":
        out.append(f"        lacp-rate: {bond.lacp_rate}")
    if bond.mode in ("802.3ad", "balance-xor", "balance-tlb"):
        out.append(f"        transmit-hash-policy: {bond.transmit_hash_policy}")
    if endpoint.ipoib:
        # the bond takes the active slave's 20-byte IPoIB address on failover (the kernel forces this for IPoIB
        # slaves anyway); said explicitly so the file shows what happens
        out.append("        fail-over-mac-policy: active")
    return out


def sysctl_key(netdev: str, key: str) -> str:
    """sysctl.d name of a per-interface key; a dotted interface name needs the slash form."""
    if "." in netdev:
        return f"net/ipv4/conf/{netdev}/{key}"
    return f"net.ipv4.conf.{netdev}.{key}"


def sysctl_conf(netdevs: list[str]) -> str:
    """/etc/sysctl.d/60-roce-wizard.conf: per-rail ARP and reverse-path settings for a multi-NIC host.

    Per-interface keys leave the management interface alone; systemd-sysctl re-applies them whenever udev adds
    the interface, so they survive reboots and driver reloads.
    """
    lines = [HEADER.rstrip("\n"), "# Several rails on one host: keep ARP and replies on the port owning the address."]
    for key, value, why in SYSCTLS:
        lines.append(f"# {key}={value}: {why}")
    for netdev in netdevs:
        for key, value, _ in SYSCTLS:
            lines.append(f"{sysctl_key(netdev, key)} = {value}")
    return "\n".join(lines) + "\n"


def wanted_sysctls(netdevs: list[str]) -> dict[str, str]:
    """{dotted key: value} the live system must show for these interfaces."""
    # sysctl prints a dotted interface name with '/' in place of its dots, as it is queried.
    return {f"net.ipv4.conf.{n.replace('.', '/')}.{key}": str(value) for n in netdevs for key, value, _ in SYSCTLS}
