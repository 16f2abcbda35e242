"""Kernel-facing tools: lsmod, modprobe, rmmod, insmod, modinfo, lspci."""

from __future__ import annotations

from wizard.lab import ib, kmods
from wizard.lab.commands import command, getopts
from wizard.lab.streams import CommandFailed, Ctx


@command("lsmod")
async def lsmod(ctx: Ctx) -> int:
    ctx.out.write(kmods.lsmod_text(ctx.host))
    return 0


@command("modprobe")
async def modprobe(ctx: Ctx) -> int:
    opts, names = getopts(ctx, "rqvanb", ["remove", "quiet", "all", "dry-run"])
    remove = "r" in opts or "remove" in opts
    quiet = "q" in opts or "quiet" in opts
    if not names:
        raise CommandFailed("modprobe: ERROR: missing parameters. See -h.", 1)
    if "a" not in opts and "all" not in opts:
        names = names[:1]  # the rest are module parameters
    for name in names:
        mod = kmods.normalize(name)
        if not ctx.root:
            if remove:
                raise CommandFailed(f"modprobe: ERROR: could not remove '{mod}': Operation not permitted")
            if mod in ctx.host.modules:
                return 0
            if not kmods.available(ctx.host, mod):
                raise CommandFailed(
                    f"modprobe: FATAL: Module {mod} not found in directory /lib/modules/{ctx.host.profile.kernel}"
                )
            raise CommandFailed(f"modprobe: ERROR: could not insert '{mod}': Operation not permitted")
        try:
            if remove:
                kmods.unload(ctx.host, mod)
            else:
                kmods.load(ctx.host, mod)
        except kmods.ModError as exc:
            if quiet and "not found" in str(exc):
                return 1
            raise CommandFailed(str(exc), 1) from None
    return 0


@command("rmmod")
async def rmmod(ctx: Ctx) -> int:
    for name in [a for a in ctx.args if not a.startswith("-")]:
        mod = kmods.normalize(name)
        if not ctx.root:
            raise CommandFailed(f"rmmod: ERROR: could not remove '{mod}': Operation not permitted")
        try:
            kmods.unload(ctx.host, mod, tool="rmmod")
        except kmods.ModError as exc:
            raise CommandFailed(str(exc), 1) from None
    return 0


@command("insmod")
async def insmod(ctx: Ctx) -> int:
    raise CommandFailed("insmod: ERROR: use modprobe on the simulated host", 1)


MOD_DESCRIPTIONS = {
    "mlx5_core": "Mellanox 5th generation network adapters (ConnectX series) core driver",
    "mlx5_ib": "Mellanox 5th generation network adapters (ConnectX series) IB driver",
    "nvidia_peermem": "NVIDIA GPU memory plug-in",
    "bonding": "Ethernet Channel Bonding Driver, v5.15.0",
    "ib_core": "core kernel InfiniBand API",
}


@command("modinfo")
async def modinfo(ctx: Ctx) -> int:
    host = ctx.host
    status = 0
    for name in [a for a in ctx.args if not a.startswith("-")]:
        mod = kmods.normalize(name)
        if not kmods.available(host, mod) and not (mod == "nvidia_peermem" and host.profile.gpus):
            ctx.eprint(f"modinfo: ERROR: Module {name} not found.")
            status = 1
            continue
        where = "updates/dkms" if host.stack == "doca" and mod in kmods.RDMA_STACK else "kernel"
        ctx.print(f"filename:       /lib/modules/{host.profile.kernel}/{where}/{mod}.ko")
        if host.stack == "doca" and mod in kmods.RDMA_STACK:
            ctx.print(f"version:        {host.doca_driver_version}")
        if mod.startswith("nvidia"):
            ctx.print(f"version:        {host.profile.nvidia_driver}")
        ctx.print(f"license:        Dual BSD/GPL\ndescription:    {MOD_DESCRIPTIONS.get(mod, mod)}")
        deps = ",".join(d.replace("_", "-") if d == "pci_hyperv_intf" else d for d in kmods.deps_of(host, mod))
        ctx.print(f"depends:        {deps}\nname:           {mod}")
        ctx.print(f"vermagic:       {host.profile.kernel} SMP mod_unload modversions ")
    return status


# nvidia-smi name -> (pci.ids device name, vendor:device), from the PCI ID database (pci-ids.ucw.cz, vendor 10de)
GPU_PCI = {
    "NVIDIA L20": ("AD102GL [L20]", "10de:26ba"),
    "NVIDIA H100 80GB HBM3": ("GH100 [H100 SXM5 80GB]", "10de:2330"),
    "Tesla V100-SXM2-32GB": ("GV100GL [Tesla V100 SXM2 32GB]", "10de:1db5"),
    "NVIDIA A100-SXM4-80GB": ("GA100 [A100 SXM4 80GB]", "10de:20b2"),
}


def _pci_rows(ctx: Ctx) -> list[tuple[str, str, str, str, str, str]]:
    """(address, class name, class id, vendor+device text, ids, rev)."""
    p = ctx.host.profile
    rows = [
        (
            p.mgmt.pci,
            "Ethernet controller",
            "0200",
            "Intel Corporation Ethernet Controller X710 for 10GbE SFP+",
            f"{p.mgmt.vendor}:{p.mgmt.device}",
            "02",
        )
    ]
    ib_lab = ctx.host.lab is not None and getattr(ctx.host.lab, "ib", None) is not None
    for card in p.cards:
        for port in card.ports:
            # A VPI function in InfiniBand mode has PCI class 0207 (pci_ids.h PCI_CLASS_SERIAL_INFINIBAND)
            ib_mode = ib_lab and ib.port_link_layer(ctx.host, p.ports.index(port)) == "InfiniBand"
            rows.append(
                (
                    port.pci,
                    "Infiniband controller" if ib_mode else "Ethernet controller",
                    "0207" if ib_mode else "0200",
                    f"Mellanox Technologies {card.model.lspci_name}",
                    f"15b3:{card.model.device_id}",
                    "",
                )
            )
    for g in p.gpus:
        name, ids = GPU_PCI.get(g.name, GPU_PCI["NVIDIA L20"])
        rows.append((g.pci, "3D controller", "0302", f"NVIDIA Corporation {name}", ids, "a1"))
    return sorted(rows)


@command("lspci")
async def lspci(ctx: Ctx) -> int:
    opts, _ = getopts(ctx, "Dnvkd:s:mtq")
    numeric = int(opts.get("n#", "0"))
    verbose = "v" in opts or "k" in opts
    vendor_filter = opts.get("d")
    slot_filter = opts.get("s")
    for addr, cname, cid, text, ids, rev in _pci_rows(ctx):
        if vendor_filter:
            v, _, d = vendor_filter.partition(":")
            iv, idv = ids.split(":")
            if (v and v.lower() != iv) or (d and d.lower() != idv):
                continue
        if slot_filter and not addr.endswith(slot_filter):
            continue
        shown = addr if "D" in opts else addr[5:]
        suffix = f" (rev {rev})" if rev else ""
        if numeric >= 2:
            line = f"{shown} {cname} [{cid}]: {text} [{ids}]{suffix}"
        elif numeric == 1:
            line = f"{shown} {cid}: {ids}{suffix}"
        else:
            line = f"{shown} {cname}: {text}{suffix}"
        ctx.print(line)
        if verbose:
            numa = _numa(ctx, addr)
            driver = "mlx5_core" if ids.startswith("15b3") else "nvidia" if ids.startswith("10de") else "i40e"
            ctx.print(f"\tSubsystem: {text.split(' ')[0]} Device 0016\n\tNUMA node: {numa}")
            if driver in ctx.host.modules:
                ctx.print(f"\tKernel driver in use: {driver}")
            ctx.print(f"\tKernel modules: {driver}\n")
    return 0


def _numa(ctx: Ctx, addr: str) -> int:
    p = ctx.host.profile
    for card in p.cards:
        if any(port.pci == addr for port in card.ports):
            return card.numa_node
    for g in p.gpus:
        if g.pci == addr:
            return g.numa_node
    return p.mgmt.numa_node
