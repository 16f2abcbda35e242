"""Discovery's InfiniBand verdicts: the link layer the answers ask for, a subnet manager, 4X links at the group's
rate, and the partition key every port must hold.

Why each matters on real hosts:
- A port stays in INIT until a subnet manager assigns its LID (IBTA vol. 1, 7.2 and 14.4): with no SM there is no
  IPoIB carrier and no RDMA connection, however good the cable. The fix is an SM somewhere in the subnet: opensm on
  one host, the SM built into a managed switch, or UFM.
- A 4X port that trained 1X (or at a lower speed) passes every functional test at a quarter of the bandwidth; only
  the rate says so. It is a lane or a cable: the switch port iblinkinfo names is the other end.
- Ports that share no P_Key cannot exchange a single packet (IBTA 10.9); the SM's partition configuration decides.
- A VPI card runs each port as InfiniBand or Ethernet (mlxconfig LINK_TYPE_Pn). A port in the other mode than the
  fabric it is cabled to never links.
"""

from __future__ import annotations

from steps.discovery import facts as df
from wizard.engine.step import CheckItem

SM_FIX = (
    "start a subnet manager for this subnet: opensm on one host (apt install opensm; systemctl enable --now opensm),"
    " or enable the SM of a managed switch, or UFM; then the ports go ACTIVE by themselves"
)


def ib_ports(facts: df.DiscoveryFacts) -> list[df.NicPort]:
    return [p for p in facts.rdma_ports() if p.link_layer == "InfiniBand"]


def _name(port: df.NicPort) -> str:
    return f"{port.netdev or port.pci} ({port.rdma_device}/{port.rdma_port or 1})"


def link_layer_check(facts: df.DiscoveryFacts, want: str) -> CheckItem | None:
    """Every RDMA port runs the link layer the answers ask for (None when they let the hosts decide)."""
    if want == "auto":
        return None
    expected = "InfiniBand" if want == "infiniband" else "Ethernet"
    wrong = [p for p in facts.rdma_ports() if p.link_layer and p.link_layer != expected]
    if not wrong:
        return CheckItem(
            id="link_layer",
            title="link layer",
            status="pass",
            evidence=f"every RDMA port runs {expected}",
        )
    value = "IB(1)" if expected == "InfiniBand" else "ETH(2)"
    fixes = "; ".join(f"mlxconfig -d {p.pci} set LINK_TYPE_P{int(p.pci[-1]) + 1}={value[:-3]}" for p in wrong)
    return CheckItem(
        id="link_layer",
        title="link layer",
        status="fail",
        evidence="; ".join(f"{_name(p)} runs {p.link_layer}, fabric.link_layer is {want}" for p in wrong),
        fix=f"{fixes}, then reboot (a VPI port left in the other mode never links on this fabric); or correct "
        "fabric.link_layer (per group: fabric.groups[].link_layer)",
    )


def subnet_manager_check(facts: df.DiscoveryFacts, ports: list[df.NicPort]) -> CheckItem:
    """A subnet manager has swept every IB port: ACTIVE with a LID; INIT means none reaches the port."""
    waiting = [p for p in ports if p.ib and p.ib.state == "INIT"]
    sm = facts.ib_sm
    if waiting:
        return CheckItem(
            id="subnet_manager",
            title="subnet manager",
            status="fail",
            evidence="; ".join(
                f"{_name(p)} stuck in Initializing (SM lid {p.ib.sm_lid if p.ib else 0}, no LID): "
                "no subnet manager reaches it"
                for p in waiting
            )  # fmt: skip
            + (f"; sminfo: {facts.ib_sm_error}" if facts.ib_sm_error else ""),
            fix=SM_FIX,
        )
    lids = sorted({p.ib.sm_lid for p in ports if p.ib and p.ib.state == "ACTIVE"})
    if sm is not None:
        evidence = f"master SM at LID {sm.lid} ({sm.guid}, priority {sm.priority}); every port ACTIVE"
    elif lids:
        evidence = f"every port ACTIVE, SM LID {', '.join(map(str, lids))} (sminfo not run: {facts.ib_sm_error})"
    else:
        evidence = "no ACTIVE port to ask"
    return CheckItem(id="subnet_manager", title="subnet manager", status="pass", evidence=evidence)


def ib_link_check(ports: list[df.NicPort], expect_gbps: int | None) -> CheckItem:
    """Every IB port trained at full width (4X) and, where the answers say it, at the group's rate."""
    down = [p for p in ports if p.ib and p.ib.state == "DOWN"]
    slow = []
    for p in ports:
        if not p.ib or p.ib.state == "DOWN":
            continue
        narrow = p.ib.width is not None and p.ib.width < 4
        low = expect_gbps is not None and p.ib.rate_gbps is not None and p.ib.rate_gbps < expect_gbps
        if narrow or low:
            want = f", expected {expect_gbps} Gb/s" if expect_gbps else ""
            peer = f"; switch side: {p.ib.switch} port {p.ib.switch_port}" if p.ib.switch else ""
            slow.append(f"{_name(p)} at {p.ib.rate_text}{want}{peer}")
    problems = [f"{_name(p)} down ({p.ib.phys_state if p.ib else '?'})" for p in down] + slow
    if problems:
        return CheckItem(
            id="ib_links",
            title="InfiniBand links at full width and rate",
            status="fail",
            evidence="; ".join(problems),
            fix="a port below 4X or below its rate has a bad lane, cable or transceiver: reseat or replace it at both "
            "ends (iblinkinfo names the switch port); a port down: check the cable (Polling: no peer)",
        )
    rates = sorted({p.ib.rate_text for p in ports if p.ib})
    return CheckItem(
        id="ib_links",
        title="InfiniBand links at full width and rate",
        status="pass",
        evidence=f"{len(ports)} port(s) at {', '.join(rates)}" if rates else "no IB port",
    )


def pkey_check(ports: list[df.NicPort], pkey: str | None) -> CheckItem:
    """Every port holds the partition the answers name (default: the default partition, full membership)."""
    want = int(pkey or "0xffff", 16) & 0x7FFF
    missing = []
    for p in ports:
        held = {int(k, 16) & 0x7FFF for k in (p.ib.pkeys if p.ib else []) if int(k, 16) & 0x7FFF}
        if want not in held:
            missing.append(f"{_name(p)} holds {', '.join(p.ib.pkeys) if p.ib and p.ib.pkeys else 'no P_Key'}")
    label = pkey or "0xffff (default partition)"
    if missing:
        return CheckItem(
            id="pkeys",
            title="partition key",
            status="fail",
            evidence=f"{'; '.join(missing)}; the others hold {label}: no packet crosses between them",
            fix="add the port GUIDs to the partition in the subnet manager's partition configuration (opensm: "
            "/etc/opensm/partitions.conf, then reload the SM; UFM: the PKey page), or set fabric.ib_pkey to the "
            "partition the hosts are meant to share",
        )
    return CheckItem(id="pkeys", title="partition key", status="pass", evidence=f"every port holds {label}")


def infiniband_checks(
    facts: df.DiscoveryFacts, want: str, expect_gbps: int | None, pkey: str | None
) -> list[CheckItem]:
    """The IB items of one host: link layer first (it explains everything else), then SM, links, partitions."""
    items = [c for c in [link_layer_check(facts, want)] if c is not None]
    ports = ib_ports(facts)
    if ports:
        items += [subnet_manager_check(facts, ports), ib_link_check(ports, expect_gbps), pkey_check(ports, pkey)]
    return items
