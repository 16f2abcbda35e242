"""Discovery's verdicts and summaries: per-host checks, the lines shown per host, differences between hosts."""

from __future__ import annotations

from collections import Counter
from typing import Any

from steps.discovery import facts as df
from steps.platform.checks import platform_checks
from steps.platform.facts import named_endpoints
from wizard.engine.step import CheckItem

SUPPORTED_OS = {("ubuntu", "22.04"), ("ubuntu", "24.04"), ("debian", "12")}


def discovery_checks(facts: df.DiscoveryFacts, expect: Any, link_layer: str = "ethernet") -> list[CheckItem]:
    """Per-host verdicts on what discovery found (InfiniBand ports' links: steps/discovery/ib_checks.py)."""
    items: list[CheckItem] = []
    add = items.append
    os_ok = (facts.os_id, facts.os_version) in SUPPORTED_OS
    add(
        CheckItem(
            id="os",
            title="operating system",
            status="pass" if os_ok else "warn",
            evidence=f"{facts.os_pretty or 'unknown'}, kernel {facts.kernel}",
            fix=None if os_ok else "tested on Ubuntu 22.04/24.04 and Debian 12",
        )
    )
    add(
        CheckItem(
            id="sudo",
            title="sudo",
            status="pass" if facts.sudo_ok else "fail",
            evidence="sudo works" if facts.sudo_ok else (facts.sudo_error or "refused"),
            fix=None
            if facts.sudo_ok or "NOPASSWD" in (facts.sudo_error or "")
            else "allow NOPASSWD sudo for the SSH user, or set ssh.sudo: password",
        )
    )
    add(
        CheckItem(
            id="ssh_interface",
            title="management interface",
            status="pass" if facts.ssh_interface else "warn",
            evidence=f"SSH arrives on {facts.ssh_interface} ({facts.ssh_server_address})"
            if facts.ssh_interface
            else f"could not match SSH server address {facts.ssh_server_address} to an interface",
        )
    )
    ports = facts.ports
    soft = facts.soft_rdma
    if ports or not soft:
        add(
            CheckItem(
                id="nics",
                title="ConnectX ports",
                status="pass" if ports else "fail",
                evidence=", ".join(f"{p.netdev or '?'} ({p.model}, {p.pci})" for p in ports) or "none found by lspci",
                fix=None if ports else "check the cards are seated and visible: lspci -nn -d 15b3:",
            )
        )
    else:
        # A lab or development host: RDMA runs in software. Everything works, at CPU speed, without PFC or ECN.
        add(
            CheckItem(
                id="nics",
                title="ConnectX ports",
                status="warn",
                evidence="none; software RDMA only: "
                + ", ".join(f"{p.rdma_device} on {p.netdev} ({p.model})" for p in soft),
                fix="fine for a lab; production needs ConnectX ports (lspci -nn -d 15b3: shows none)",
            )
        )
    unmapped = [p for p in ports if not p.rdma_device and not _lag_member(p, ports)]
    add(
        CheckItem(
            id="rdma_mapping",
            title="RDMA device per port",
            status="fail" if unmapped else "pass",
            evidence="; ".join(f"{p.netdev or p.pci}: no RDMA device" for p in unmapped)
            or ", ".join(f"{p.rdma_device} port {p.rdma_port} -> {p.netdev}" for p in facts.rdma_ports()),
            fix="load mlx5_ib (modprobe mlx5_ib) or install the driver stack (stage ofed)" if unmapped else None,
        )
    )
    rdma = facts.rdma_ports()
    if expect.expect_rdma_ports is not None:
        good = len(rdma) == expect.expect_rdma_ports
        add(
            CheckItem(
                id="port_count",
                title="RDMA port count",
                status="pass" if good else "fail",
                evidence=f"{len(rdma)} RDMA ports, expected {expect.expect_rdma_ports}",
            )
        )
    rdma = [p for p in rdma if p.ib is None]  # an IB port's state, width and rate have their own items
    down = [p for p in rdma if p.link_detected is False or (p.rdma_state or "ACTIVE") != "ACTIVE"]
    add(
        CheckItem(
            id="links",
            title="links up",
            status="pass" if not down else ("fail" if expect.expect_link_speed_gbps else "warn"),
            evidence="; ".join(f"{p.netdev}: no link ({p.rdma_device} {p.rdma_state}/{p.physical_state})" for p in down)
            or "all RDMA ports have link",
            fix="check the cable and the peer port of each listed interface" if down else None,
        )
    )
    if expect.expect_link_speed_gbps is not None:
        wrong = [p for p in rdma if p not in down and (p.speed_mbps or 0) != expect.expect_link_speed_gbps * 1000]
        add(
            CheckItem(
                id="speed",
                title="link speed",
                status="fail" if wrong else "pass",
                evidence="; ".join(f"{p.netdev}: {p.speed_mbps} Mb/s" for p in wrong)
                or f"all at {expect.expect_link_speed_gbps} Gb/s",
            )
        )
    if expect.expect_gpus is not None:
        good = len(facts.gpus) == expect.expect_gpus
        add(
            CheckItem(
                id="gpus",
                title="GPU count",
                status="pass" if good else "fail",
                evidence=f"{len(facts.gpus)} GPUs ({', '.join(sorted({g.name for g in facts.gpus})) or 'none'}), "
                f"expected {expect.expect_gpus}",
            )
        )
    # ACS, IOMMU and link downgrades warn here; a port in InfiniBand mode fails (steps/platform/checks.py)
    items += platform_checks(facts.platform, *named_endpoints(facts), link_layer=link_layer)
    return items


def _lag_member(port: df.NicPort, ports: list[df.NicPort]) -> bool:
    """A RoCE LAG port: its card's other port, in the same bond, carries the card's single mlx5_bond device."""
    return port.master is not None and any(
        other.card == port.card and other.master == port.master and "bond" in (other.rdma_device or "")
        for other in ports
        if other is not port
    )


def describe_host(facts: df.DiscoveryFacts) -> list[str]:
    """What discovery found, in a few lines an operator can scan."""
    stack = f"{facts.ofed_stack} {facts.ofed_version}" if facts.ofed_stack else "inbox driver"
    lines = [f"{facts.os_pretty or facts.os_id} ({facts.kernel}), {stack}, SSH via {facts.ssh_interface or '?'}"]
    for port in facts.ports:
        speed = f"{port.speed_mbps // 1000}G" if port.speed_mbps else "no link"
        rdma = f"{port.rdma_device}/{port.rdma_port}" if port.rdma_device else "no RDMA device"
        gid = port.roce_v2_ipv4_gid
        if port.ib is not None:  # InfiniBand: the port state, LID and rate say more than the IPoIB netdev
            ib = port.ib
            lid = f" LID {ib.lid}" if ib.state == "ACTIVE" else ""
            speed = f"IB {ib.state}{lid} {ib.rate_text}" + (
                f" -> {ib.switch} port {ib.switch_port}" if ib.switch else ""
            )
        lines.append(
            f"  {port.netdev or '?':<12} {rdma:<16} {port.model} fw {port.firmware or '?'} {port.pci} numa "
            f"{port.numa_node if port.numa_node is not None else '?'} {speed} mtu {port.mtu or '?'}"
            + (f" RoCEv2 GID {gid}" if gid is not None else "")
        )
    for port in facts.soft_rdma:
        speed = f"{port.speed_mbps // 1000}G" if port.speed_mbps else "speed ?"
        gid = port.roce_v2_ipv4_gid
        lines.append(
            f"  {port.netdev or '?':<12} {port.rdma_device}/{port.rdma_port:<11} {port.model} {speed} "
            f"mtu {port.mtu or '?'} {port.rdma_state or '?'}" + (f" RoCEv2 GID {gid}" if gid is not None else "")
        )
    if facts.gpus:
        names = sorted({g.name for g in facts.gpus})
        lines.append(f"  {len(facts.gpus)} x {', '.join(names)} (driver {facts.gpu_driver or '?'})")
        groups: dict[tuple[str, ...], list[int]] = {}
        for gpu in facts.gpus:
            if gpu.nearest_nics:
                groups.setdefault(tuple(gpu.nearest_nics), []).append(gpu.index)
        for nics, indices in groups.items():
            lines.append(f"  GPU {','.join(map(str, indices))} nearest NIC: {', '.join(nics)}")
    if facts.ib_sm is not None:
        lines.append(f"  subnet manager: LID {facts.ib_sm.lid} ({facts.ib_sm.guid}, {facts.ib_sm.state or '?'})")
    return lines


def host_differences(facts: dict[str, df.DiscoveryFacts]) -> dict[str, list[CheckItem]]:
    """Flag firmware, port count, speed, NIC model, kernel and GPU differences between hosts (a warning each)."""
    result: dict[str, list[CheckItem]] = {name: [] for name in facts}
    if len(facts) < 2:
        return result
    aspects = {
        "firmware": lambda f: ",".join(sorted({p.firmware or "?" for p in f.rdma_ports()})),
        "port count": lambda f: str(len(f.rdma_ports())),
        "link speeds": lambda f: ",".join(str(p.speed_mbps) for p in f.rdma_ports()),
        "NIC models": lambda f: ",".join(sorted({p.model for p in f.ports})),
        "kernel": lambda f: f.kernel,
        "driver stack": lambda f: f"{f.ofed_stack or 'inbox'} {f.ofed_version or ''}".strip(),
        "GPU count": lambda f: str(len(f.gpus)),
    }
    for aspect, value in aspects.items():
        values = {name: value(f) for name, f in facts.items()}
        common, count = Counter(values.values()).most_common(1)[0]
        has_majority = count * 2 > len(values)
        for name, mine in values.items():
            if mine == common and (has_majority or len(set(values.values())) == 1):
                continue
            others = sorted({f"{n}: {v}" for n, v in values.items() if v != mine})
            result[name].append(
                CheckItem(
                    id=f"diff_{aspect.replace(' ', '_')}",
                    title=f"{aspect} matches the other hosts",
                    status="warn",
                    evidence=f"{name} has {mine!r}; " + ", ".join(others),
                    fix="bring this host in line with the others before continuing",
                )
            )
    return result
