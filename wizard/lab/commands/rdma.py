"""RDMA tools: iproute2 rdma, ibv_devices/ibv_devinfo, ibstat/ibstatus, ibdev2netdev, show_gids, ofed_info,
cma_roce_mode/tos and /etc/init.d/openibd."""

from __future__ import annotations

import json

from wizard.lab import degraded, ib
from wizard.lab import rdma as R
from wizard.lab.commands import command
from wizard.lab.gids import ROCE_V2, compact
from wizard.lab.streams import CommandFailed, Ctx

MTU_TEXT = {256: "256 (1)", 512: "512 (2)", 1024: "1024 (3)", 2048: "2048 (4)", 4096: "4096 (5)"}


def _devices(ctx: Ctx) -> list[R.RdmaDev]:
    return R.devices(ctx.host)


def _link_netdev(ctx: Ctx, dev: R.RdmaDev) -> str:
    """The netdev iproute2 associates with the port: the PF's own netdev (PF0's for a LAG device)."""
    return ctx.host.profile.ports[dev.port_indices[0]].netdev


@command("rdma")
async def rdma(ctx: Ctx) -> int:
    args = list(ctx.args)
    as_json = False
    while args and args[0].startswith("-"):
        a = args.pop(0)
        as_json |= a in ("-j", "-json", "--json")
    obj = args[0] if args else "dev"
    rest = args[1:]
    if rest[:1] == ["show"]:
        rest = rest[1:]
    devs = _devices(ctx)
    if rest:
        name = rest[0].split("/")[0]
        devs = [d for d in devs if d.name == name]
        if not devs:
            raise CommandFailed("Wrong device name", 1)
    if "link".startswith(obj):
        data = []
        for i, d in enumerate(devs):
            state, phys = R.state_text(ctx.host, d)
            nd = _link_netdev(ctx, d)
            data.append(
                {
                    "ifindex": i,
                    "ifname": d.name,
                    "port": 1,
                    "state": state,
                    "physical_state": phys,
                    "netdev": nd,
                    "netdev_index": ctx.host.netdevs[nd].ifindex,
                }
            )
        if as_json:
            ctx.print(json.dumps(data, separators=(",", ":")))
        else:
            for x in data:
                ctx.print(
                    f"link {x['ifname']}/1 state {x['state']} physical_state {x['physical_state']} "
                    f"netdev {x['netdev']} "
                )
        return 0
    if "dev".startswith(obj):
        for i, d in enumerate(devs):
            guid = R.node_guid(d.port)
            sys_guid = R.node_guid(d.card.ports[0])
            ctx.print(
                f"{i}: {d.name}: node_type ca fw {ctx.host.firmware(d.card)} node_guid {guid} "
                f"sys_image_guid {sys_guid} "
            )
        return 0
    if "statistic".startswith(obj) or obj == "stat":
        for d in devs:
            counters = " ".join(f"{k} {v}" for k, v in ctx.host.rdma_counters(d).items())
            ctx.print(f"link {d.name}/1 {counters} ")
        return 0
    if obj == "system":
        ctx.print("netns shared copy-on-fork on")
        return 0
    raise CommandFailed(f'Unknown object "{obj}".', 1)


def _need_devices(ctx: Ctx) -> list[R.RdmaDev]:
    devs = _devices(ctx)
    if not devs:
        raise CommandFailed("No IB devices found", 255)
    return devs


@command("ibv_devices")
async def ibv_devices(ctx: Ctx) -> int:
    devs = R.devices(ctx.host)
    ctx.print(f"    {'device':<16}\t   node GUID")
    ctx.print(f"    {'------':<16}\t{'----------------':>16}")
    for d in devs:
        ctx.print(f"    {d.name:<16}\t{R.node_guid(d.port).replace(':', '')}")
    return 0


def _pick(ctx: Ctx, devs: list[R.RdmaDev], name: str | None, tool: str) -> list[R.RdmaDev]:
    if name is None:
        return devs
    chosen = [d for d in devs if d.name == name]
    if not chosen:
        raise CommandFailed(f"IB device '{name}' wasn't found", 255)
    return chosen


@command("ibv_devinfo")
async def ibv_devinfo(ctx: Ctx) -> int:
    args = list(ctx.args)
    verbose = "-v" in args or "--verbose" in args
    name = args[args.index("-d") + 1] if "-d" in args and args.index("-d") + 1 < len(args) else None
    name = name or next((a.split("=", 1)[1] for a in args if a.startswith("--ib-dev=")), None)
    devs = _need_devices(ctx)
    if "-l" in args or "--list" in args:
        ctx.print(f"{len(devs)} HCA{'s' if len(devs) != 1 else ''} found:")
        for d in devs:
            ctx.print(f"\t{d.name}")
        return 0
    blocks = [_devinfo(ctx, d, verbose) for d in _pick(ctx, devs, name, "ibv_devinfo")]
    ctx.out.write("\n".join(blocks))
    return 0


def _devinfo(ctx: Ctx, d: R.RdmaDev, verbose: bool) -> str:
    host = ctx.host
    m = d.card.model
    guid = R.node_guid(d.port)
    lines = [
        f"hca_id:\t{d.name}",
        "\ttransport:\t\t\tInfiniBand (0)",
        f"\tfw_ver:\t\t\t\t{host.firmware(d.card)}",
        f"\tnode_guid:\t\t\t{guid}",
        f"\tsys_image_guid:\t\t\t{R.node_guid(d.card.ports[0])}",
        "\tvendor_id:\t\t\t0x02c9",
        f"\tvendor_part_id:\t\t\t{m.vendor_part_id}",
        "\thw_ver:\t\t\t\t0x0",
        f"\tboard_id:\t\t\t{m.board_id}",
        "\tphys_port_cnt:\t\t\t1",
    ]
    if verbose:
        lines += [f"\t{k}:{tabs}{v}" for k, tabs, v in DEVICE_CAPS]
    active = R.port_active(host, d)
    mtu = R.active_mtu(host, d)
    state = "PORT_ACTIVE (4)" if active else "PORT_DOWN (1)"
    sm_lid, lid = 0, 0
    if R.is_ib(host, d):
        v = ib.view(host, d.port_indices[0])
        state = f"PORT_{v.state} ({ib.STATE_NUM[v.state]})"
        sm_lid, lid, mtu = v.sm_lid, (v.lid if v.state == "ACTIVE" else 0), 4096
    lines += [
        "\t\tport:\t1",
        f"\t\t\tstate:\t\t\t{state}",
        "\t\t\tmax_mtu:\t\t4096 (5)",
        f"\t\t\tactive_mtu:\t\t{MTU_TEXT[mtu]}",
        f"\t\t\tsm_lid:\t\t\t{sm_lid}",
        f"\t\t\tport_lid:\t\t{lid}",
        "\t\t\tport_lmc:\t\t0x00",
        f"\t\t\tlink_layer:\t\t{R.link_layer(host, d)}",
    ]
    if verbose:
        speed = f"{m.speed_mbps / 1000:.1f} Gbps (32)" if active else "2.5 Gbps (1)"
        lines += [
            "\t\t\tmax_msg_sz:\t\t0x40000000",
            "\t\t\tport_cap_flags:\t\t0x04010000",
            "\t\t\tport_cap_flags2:\t0x0000",
            "\t\t\tmax_vl_num:\t\tinvalid value (0)",
            "\t\t\tbad_pkey_cntr:\t\t0x0",
            "\t\t\tqkey_viol_cntr:\t\t0x0",
            "\t\t\tsm_sl:\t\t\t0",
            "\t\t\tpkey_tbl_len:\t\t1",
            "\t\t\tgid_tbl_len:\t\t256",
            "\t\t\tsubnet_timeout:\t\t0",
            "\t\t\tinit_type_reply:\t0",
            "\t\t\tactive_width:\t\t1X (1)",
            f"\t\t\tactive_speed:\t\t{speed}",
            f"\t\t\tphys_state:\t\t{'LINK_UP (5)' if active else 'DISABLED (3)'}",
        ]
        for i, e in R.gid_table(host, d).entries():
            shown = compact(e.gid) if e.type == ROCE_V2 else e.gid
            ver = "RoCE v2" if e.type == ROCE_V2 else "RoCE v1"
            lines.append(f"\t\t\tGID[{i:3d}]:\t\t{shown}, {ver}")
    return "\n".join(lines) + "\n"


DEVICE_CAPS = [
    ("max_mr_size", "\t\t\t", "0xffffffffffffffff"),
    ("page_size_cap", "\t\t\t", "0xfffffffffffff000"),
    ("max_qp", "\t\t\t\t", "262144"),
    ("max_qp_wr", "\t\t\t", "32768"),
    ("device_cap_flags", "\t\t", "0xa5721c36"),
    ("max_sge", "\t\t\t\t", "30"),
    ("max_sge_rd", "\t\t\t", "30"),
    ("max_cq", "\t\t\t\t", "16777216"),
    ("max_cqe", "\t\t\t\t", "4194303"),
    ("max_mr", "\t\t\t\t", "16777216"),
    ("max_pd", "\t\t\t\t", "16777216"),
    ("max_qp_rd_atom", "\t\t\t", "16"),
    ("max_ee_rd_atom", "\t\t\t", "0"),
    ("max_res_rd_atom", "\t\t\t", "4194304"),
    ("max_qp_init_rd_atom", "\t\t", "16"),
    ("max_ee_init_rd_atom", "\t\t", "0"),
    ("atomic_cap", "\t\t\t", "ATOMIC_HCA (1)"),
    ("max_ee", "\t\t\t\t", "0"),
    ("max_rdd", "\t\t\t\t", "0"),
    ("max_mw", "\t\t\t\t", "16777216"),
    ("max_raw_ipv6_qp", "\t\t\t", "0"),
    ("max_raw_ethy_qp", "\t\t\t", "0"),
    ("max_mcast_grp", "\t\t\t", "2097152"),
    ("max_mcast_qp_attach", "\t\t", "240"),
    ("max_total_mcast_qp_attach", "\t", "503316480"),
    ("max_ah", "\t\t\t\t", "2147483647"),
    ("max_fmr", "\t\t\t\t", "0"),
    ("max_srq", "\t\t\t\t", "8388608"),
    ("max_srq_wr", "\t\t\t", "32767"),
    ("max_srq_sge", "\t\t\t", "31"),
    ("max_pkeys", "\t\t\t", "128"),
    ("local_ca_ack_delay", "\t\t", "16"),
    ("hca_core_clock", "\t\t\t", "156250kHZ"),
    ("num_comp_vectors", "\t\t", "63"),
]


@command("ibstat")
async def ibstat(ctx: Ctx) -> int:
    host = ctx.host
    names = [a for a in ctx.args if not a.startswith("-")]
    devs = _devices(ctx)
    if names:
        devs = [d for d in devs if d.name == names[0]]
        if not devs:
            raise CommandFailed(
                f"ibpanic: [{host.pid_hint}] main: stat of IB device '{names[0]}' failed: No such file or directory",
                255,
            )
    if "-l" in ctx.args:
        for d in devs:
            ctx.print(d.name)
        return 0
    for d in devs:
        if R.is_ib(host, d):
            ctx.print(_ibstat_ib(ctx, d))
            continue
        active = R.port_active(host, d)
        speed = degraded.speed_mbps(host, d.port_indices[0]) // 1000  # as trained (fault degraded)
        mac = host.netdevs[d.netdev].mac if d.netdev in host.netdevs else d.port.mac
        ctx.print(
            f"CA '{d.name}'\n\tCA type: {d.card.model.ca_type}\n\tNumber of ports: 1\n"
            f"\tFirmware version: {host.firmware(d.card)}\n\tHardware version: 0\n"
            f"\tNode GUID: 0x{R.node_guid(d.port).replace(':', '')}\n"
            f"\tSystem image GUID: 0x{R.node_guid(d.card.ports[0]).replace(':', '')}\n\tPort 1:\n"
            f"\t\tState: {'Active' if active else 'Down'}\n"
            f"\t\tPhysical state: {'LinkUp' if active else 'Disabled'}\n"
            f"\t\tRate: {speed if active else 10}\n\t\tBase lid: 0\n\t\tLMC: 0\n\t\tSM lid: 0\n"
            f"\t\tCapability mask: 0x04010000\n\t\tPort GUID: 0x{R.port_guid(mac)}\n"
            f"\t\tLink layer: {R.link_layer(host, d)}"
        )
    return 0


def _ibstat_ib(ctx: Ctx, d: R.RdmaDev) -> str:
    """ibstat of an InfiniBand port (infiniband-diags ibstat.c: port_state_str, port_phy_state_str; Rate is the
    total in Gb/s, LIDs decimal)."""
    host = ctx.host
    v = ib.view(host, d.port_indices[0])
    return (
        f"CA '{d.name}'\n\tCA type: {d.card.model.ca_type}\n\tNumber of ports: 1\n"
        f"\tFirmware version: {host.firmware(d.card)}\n\tHardware version: 0\n"
        f"\tNode GUID: 0x{R.port_guid(d.port.mac)}\n"
        f"\tSystem image GUID: 0x{R.port_guid(d.card.ports[0].mac)}\n\tPort 1:\n"
        f"\t\tState: {ib.IBSTAT_STATE[v.state]}\n\t\tPhysical state: {v.phys_state}\n"
        f"\t\tRate: {v.rate_gbps:g}\n\t\tBase lid: {v.lid}\n\t\tLMC: 0\n\t\tSM lid: {v.sm_lid}\n"
        f"\t\tCapability mask: 0xa651e848\n\t\tPort GUID: 0x{R.port_guid(d.port.mac)}\n"
        f"\t\tLink layer: InfiniBand"
    )


@command("ibstatus")
async def ibstatus(ctx: Ctx) -> int:
    host = ctx.host
    for d in _devices(ctx):
        if R.is_ib(host, d):
            v = ib.view(host, d.port_indices[0])
            gid = R.gid_table(host, d).slots[0]
            ctx.print(
                f"Infiniband device '{d.name}' port 1 status:\n\tdefault gid:\t {gid.gid if gid else ''}\n"
                f"\tbase lid:\t 0x{v.lid:x}\n\tsm lid:\t\t 0x{v.sm_lid:x}\n"
                f"\tstate:\t\t {ib.STATE_NUM[v.state]}: {v.state}\n"
                f"\tphys state:\t {ib.PHYS_NUM[v.phys_state]}: {v.phys_state}\n\trate:\t\t {v.rate_text}\n"
                "\tlink_layer:\t InfiniBand\n"
            )
            continue
        active = R.port_active(host, d)
        table = R.gid_table(host, d)
        gid = table.slots[0].gid if table.slots[0] else "0000:0000:0000:0000:0000:0000:0000:0000"
        rate = degraded.rate_text(host, d.port_indices[0]) if active else "10 Gb/sec (4X SDR)"
        ctx.print(
            f"Infiniband device '{d.name}' port 1 status:\n\tdefault gid:\t {gid}\n\tbase lid:\t 0x0\n"
            f"\tsm lid:\t\t 0x0\n\tstate:\t\t {'4: ACTIVE' if active else '1: DOWN'}\n"
            f"\tphys state:\t {'5: LinkUp' if active else '3: Disabled'}\n\trate:\t\t {rate}\n"
            f"\tlink_layer:\t {R.link_layer(host, d)}\n"
        )
    return 0
