"""Tools that ship with DOCA/MLNX_OFED: ibdev2netdev, show_gids, ofed_info, cma_roce_mode/tos, /etc/init.d/openibd."""

from __future__ import annotations

import asyncio

from wizard.lab import kmods
from wizard.lab import rdma as R
from wizard.lab.commands import command
from wizard.lab.commands.rdma import _devices
from wizard.lab.gids import ROCE_V2
from wizard.lab.streams import CommandFailed, Ctx


@command("ibdev2netdev")
async def ibdev2netdev(ctx: Ctx) -> int:
    host = ctx.host
    verbose = "-v" in ctx.args
    for d in sorted(_devices(ctx), key=lambda x: x.name):
        table = R.gid_table(host, d)
        entry = table.slots[0]
        eth = entry.ndev if entry else d.netdev
        link = "Up" if host.netdev_carrier(eth) else "Down"
        if not verbose:
            ctx.print(f"{d.name} port 1 ==> {eth} ({link})")
            continue
        state = "ACTIVE" if R.port_active(host, d) else "DOWN"
        ctx.print(
            f"{d.pci} {d.name} ({d.card.model.ca_type} - {d.card.serial:<11}) {d.card.model.description:<15} "
            f"fw {host.firmware(d.card)} port 1 ({state:<6}) ==> {eth} ({link})"
        )
    return 0


@command("show_gids")
async def show_gids(ctx: Ctx) -> int:
    host = ctx.host
    ctx.print("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV")
    ctx.print("---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---")
    wanted = ctx.args[0] if ctx.args else None
    count = 0
    for d in sorted(_devices(ctx), key=lambda x: x.name):
        if wanted and d.name != wanted:
            continue
        for i, e in R.gid_table(host, d).entries():
            ver = "v2" if e.type == ROCE_V2 else "v1"
            if e.gid.startswith("0000"):
                h = e.gid.replace(":", "")
                ipv4 = ".".join(str(int(h[k : k + 2], 16)) for k in range(24, 32, 2))
                ctx.print(f"{d.name}\t1\t{i}\t{e.gid}\t{ipv4}  \t{ver}\t{e.ndev}")
            else:
                ctx.print(f"{d.name}\t1\t{i}\t{e.gid}\t\t\t{ver}\t{e.ndev}")
            count += 1
    ctx.print(f"n_gids_found={count}")
    return 0


@command("ofed_info")
async def ofed_info(ctx: Ctx) -> int:
    version = ctx.host.doca_driver_version + ".0"
    if "-s" in ctx.args:
        ctx.print(f"OFED-internal-{version}:")
    elif "-n" in ctx.args:
        ctx.print(version)
    else:
        ctx.print(f"OFED-internal-{version}:\n\nInstalled Packages:\n-------------------")
        for name in sorted(ctx.host.packages):
            if "2410" in ctx.host.packages[name] or "OFED" in ctx.host.packages[name] or name.startswith("doca"):
                ctx.print(f"ii  {name}  {ctx.host.packages[name]}")
    return 0


def _cma_common(ctx: Ctx, flag: str) -> tuple[str, str, str | None]:
    """getopts "d:<flag>:hp:" of the mlnx-tools scripts; returns (device, port, value)."""
    dev, port, value = "mlx5_0", "1", None
    args = list(ctx.args)
    while args:
        a = args.pop(0)
        if a == "-h":
            raise CommandFailed("", 0)
        if a in ("-d", "-p", f"-{flag}") and args:
            v = args.pop(0)
            if a == "-d":
                dev = v
            elif a == "-p":
                port = v
            else:
                value = v
    if not ctx.root:
        ctx.print("You must be root to run this")
        raise CommandFailed("", 1)
    if "rdma_cm" not in ctx.host.modules:
        ctx.print("Module rdma_cm is not loaded or does not support configfs")
        raise CommandFailed("", 1)
    if R.find(ctx.host, dev) is None:
        ctx.eprint(f"mkdir: cannot create directory \u2018{dev}\u2019: No such file or directory")
        ctx.print(f"Failed to create configuration for {dev}")
        raise CommandFailed("", 1)
    if port != "1":
        ctx.print(f"Device {dev} port {port} does not exist")
        raise CommandFailed("", 1)
    return dev, port, value


@command("cma_roce_mode")
async def cma_roce_mode(ctx: Ctx) -> int:
    dev, _, value = _cma_common(ctx, "m")
    cfg = ctx.host.rdma_cfg.setdefault(dev, {})
    if value == "1":
        cfg["roce_mode"] = "IB/RoCE v1"
    elif value == "2":
        cfg["roce_mode"] = "RoCE v2"
    ctx.print(str(cfg.get("roce_mode", "RoCE v2")))
    return 0


@command("cma_roce_tos")
async def cma_roce_tos(ctx: Ctx) -> int:
    dev, _, value = _cma_common(ctx, "t")
    cfg = ctx.host.rdma_cfg.setdefault(dev, {})
    if value is not None and value.lstrip("-").isdigit() and int(value) >= 0:
        cfg["tos"] = int(value)
    ctx.print(str(cfg.get("tos", 0)))
    return 0


@command("openibd")
async def openibd(ctx: Ctx) -> int:
    host = ctx.host
    action = ctx.args[0] if ctx.args else ""
    if action not in ("start", "stop", "restart", "force-restart", "status", "force-stop"):
        raise CommandFailed(
            f"Usage: {ctx.argv[0]} {{start|force-start|stop|force-stop|restart|force-restart|status}}", 1
        )
    if action == "status":
        loaded = "mlx5_core" in host.modules
        ctx.print("\n  HCA driver loaded\n" if loaded else "\n  HCA driver is not loaded\n")
        ctx.print("Configured Mellanox EN devices:\n" + "\n".join(p.netdev for p in host.profile.ports) + "\n")
        ctx.print(
            "The following OFED modules are loaded:\n\n"
            + "\n".join(f"  {m}" for m in host.modules if m in kmods.RDMA_STACK)
            + "\n"
        )
        return 0 if loaded else 3
    if not ctx.root:
        raise CommandFailed(f"Only root can run {ctx.argv[0]}", 1)
    if action == "start":
        return 0
    ctx.out.write("Unloading HCA driver:")
    await asyncio.sleep(0.5 * host.time_scale)
    if "nvidia_peermem" in host.modules:
        ctx.print("                                      [FAILED]")
        ctx.eprint("rmmod: ERROR: Module ib_core is in use by: nvidia_peermem")
        return 1
    ctx.print("                                      [  OK  ]")
    if action in ("stop", "force-stop"):
        host.modules = [m for m in host.modules if m not in kmods.RDMA_STACK]
        host.on_module_change()
        return 0
    await host.driver_reload()
    ctx.print("Loading HCA driver and Access Layer:                       [  OK  ]")
    return 0
