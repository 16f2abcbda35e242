"""lldpcli / lldpctl (lldpd 1.0.x) on simulated hosts: the neighbours the lab's switches advertise on each port.

Output follows lldpd's own display code (src/client/display.c) through lldp_writer (json_writer.c's cleanup),
checked against lldpd's integration test expectations (tests/integration/test_lldpcli.py) and published
captures (tests/fixtures/real-outputs/lldpctl/). lldpd decodes no IEEE 802.1Qaz DCBX TLV: the leaves' PFC
(OUI 00-80-C2 subtype 11) and APP (subtype 12) TLVs appear under "unknown-tlvs" as hex bytes (lldp.c files any
802.1 subtype other than 1-4 as a custom TLV; ENABLE_CUSTOM is on by default in configure.ac).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from wizard.lab.commands import command
from wizard.lab.lldp_writer import JsonWriter
from wizard.lab.streams import CommandFailed, Ctx

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.switches import Switch, SwitchPort

SOCKET = "/run/lldpd.socket"


def pfc_tlv(sp: SwitchPort) -> bytes:
    """IEEE 802.1Qaz PFC configuration TLV body: willing|MBC|reserved|PFC cap (8), then the enable bitmap."""
    first = (0x80 if sp.pfc_willing else 0) | 8
    bitmap = sum(1 << p for p in sp.pfc_priorities)
    return bytes([first, bitmap])


def app_tlv(sp: SwitchPort) -> bytes:
    """IEEE 802.1Qaz APP TLV body: a reserved byte, then priority(3)|reserved(2)|selector(3) + protocol (DSCP: 5)."""
    body = bytearray([0])
    for port, prio in sorted(sp.app_udp.items()):  # selector 3: UDP or DCCP port
        body += bytes([(prio << 5) | 3]) + port.to_bytes(2, "big")
    for dscp, prio in sorted(sp.app_dscp.items()):
        body += bytes([(prio << 5) | 5]) + dscp.to_bytes(2, "big")
    return bytes(body)


def _hex(data: bytes) -> str:
    return ",".join(f"{b:02X}" for b in data)


def neighbours(host: SimHost) -> list[tuple[str, Switch, SwitchPort]]:
    """(local interface, switch, switch port) for every port with carrier whose far end runs LLDP, by ifindex."""
    lab = host.lab
    fab = getattr(getattr(lab, "fabric", None), "switches", None)
    if fab is None:
        return []
    found: list[tuple[int, str, Switch, SwitchPort]] = []
    mgmt = host.netdevs.get(host.profile.mgmt.netdev)
    sp = fab.mgmt_attach.get(host.name)
    if mgmt is not None and mgmt.admin_up and sp is not None:
        found.append((mgmt.ifindex, mgmt.name, fab.switches[sp.switch], sp))
    for i, port in enumerate(host.profile.ports):
        dev = host.netdevs.get(port.netdev)
        sp = fab.port_of((host.name, i))
        if dev is None or sp is None or not host.port_carrier(i):
            continue
        found.append((dev.ifindex, dev.name, fab.switches[sp.switch], sp))
    return [(name, sw, p) for _, name, sw, p in sorted(found, key=lambda t: t[0])]


def _age(host: SimHost) -> str:
    rt = host.units.get("lldpd.service")
    age = int(max(0.0, time.time() - (rt.since if rt else host.boot_time)) / max(host.time_scale, 1e-6)) + 31
    days = age // 86400
    return f"{days} day{'s' if days > 1 else ''}, {age // 3600 % 24:02d}:{age // 60 % 60:02d}:{age % 60:02d}"


def write_neighbours(w: JsonWriter, host: SimHost, only: list[str], details: bool) -> None:
    """The tag calls of display_interfaces()/display_interface() for remote ports."""
    rids: dict[str, int] = {}
    w.start("lldp", "LLDP neighbors")
    for iface, sw, sp in neighbours(host):
        if only and iface not in only:
            continue
        rid = rids.setdefault(sw.name, len(rids) + 1)
        w.start("interface", "Interface")
        w.attr("name", "", iface)
        w.attr("via", "via", "LLDP")
        w.attr("rid", "RID", str(rid))
        w.attr("age", "Time", _age(host))
        w.start("chassis", "Chassis")
        w.start("id", "ChassisID")
        w.attr("type", "", "mac")
        w.data(sw.chassis_id)
        w.end()
        w.datatag("name", "SysName", sw.name)
        w.datatag("descr", "SysDescr", sw.descr)
        w.datatag("mgmt-ip", "MgmtIP", sw.mgmt_ip)
        w.datatag("mgmt-iface", "MgmtIface", "2")
        for cap, on in (("Bridge", True), ("Router", True), ("Wlan", False), ("Station", False)):
            w.start("capability", "Capability")
            w.attr("type", "", cap)
            w.attr("enabled", "", "on" if on else "off")
            w.end()
        w.end()
        w.start("port", "Port")
        w.start("id", "PortID")
        w.attr("type", "", sp.lldp_id_type)
        w.data(sp.lldp_id or sp.port)
        w.end()
        w.datatag("descr", "PortDescr", sp.lldp_descr or sp.descr or sp.port)
        w.datatag("ttl", "TTL", "120")
        if details and sp.lldp_mfs is not None:
            w.datatag("mfs", "MFS", str(sp.lldp_mfs))
        w.end()
        if sp.send_dcbx:
            w.start("unknown-tlvs", "Unknown TLVs")
            for subtype, body in ((11, pfc_tlv(sp)), (12, app_tlv(sp))):
                w.start("unknown-tlv", "TLV")
                w.attr("oui", "OUI", "00,80,C2")
                w.attr("subtype", "SubType", str(subtype))
                w.attr("len", "Len", str(len(body)))
                w.data(_hex(body))
                w.end()
            w.end()
        w.end()
    w.end()


def plain(host: SimHost, only: list[str]) -> str:
    """``lldpcli show neighbors details`` in the plain format (display.c through text_writer.c)."""
    bar = "-" * 79
    out = [bar, "LLDP neighbors:", bar]
    rids: dict[str, int] = {}
    for iface, sw, sp in neighbours(host):
        if only and iface not in only:
            continue
        rid = rids.setdefault(sw.name, len(rids) + 1)
        out.append(f"Interface:    {iface}, via: LLDP, RID: {rid}, Time: {_age(host)}")
        out += ["  Chassis:", f"    ChassisID:    mac {sw.chassis_id}", f"    SysName:      {sw.name}"]
        out += [f"    SysDescr:     {sw.descr}", f"    MgmtIP:       {sw.mgmt_ip}", "    MgmtIface:    2"]
        out += ["    Capability:   Bridge, on", "    Capability:   Router, on"]
        out += ["    Capability:   Wlan, off", "    Capability:   Station, off"]
        out += ["  Port:", f"    PortID:       {sp.lldp_id_type} {sp.lldp_id or sp.port}"]
        out.append(f"    PortDescr:    {sp.lldp_descr or sp.descr or sp.port}")
        out.append("    TTL:          120")
        if sp.send_dcbx:
            out.append("  Unknown TLVs:")
            for subtype, body in ((11, pfc_tlv(sp)), (12, app_tlv(sp))):
                out.append(f"    TLV:          OUI: 00,80,C2, SubType: {subtype}, Len: {len(body)} {_hex(body)}")
        out.append(bar)
    return "\n".join(out) + "\n"


def _connect_error(ctx: Ctx, reason: str) -> CommandFailed:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    return CommandFailed(f"{stamp} [WARN/control] unable to connect to socket {SOCKET}: {reason}", 1)


@command("lldpcli", "lldpctl")
async def lldpcli(ctx: Ctx) -> int:
    host = ctx.host
    args = list(ctx.args)
    fmt = "plain"
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-f" and i + 1 < len(args):
            fmt, i = args[i + 1], i + 2
            continue
        if a.startswith("-f") and len(a) > 2:
            fmt = a[2:]
        elif a in ("-d", "-dd"):
            pass
        elif a == "-v":
            ctx.print("1.0.13")
            return 0
        else:
            rest.append(a)
        i += 1
    if fmt not in ("plain", "json", "json0", "keyvalue", "xml"):
        raise CommandFailed(f"{ctx.name}: unknown output format '{fmt}'", 1)
    rt = host.units.get("lldpd.service")
    if rt is None or rt.state != "active":
        raise _connect_error(ctx, "No such file or directory")
    if not ctx.root:
        raise _connect_error(ctx, "Permission denied")  # /run/lldpd.socket is root:_lldpd 0660
    only: list[str] = []
    if ctx.name == "lldpctl":
        only = rest  # lldpctl [IFACE...] = lldpcli show neighbors details [ports IFACE,...]
        details = True
    else:
        if rest[:2] != ["show", "neighbors"]:
            raise CommandFailed(f"{ctx.name}: simulated lldpcli answers 'show neighbors [ports IF,...] [details]'")
        details = "details" in rest
        if "ports" in rest and rest.index("ports") + 1 < len(rest):
            only = rest[rest.index("ports") + 1].split(",")
    if fmt in ("json", "json0"):
        w = JsonWriter(variant=0 if fmt == "json0" else 1)
        write_neighbours(w, host, only, details)
        ctx.out.write(w.render())
        return 0
    if fmt != "plain":
        raise CommandFailed(f"{ctx.name}: the simulation answers -f plain, json and json0 only")
    ctx.out.write(plain(host, only))
    return 0


@command("lldpd")
async def lldpd(ctx: Ctx) -> int:
    if "-v" in ctx.args:
        ctx.print("1.0.13")
        return 0
    raise CommandFailed("lldpd: already running (systemd starts it: systemctl status lldpd)", 1)
