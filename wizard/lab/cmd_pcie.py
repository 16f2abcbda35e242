"""``lspci -vv[v]`` with capabilities (link, ACS, IOMMU group) and ``mstconfig``/``mlxconfig -d <pci> [-e] q``.

Formats follow pciutils lspci(8) / ls-caps.c (LnkCap/LnkSta, "(ok)"/"(downgraded)" only on endpoints and upstream
ports, "Capabilities: <access denied>" without root) and mstflint's mlxconfig query table (Default/Current/Next
Boot with -e, '*' on rows whose next value differs). The simulation is labelled where a human reads it.
"""

from __future__ import annotations

from wizard.lab import pcie
from wizard.lab.commands import REGISTRY, command, getopts
from wizard.lab.commands.kernel import _numa, _pci_rows
from wizard.lab.streams import CommandFailed, Ctx

_plain_lspci = REGISTRY["lspci"]
BRIDGE_NAMES = {
    "root": ("Intel Corporation Device 352a", "8086:352a"),
    "upstream": ("Broadcom / LSI PEX880xx PCIe Gen 4 Switch", "1000:c010"),
    "downstream": ("Broadcom / LSI PEX880xx PCIe Gen 4 Switch", "1000:c010"),
}
PORT_TYPES = {"root": "Root Port (Slot+)", "upstream": "Upstream Port", "downstream": "Downstream Port (Slot+)"}


@command("lspci")
async def lspci(ctx: Ctx) -> int:
    opts, _ = getopts(ctx, "Dnvkd:s:mtq")
    if int(opts.get("v#", "0")) < 2:
        return await _plain_lspci(ctx)
    topo = pcie.topology(ctx.host.profile)
    rows = {r[0]: r for r in _pci_rows(ctx)}
    for addr, port in topo.ports.items():
        name, ids = BRIDGE_NAMES[port.kind]
        rows[addr] = (addr, "PCI bridge", "0604", name, ids, "b0")
    numeric, slot, vendor = int(opts.get("n#", "0")), opts.get("s"), opts.get("d")
    for addr in sorted(rows):
        _, cname, cid, text, ids, rev = rows[addr]
        if slot and not (addr == slot or addr[5:] == slot):
            continue
        if vendor and not ids.startswith(vendor.split(":")[0].lower()):
            continue
        shown = addr if "D" in opts else addr[5:]
        name = f"{cname} [{cid}]: {text} [{ids}]" if numeric >= 2 else f"{cname}: {text}"
        ctx.print(f"{shown} {name}" + (f" (rev {rev})" if rev else ""))
        ctx.print(_block(ctx, addr, topo))
    return 0


def _block(ctx: Ctx, addr: str, topo: pcie.Topology) -> str:
    host = ctx.host
    port = topo.ports.get(addr)
    lines = ["\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR+ FastB2B- DisINTx+"]
    if port is None:
        lines.append(f"\tNUMA node: {_numa(ctx, addr)}")
    group = pcie.iommu_group_of(host, addr)
    if group is not None:
        lines.append(f"\tIOMMU group: {group}")
    if port is not None:
        bus = int(addr[5:7], 16)
        lines.append(f"\tBus: primary={bus:02x}, secondary={port.secondary:02x}, subordinate={port.secondary:02x}")
    if not ctx.root:
        lines.append("\tCapabilities: <access denied>")
    else:
        lines += _express(host, addr, port, topo)
        if port is not None and port.kind != "upstream":
            on = pcie.acs_redirect(host, addr)
            ctl = (
                "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+"
                if on
                else ("SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd-")
            )
            lines += [
                "\tCapabilities: [2a0 v1] Access Control Services",
                "\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+",
                f"\t\tACSCtl:\t{ctl} EgressCtrl- DirectTrans-",
            ]
    driver = "pcieport" if port else None
    if port is None:
        driver = "mlx5_core" if any(p.pci == addr for p in host.profile.ports) else None
        driver = driver or ("nvidia" if any(g.pci == addr for g in host.profile.gpus) else host.profile.mgmt.driver)
    if driver in host.modules or driver == "pcieport":
        lines.append(f"\tKernel driver in use: {driver}")
    return "\n".join(lines) + "\n"


def _express(host, addr: str, port: pcie.Port | None, topo: pcie.Topology) -> list[str]:  # noqa: ANN001
    if port is None:
        kind, (cap, sta) = "Endpoint", pcie.endpoint_link(host, addr)
    elif port.kind == "downstream":
        child = next(iter(port.children))
        kind, cap = PORT_TYPES[port.kind], pcie.SWITCH_LINK
        sta = pcie.endpoint_link(host, child)[1]
    else:
        kind, cap, sta = PORT_TYPES[port.kind], pcie.SWITCH_LINK, pcie.SWITCH_LINK
    compare = port is None or port.kind == "upstream"  # ls-caps.c link_compare(): not on root/downstream ports

    def note(now: float, best: float) -> str:
        return "" if not compare else " (downgraded)" if now < best else " (ok)"

    return [
        f"\tCapabilities: [60] Express (v2) {kind}, MSI 00",
        f"\t\tLnkCap:\tPort #0, Speed {_gts(cap[0])}GT/s, Width x{cap[1]}, ASPM not supported",
        "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+",
        f"\t\tLnkSta:\tSpeed {_gts(sta[0])}GT/s{note(sta[0], cap[0])}, Width x{sta[1]}{note(sta[1], cap[1])}",
        "\t\t\tTrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-",
    ]


def _gts(speed: float) -> str:
    return f"{speed:g}"


# -- mstconfig / mlxconfig ----------------------------------------------------------------------------------
@command("mstconfig", "mlxconfig")
async def mstconfig(ctx: Ctx) -> int:
    opts, rest = getopts(ctx, "d:ey", ["dev=", "enable_verbosity", "yes"])
    device = opts.get("d") or opts.get("dev")
    if not rest or rest[0] not in ("q", "query"):
        raise CommandFailed(f"-E- {ctx.name} simulation answers queries only (q); nothing is written", 1)
    if not device:
        raise CommandFailed("-E- Device not specified, use -d <device>", 3)
    card = next((c for c in ctx.host.profile.cards for p in c.ports if device in (p.pci, p.pci[5:])), None)
    if card is None:
        raise CommandFailed(f"-E- Failed to open device: {device}, No such file or directory", 3)
    if not ctx.root:
        raise CommandFailed(f"-E- Failed to open device: {device}, Permission denied", 3)
    extended = "e" in opts or "enable_verbosity" in opts
    ctx.print(_mst_query(ctx, card, device, extended))
    return 0


def _mst_query(ctx: Ctx, card, device: str, extended: bool) -> str:  # noqa: ANN001
    host = ctx.host
    rows: list[tuple[str, str, str, str]] = [
        ("NUM_OF_VFS", "8", "0", "0"),
        ("NUM_OF_PF", "2", "2", "2"),
        ("SRIOV_EN", "True(1)", "False(0)", "False(0)"),
        ("PF_LOG_BAR_SIZE", "5", "5", "5"),
        ("NUM_PF_MSIX", "63", "63", "63"),
        ("INT_LOG_MAX_PAYLOAD_SIZE", "AUTOMATIC(0)", "AUTOMATIC(0)", "AUTOMATIC(0)"),
        ("CQE_COMPRESSION", "BALANCED(0)", "BALANCED(0)", "BALANCED(0)"),
    ]
    vpi = host.fault("vpi_ib_mode")
    if vpi is not None:
        # a VPI card lists LINK_TYPE_P<n>; the faulted port was set to IB and takes it at the next boot
        target = vpi.arg or card.ports[-1].netdev
        for n, port in enumerate(card.ports, start=1):
            nxt = "IB(1)" if port.netdev == target else "ETH(2)"
            rows.append((f"LINK_TYPE_P{n}", "IB(1)", "ETH(2)", nxt))
    for n, _ in enumerate(card.ports, start=1):
        rows += [
            (f"ROCE_CC_PRIO_MASK_P{n}", "255", "255", "255"),
            (f"CNP_DSCP_P{n}", "48", "48", "48"),
            (f"KEEP_ETH_LINK_UP_P{n}", "True(1)", "True(1)", "True(1)"),
        ]
    rows += [
        ("PCI_WR_ORDERING", "per_mkey(0)", "per_mkey(0)", "per_mkey(0)"),
        ("ADVANCED_PCI_SETTINGS", "False(0)", "False(0)", "False(0)"),
        ("SAFE_MODE_ENABLE", "True(1)", "True(1)", "True(1)"),
    ]
    head = [
        "",
        "Device #1:",
        "----------",
        "",
        f"Device type:        {'ConnectX4LX' if card.model.device_id == '1015' else 'ConnectX'}",
        f"Name:               {card.model.description.split(' - ')[0]}A-ACA_Ax",
        f"Description:        {card.model.description}; simulated by roce-wizard",
        f"Device:             {device}",
        "",
        "Configurations:                                      "
        + ("Default         Current         Next Boot" if extended else "Next Boot"),
    ]
    body, differ = [], False
    for name, default, current, nxt in rows:
        if extended:
            mark = "*" if nxt != default or nxt != current else " "  # mlxconfig.cpp: next differs
            differ |= mark == "*"
            body.append(f"{mark}        {name:<44}{default:<16}{current:<16}{nxt}")
        else:
            body.append(f"         {name:<44}{nxt}")
    tail = ["The '*' shows parameters with next value different from default/current value."] if differ else []
    return "\n".join(head + body + tail)
