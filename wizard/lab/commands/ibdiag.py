"""infiniband-diags' subnet queries on the simulated IB subnet (wizard/lab/ib.py): sminfo, iblinkinfo, ibnetdiscover.

They send MADs through /dev/infiniband/umad*, which udev leaves root-only (rdma-core's 90-rdma-umad.rules sets no
group), so an unprivileged run fails the way the real tools do: libibumad cannot open the port.
Formats follow infiniband-diags (linux-rdma/rdma-core infiniband-diags/sminfo.c, iblinkinfo.c, ibnetdiscover.c).
"""

from __future__ import annotations

from wizard.lab import ib
from wizard.lab import rdma as R
from wizard.lab.commands import command
from wizard.lab.streams import CommandFailed, Ctx

# iblinkinfo prints each lane's signalling rate (libibmad mad_dump_linkspeed*): EDR 25.78125, HDR 53.125 Gbps
SIGNAL_GBPS = {10.0: 10.0, 14.0: 14.0625, 25.0: 25.78125, 50.0: 53.125, 100.0: 106.25}
MAD_STATE = {"DOWN": "Down", "INIT": "Initialize", "ARMED": "Armed", "ACTIVE": "Active"}


def _umad_port(ctx: Ctx, tool: str) -> tuple[R.RdmaDev, ib.IbPortView]:
    host = ctx.host
    if not ctx.root:
        raise CommandFailed(
            f"ibwarn: [{host.pid_hint}] umad_open_port: can't open UMAD port ((null):0)\n"
            f"{tool}: iberror: failed: Failed to open '(null)' port '0'",
            255,
        )
    devs = [d for d in R.devices(host) if R.is_ib(host, d)]
    if not devs:
        raise CommandFailed(f"ibwarn: [{host.pid_hint}] umad_get_port: No IB devices found\n{tool}: iberror: "
                            "failed: Failed to open '(null)' port '0'", 255)  # fmt: skip
    # libibumad picks the first port that is ACTIVE, else the first one (umad.c resolve_ca_port)
    views = [(d, ib.view(host, d.port_indices[0])) for d in devs]
    return next(((d, v) for d, v in views if v.state == "ACTIVE"), views[0])


@command("sminfo")
async def sminfo(ctx: Ctx) -> int:
    host = ctx.host
    _, v = _umad_port(ctx, "sminfo")
    subnet = host.lab.ib if host.lab is not None else None
    sm = subnet.sm_switch if subnet is not None else None
    if v.state != "ACTIVE" or sm is None:
        # No SM has swept the port: its SM LID is 0 and the SubnGet(SMInfo) to LID 0 times out.
        raise CommandFailed(
            # as captured with infiniband-diags 44 before any SM ran (tests/fixtures/real-outputs/sminfo/
            # ibsim-debian12-no-sm-query-failed.txt)
            f"ibwarn: [{host.pid_hint}] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0)\n"
            "sminfo: iberror: failed: query",
            255,
        )
    ctx.print(f"sminfo: sm lid {sm.lid} sm guid {sm.guid}, activity count 48211 priority 15 state 3 SMINFO_MASTER")
    return 0


def _peer_text(subnet: ib.IbSubnet, lab: object, switch: str, port: int) -> str | None:
    """What sits at the far end of a switch port: a host CA port or the other switch."""
    for (host_name, i), (sw, sp) in subnet.attach.items():
        if sw == switch and sp == port:
            host = lab.hosts[host_name]  # type: ignore[attr-defined]
            v = ib.view(host, i)
            if v.phys_state != "LinkUp":
                return None
            dev = next((d for d in R.devices(host) if d.port_indices[0] == i), None)
            ca = dev.name if dev is not None else f"port{i}"
            width = f"{v.width}X"
            state = MAD_STATE[v.state]  # libibmad mad_dump_portstate
            link = f"==( {width:>3} {str(SIGNAL_GBPS.get(v.lane_gbps, v.lane_gbps)):>14} Gbps {state:>6}/  LinkUp)==>"
            # iblinkinfo notes a link that trained below what both ends support (iblinkinfo.c: "Could be")
            model = host.profile.card_of(i).model
            could = []
            if v.width < model.lanes:
                could.append(f"Could be {model.lanes}X ")
            best = model.speed_mbps / 1000 / model.lanes
            if v.lane_gbps < best:
                could.append(f"Could be {SIGNAL_GBPS.get(best, best)} Gbps")
            note = " ".join(could) or " "
            return f'{link} {v.lid if v.state == "ACTIVE" else 0:>7} {1:>4}[  ] "{host.hostname} {ca}" ({note})'
    for a, b in subnet.isl_links():
        for here, there in ((a, b), (b, a)):
            if here == (switch, port) and subnet.managed(switch):
                other = subnet.switches[there[0]]
                link = f"==( {'4X':>3} {25.78125:>14g} Gbps {'Active':>6}/  LinkUp)==>"
                return f'{link} {other.lid:>7} {there[1]:>4}[  ] "{other.name}" ( )'
    return None


@command("iblinkinfo")
async def iblinkinfo(ctx: Ctx) -> int:
    host = ctx.host
    _, v = _umad_port(ctx, "iblinkinfo")
    subnet = host.lab.ib if host.lab is not None else None
    if subnet is None or v.state == "DOWN":
        raise CommandFailed(f"ibwarn: [{host.pid_hint}] ibnd_discover_fabric: Failed to discover fabric\n"
                            "iblinkinfo: iberror: failed: discover failed", 255)  # fmt: skip
    here = next(sw for (name, _), (sw, _) in subnet.attach.items() if name == host.name)
    # Directed-route discovery reaches the switches joined to the local one by links; an unmanaged switch with no
    # ISL is a fabric of its own.
    reach = [here] if not subnet.managed(here) else [s for s in subnet.switches if subnet.managed(s)]
    for name in reach:
        sw = subnet.switches[name]
        ctx.print(f"Switch: {sw.guid} {sw.name}:")
        for port in range(1, ib.SWITCH_PORTS + 1):
            peer = _peer_text(subnet, host.lab, name, port)
            if peer is None:
                ctx.print(f'{sw.lid:>11} {port:>4}[  ] ==(                Down/ Polling)==>             [  ] "" ( )')
            else:
                ctx.print(f"{sw.lid:>11} {port:>4}[  ] {peer}")
    return 0


# SL -> VL as opensm programs a CA port with QoS on its defaults (qos_sl2vl 0,1,...,7,0,1,...,7) and 8 data VLs
DEFAULT_SL2VL = [sl % 8 for sl in range(16)]


@command("smpquery")
async def smpquery(ctx: Ctx) -> int:
    """`smpquery sl2vl LID` and `smpquery portinfo LID [PORT]` for the simulated CA ports (smpquery.c formats)."""
    host = ctx.host
    _umad_port(ctx, "smpquery")
    args = [a for a in ctx.args if not a.startswith("-")]
    if len(args) < 2 or args[0] not in ("sl2vl", "portinfo"):
        raise CommandFailed("Usage: smpquery [options] <op> <dest dr_path|lid|guid> [op params]", 255)
    subnet = host.lab.ib if host.lab is not None else None
    lid = int(args[1], 0)
    found = [(h, i) for (name, i), port_lid in (subnet.lids.items() if subnet else []) if port_lid == lid
             for h in [host.lab.hosts[name]]]  # fmt: skip
    if not found or ib.view(*found[0]).state != "ACTIVE":
        raise CommandFailed(
            f"ibwarn: [{host.pid_hint}] mad_rpc: _do_madrpc failed; dport (Lid {lid})\n"
            f"smpquery: iberror: [pid {host.pid_hint}] main: failed: operation {args[0]}: node info query failed",
            255,
        )
    if args[0] == "sl2vl":
        ctx.print(f"# SL2VL table: Lid {lid}")
        ctx.print("#                 SL: |" + "".join(f"{n:2d}|" for n in range(16)))
        ctx.print("ports: in  0, out  0: |" + "".join(f"{v:2d}|" for v in DEFAULT_SL2VL))
        return 0
    ctx.print(f"# Port info: Lid {lid} port 1")
    ctx.print(f"LID:.............................{lid}")
    ctx.print("VLCap:...........................VL0-7")
    ctx.print("OperVLs:.........................VL0-7")
    return 0
