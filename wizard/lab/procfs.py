"""/proc and /dev of a simulated host (modules, bonding state, kernel identity, device nodes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.lab import kmods, pcie, rdma
from wizard.lab.netdevs import BOND_MODE_TEXT, HASH_POLICIES, Netdev
from wizard.lab.vfs import DynDir, DynFile, Node

if TYPE_CHECKING:
    from wizard.lab.host import SimHost


def _text(fn) -> DynFile:  # noqa: ANN001
    return DynFile(fn)


def proc_root(host: SimHost) -> DynDir:
    def bonding() -> dict[str, Node]:
        return {d.name: _text(lambda d=d: bonding_text(host, d)) for d in host.netdevs.values() if d.kind == "bond"}

    def hostname_write(text: str) -> None:
        host.hostname = text.strip()

    def processes() -> dict[str, Node]:
        # /proc/<pid>/cmdline of every running service's main process: its ExecStart= after systemd substituted
        # ${VAR} from the environment files (systemd.service(5), "Command lines"), NUL-separated as proc(5) says.
        return {
            str(pid): DynDir(lambda argv=argv: {"cmdline": _text(lambda: "\0".join(argv) + "\0")})
            for pid, argv in running_commands(host).items()
        }

    def entries() -> dict[str, Node]:
        p = host.profile
        return {
            **processes(),
            "modules": _text(lambda: kmods.proc_modules(host)),
            "version": _text(
                lambda: (
                    f"Linux version {p.kernel} (buildd@lcy02-amd64-090) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
                    "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #135-Ubuntu SMP Fri Sep 27 13:53:58 UTC 2024\n"
                )
            ),
            "cmdline": _text(lambda: pcie.cmdline(host)),  # iommu_translated adds intel_iommu=on
            "mounts": _text(lambda: MOUNTS),
            "uptime": _text(lambda: f"{host.uptime():.2f} {host.uptime() * 100:.2f}\n"),
            "loadavg": _text(lambda: "0.08 0.03 0.01 1/812 4242\n"),
            "net": DynDir(lambda: {"bonding": DynDir(bonding)}),
            "sys": DynDir(
                lambda: {
                    "kernel": DynDir(
                        lambda: {
                            "hostname": DynFile(lambda: host.hostname + "\n", hostname_write),
                            "random": DynDir(lambda: {"boot_id": _text(lambda: host.boot_id + "\n")}),
                        }
                    )
                }
            ),
        }

    return DynDir(entries)


def running_commands(host: SimHost) -> dict[int, list[str]]:
    """pid -> argv of each active service's main process (ExecStart= as systemd ran it)."""
    import shlex

    from wizard.lab import services as sd
    from wizard.lab.unit_env import expand

    found: dict[int, list[str]] = {}
    for name, rt in host.units.items():
        unit = sd.find_unit(host, name) if rt.state in ("active", "activating") and rt.sub == "running" else None
        line = unit.get("Service", "ExecStart").lstrip("-@+!") if unit else ""
        if unit is None or not line:
            continue
        try:
            found[rt.pid] = shlex.split(expand(host, unit, line).replace("%%", "%"))
        except ValueError:
            continue
    return found


MOUNTS = (
    "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
    "udev /dev devtmpfs rw,nosuid,relatime,size=394212036k,nr_inodes=98553009,mode=755,inode64 0 0\n"
    "/dev/mapper/ubuntu--vg-ubuntu--lv / ext4 rw,relatime 0 0\n"
    "configfs /sys/kernel/config configfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "tmpfs /run tmpfs rw,nosuid,nodev,noexec,relatime,size=78842412k,mode=755,inode64 0 0\n"
)


def dev_root(host: SimHost) -> DynDir:
    def null_write(text: str) -> None:
        return None

    def infiniband() -> dict[str, Node]:
        out: dict[str, Node] = {}
        if "ib_uverbs" in host.modules:
            for i, _ in enumerate(rdma.devices(host)):
                out[f"uverbs{i}"] = DynFile(lambda: "", null_write, 0o666)
        if "rdma_ucm" in host.modules:
            out["rdma_cm"] = DynFile(lambda: "", null_write, 0o666)
        return out

    def entries() -> dict[str, Node]:
        e: dict[str, Node] = {
            "null": DynFile(lambda: "", null_write, 0o666),
            "zero": DynFile(lambda: "", null_write, 0o666),
            "infiniband": DynDir(infiniband),
        }
        if "nvidia" in host.modules:
            e["nvidiactl"] = DynFile(lambda: "", null_write, 0o666)
            for g in host.profile.gpus:
                e[f"nvidia{g.index}"] = DynFile(lambda: "", null_write, 0o666)
        return e

    return DynDir(entries)


def bonding_text(host: SimHost, bond: Netdev) -> str:
    """/proc/net/bonding/<bond> as the 5.15 bonding driver prints it."""
    b = bond.bond
    assert b is not None
    up = host.netdev_carrier(bond.name)
    lines = [f"Ethernet Channel Bonding Driver: v{host.profile.kernel}", "", f"Bonding Mode: {BOND_MODE_TEXT[b.mode]}"]
    if b.mode == "active-backup":
        active = b.primary or next((s for s in bond.slaves if host.netdev_carrier(s)), None)
        lines += [f"Primary Slave: {b.primary or 'None'}", f"Currently Active Slave: {active or 'None'}"]
    if b.mode in ("balance-xor", "802.3ad", "balance-tlb", "balance-alb"):
        lines.append(f"Transmit Hash Policy: {b.xmit_hash_policy} ({HASH_POLICIES.get(b.xmit_hash_policy, 0)})")
    lines += [
        f"MII Status: {'up' if up else 'down'}",
        f"MII Polling Interval (ms): {b.miimon}",
        f"Up Delay (ms): {b.updelay}",
        f"Down Delay (ms): {b.downdelay}",
        "Peer Notification Delay (ms): 0",
    ]
    if b.mode == "802.3ad":
        lines += [
            "",
            "802.3ad info",
            "LACP active: on",
            f"LACP rate: {b.lacp_rate}",
            "Min links: 0",
            f"Aggregator selection policy (ad_select): {b.ad_select}",
            "System priority: 65535",
            f"System MAC address: {bond.mac}",
            "Active Aggregator Info:",
            "\tAggregator ID: 1",
            f"\tNumber of ports: {sum(1 for s in bond.slaves if host.netdev_carrier(s))}",
            "\tActor Key: 21",
            "\tPartner Key: 21",
            f"\tPartner Mac Address: {host.lacp_partner(bond) or '00:00:00:00:00:00'}",
        ]
    for s in bond.slaves:
        dev = host.netdevs.get(s)
        if dev is None:
            continue
        carrier = host.netdev_carrier(s)
        lines += [
            "",
            f"Slave Interface: {s}",
            f"MII Status: {'up' if carrier else 'down'}",
            f"Speed: {str(host.netdev_speed(s)) + ' Mbps' if carrier else 'Unknown'}",
            f"Duplex: {'full' if carrier else 'unknown'}",
            f"Link Failure Count: {dev.stats.get('link_failures', 0)}",
            f"Permanent HW addr: {dev.perm_mac}",
            "Slave queue ID: 0",
        ]
        if b.mode == "802.3ad":
            lines += [
                f"Aggregator ID: {1 if carrier else 2}",
                "Actor Churn State: none",
                "Partner Churn State: none",
                "Actor Churned Count: 0",
                "Partner Churned Count: 0",
            ]
    return "\n".join(lines) + "\n"
