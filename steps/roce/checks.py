"""Verification of the roce stage: per port QoS/ECN, RDMA-CM, lldpad and persistence; consistency across hosts."""

from __future__ import annotations

from steps.roce.desired import Desired, cm_needs, effective_dscp2prio, pfc_text
from steps.roce.facts import QOS_UNIT, SCRIPT_PATH, TEMPLATE_PATH, UDEV_RULE_PATH, RoceFacts, RocePort
from steps.roce.script import script_text, template_text, udev_rule_text, unit_text
from wizard.engine.step import CheckItem

RERUN = "re-run roce-wizard --from roce"


def host_checks(host: str, facts: RoceFacts, want: Desired) -> list[CheckItem]:
    """Every item the roce stage verifies on one host, from freshly probed facts."""
    items = [CheckItem(id=f"skip:{s.name}", title=f"{s.name} not configured", status="skip", evidence=s.reason)
             for s in facts.skipped]  # fmt: skip
    if not facts.ports:
        items.append(CheckItem(id="ports", title="RoCE ports", status="skip", evidence="no RoCE port on this host"))
        return items
    items.append(_lldpad(facts))
    for port in facts.ports:
        items += _port_items(port, facts, want)
    items += _cm_items(facts, want)
    items.append(_persistence(host, facts, want))
    return items


def _lldpad(facts: RoceFacts) -> CheckItem:
    running = facts.lldpad.active in ("active", "activating") or facts.lldpad_running
    return CheckItem(
        id="lldpad",
        title="no DCBX daemon rewriting PFC",
        status="fail" if running else "pass",
        evidence=(
            f"lldpad is running (systemd: {facts.lldpad.active}, {facts.lldpad.enabled}) and overwrites mlnx_qos"
            if running
            else f"lldpad not running (systemd: {facts.lldpad.active}, {facts.lldpad.enabled})"
        ),
        fix=f"sudo systemctl disable --now lldpad; then {RERUN}" if running else None,
    )


def _port_items(port: RocePort, facts: RoceFacts, want: Desired) -> list[CheckItem]:
    nd = port.netdev
    where = f"{nd} ({port.rdma_device})"
    tool = facts.qos_tool
    fix_trust = (
        f"mlnx_qos -i {nd} --trust dscp"
        if tool == "mlnx_qos"
        else f"dcb app add dev {nd} dscp-prio {want.dscp}:{want.priority}"
    )
    fix_pfc = (
        f"mlnx_qos -i {nd} --pfc {want.pfc_csv}"
        if tool == "mlnx_qos"
        else f"dcb pfc set dev {nd} prio-pfc {want.priority}:on"
    )
    lldpad_hint = (
        " (lldpad is running and resets it)" if facts.lldpad.active == "active" or facts.lldpad_running else ""
    )
    trust_ok = port.trust == "dscp"
    pfc_ok = port.pfc == want.pfc
    mapped = effective_dscp2prio(port).get(want.dscp)
    items = [
        CheckItem(
            id=f"trust:{nd}",
            title=f"{nd} trusts DSCP",
            status="pass" if trust_ok else "fail",
            evidence=f"{where}: trust {port.trust or 'unknown'}",
            fix=None if trust_ok else f"{fix_trust}; then {RERUN}",
        ),
        CheckItem(
            id=f"pfc:{nd}",
            title=f"{nd} PFC on priority {want.priority} only",
            status="pass" if pfc_ok else "fail",
            evidence=f"{where}: PFC enabled on {pfc_text(port.pfc)}{'' if pfc_ok else lldpad_hint}",
            fix=None
            if pfc_ok
            else (f"sudo systemctl disable --now lldpad; {fix_pfc}" if lldpad_hint else f"{fix_pfc}; then {RERUN}"),
        ),
        CheckItem(
            id=f"dscp:{nd}",
            title=f"{nd} DSCP {want.dscp} -> priority {want.priority}",
            status="pass" if trust_ok and mapped == want.priority else "fail",
            evidence=f"{where}: DSCP {want.dscp} maps to priority {mapped}"
            + ("" if trust_ok else " but DSCP is ignored (trust pcp)"),
            fix=None if trust_ok and mapped == want.priority else f"{fix_trust}; then {RERUN}",
        ),
    ]
    items.append(_ecn_item(port, want))
    if want.cable_len is not None:
        items.append(_headroom_item(port, tool, want.cable_len))
    return items


def _headroom_item(port: RocePort, tool: str, cable_len: int) -> CheckItem:
    """The lossless headroom covers the fabric's cables (NVIDIA: mlnx_qos --cable_len sizes the lossless buffers'
    headroom; the driver's default is 7 m)."""
    nd = port.netdev
    ok = port.cable_len == cable_len
    fix = (
        f"mlnx_qos -i {nd} --cable_len={cable_len}" if tool == "mlnx_qos" else f"dcb pfc set dev {nd} delay {cable_len}"
    )
    return CheckItem(
        id=f"headroom:{nd}",
        title=f"{nd} PFC headroom for {cable_len} m cables",
        status="pass" if ok else "fail",
        evidence=f"{nd} ({port.rdma_device}): headroom sized for "
        + (f"{port.cable_len} m of cable" if port.cable_len is not None else "an unknown cable length")
        + ("" if ok else f"; roce.cable_length_m is {cable_len} m: pauses come too late and packets drop"),
        fix=None if ok else f"{fix}; then {RERUN}",
    )


def _ecn_item(port: RocePort, want: Desired) -> CheckItem:
    nd = port.netdev
    item = CheckItem(id=f"ecn:{nd}", title=f"{nd} ECN/DCQCN on priority {want.priority}", status="skip")
    if not want.ecn:
        item.evidence = "roce.ecn is false"
    elif port.ecn is None:
        item.evidence = f"{nd}: no /sys/class/net/{nd}/ecn (inbox driver); the adapter's firmware defaults apply"
    else:
        wrong = {k: port.ecn.get(k) for k, v in want.ecn_values.items() if port.ecn.get(k) != v}
        shown = wrong or want.ecn_values
        item.status = "fail" if wrong else "pass"
        item.evidence = f"{nd}: " + ", ".join(f"ecn/{k}={v}" for k, v in shown.items())
        if wrong:
            item.fix = f"echo 1 | sudo tee /sys/class/net/{nd}/ecn/roce_np/enable/{want.priority}; then {RERUN}"
    return item


def _cm_items(facts: RoceFacts, want: Desired) -> list[CheckItem]:
    items = []
    for cm in facts.rdma_cm:
        mode, tos = cm_needs(cm, want)
        bad = mode or tos or cm.error
        tool = "cma_roce_mode/cma_roce_tos" if facts.cma_tool else "configfs"
        items.append(
            CheckItem(
                id=f"rdma_cm:{cm.device}",
                title=f"{cm.device} RDMA-CM {want.cm_mode}, ToS {want.tos}",
                status="fail" if bad else "pass",
                evidence=cm.error
                or f"{cm.device} port 1 ({tool}): {cm.mode or 'RoCE v2 (kernel default)'}, ToS {cm.tos or 0}",
                fix=f"{_cm_fix(cm.device, facts.cma_tool, want)}; then {RERUN}" if bad else None,
            )
        )
    return items


def _cm_fix(device: str, cma_tool: bool, want: Desired) -> str:
    if cma_tool:
        version = "2" if want.cm_mode == "RoCE v2" else "1"
        return f"sudo cma_roce_mode -d {device} -p 1 -m {version}; sudo cma_roce_tos -d {device} -p 1 -t {want.tos}"
    return (
        f"sudo mkdir -p /sys/kernel/config/rdma_cm/{device}; "
        f"echo {want.tos} | sudo tee /sys/kernel/config/rdma_cm/{device}/ports/1/default_roce_tos"
    )


def _persistence(host: str, facts: RoceFacts, want: Desired) -> CheckItem:
    problems = []
    if facts.script_text != script_text(host, facts, want):
        problems.append(f"{SCRIPT_PATH} " + ("missing" if facts.script_text is None else "differs from the plan"))
    if facts.unit_text != unit_text(facts.openibd):
        problems.append(f"{QOS_UNIT} unit file " + ("missing" if facts.unit_text is None else "differs"))
    for path, have, want_text in ((TEMPLATE_PATH, facts.template_text, template_text()),
                                  (UDEV_RULE_PATH, facts.udev_rule_text, udev_rule_text())):  # fmt: skip
        if have != want_text:
            # without them a driver reload (openibd restart, modprobe) leaves the ports lossy until the next boot
            problems.append(f"{path} " + ("missing" if have is None else "differs"))
    if facts.unit.enabled != "enabled":
        problems.append(f"{QOS_UNIT} is {facts.unit.enabled}, not enabled")
    if facts.unit.active == "failed":
        problems.append(f"{QOS_UNIT} failed (journalctl -u {QOS_UNIT})")
    return CheckItem(
        id="persistence",
        title="settings re-applied at every boot and driver reload",
        status="fail" if problems else "pass",
        evidence="; ".join(problems)
        or f"{QOS_UNIT} enabled ({facts.unit.active}), runs {SCRIPT_PATH} as planned; {UDEV_RULE_PATH} re-runs it "
        "for every port the driver re-creates",
        fix=f"{RERUN} (journalctl -u {QOS_UNIT} shows why it failed)" if problems else None,
    )


# -- consistency across hosts ------------------------------------------------------------------------------------
def cluster_consistency(facts: dict[str, RoceFacts], want: Desired) -> dict[str, list[CheckItem]]:
    """Compare the hosts rail by rail (i-th RoCE port of each host, PCI order).

    Trust, PFC, DSCP map and ToS have a reference (the answers): a host that deviates fails, the others only see a
    warning naming it. GID index and MTU have none: differences are warnings on every host.
    """
    result: dict[str, list[CheckItem]] = {h: [] for h in facts}
    if len(facts) < 2:
        return result
    rails = max(len(f.ports) for f in facts.values())
    deviations: dict[str, list[str]] = {h: [] for h in facts}
    spread: list[str] = []
    for rail in range(rails):
        row = {h: f.ports[rail] for h, f in facts.items() if rail < len(f.ports)}
        for host, port in row.items():
            deviations[host] += _deviations(rail, port, facts[host], want)
        for label, value in (("RoCE v2 IPv4 GID index", lambda p: p.gid_index), ("MTU", lambda p: p.mtu)):
            values = {h: value(p) for h, p in row.items()}
            if len(set(values.values())) > 1:
                spread.append(
                    f"rail {rail} {label}: " + ", ".join(f"{h} {row[h].netdev}={v}" for h, v in values.items())
                )
    for host in facts:
        others = [_summary(h, d) for h, d in deviations.items() if h != host and d]
        mine = deviations[host]
        status = "fail" if mine else ("warn" if others or spread else "pass")
        evidence = "; ".join(mine + others + spread) or (
            f"all {len(facts)} hosts: trust dscp, PFC {pfc_text(want.pfc)}, DSCP {want.dscp} -> {want.priority}, "
            f"ToS {want.tos}, same GID index and MTU per rail"
        )
        result[host].append(
            CheckItem(
                id="consistency",
                title="RoCE settings match across hosts",
                status=status,
                evidence=evidence,
                fix=f"fix this host's ports listed above; then {RERUN}" if mine else None,
            )
        )
    return result


def _summary(host: str, deviations: list[str]) -> str:
    """Another host's deviations in one clause: what differs and on which ports (details are in its own checks)."""
    ports = sorted({d.split()[2] for d in deviations})
    aspects = sorted({d.split()[3] if d.split()[3] != "RDMA-CM" else "RDMA-CM ToS" for d in deviations})
    return f"{host} differs ({', '.join(aspects)}) on {', '.join(ports)}: see {host}'s roce checks"


def _deviations(rail: int, port: RocePort, facts: RoceFacts, want: Desired) -> list[str]:
    out = []
    nd = f"rail {rail} {port.netdev}"
    if port.trust != "dscp":
        out.append(f"{nd} trust {port.trust}")
    if port.pfc != want.pfc:
        out.append(f"{nd} PFC on {pfc_text(port.pfc)}")
    if effective_dscp2prio(port).get(want.dscp) != want.priority:
        out.append(f"{nd} DSCP {want.dscp} -> priority {effective_dscp2prio(port).get(want.dscp)}")
    cm = facts.cm(port.rdma_device)
    if cm is not None and cm_needs(cm, want)[1]:
        out.append(f"{nd} RDMA-CM ToS {cm.tos}")
    return out
