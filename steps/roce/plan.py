"""The roce plan: lldpad out of the way, QoS and ECN per physical port, RDMA-CM defaults, then persistence."""

from __future__ import annotations

from steps.roce.desired import Desired, PortDelta, cm_needs, port_delta
from steps.roce.facts import (
    CONFIGFS_CM,
    QOS_UNIT,
    ROCE_V2,
    SCRIPT_PATH,
    TEMPLATE_PATH,
    TEMPLATE_UNIT,
    UDEV_RULE_PATH,
    UNIT_PATH,
    RoceFacts,
    RocePort,
)
from steps.roce.script import dcb_pfc_map, script_text, template_text, udev_rule_text, unit_text
from wizard.engine.step import Change, FileWrite, HostPlan, Impact, RemoteCommand

LLDPAD_WHY = (
    "lldpad runs DCBX and rewrites the adapter's PFC/ETS settings, undoing mlnx_qos (mlnx_qos itself warns when it "
    "runs); cabled back-to-back or with a statically configured switch, both ends need static PFC and no DCBX daemon"
)


def build_plan(host: str, facts: RoceFacts, want: Desired) -> HostPlan:
    """Pure: the ordered changes that bring ``host`` to ``want``, or why none are needed."""
    plan = HostPlan(stage="roce", host=host)
    plan.notes += [f"{s.name}: skipped, {s.reason}" for s in facts.skipped]
    if not facts.ports:
        plan.noop_reason = "no RoCE port to configure" + (" (see notes)" if facts.skipped else "")
        return plan
    _blockers(plan, facts, want)
    if plan.blockers:
        return plan
    plan.notes.append(
        f"{want.summary()} under the default DSCP map (DSCP {want.dscp & ~7}-{want.dscp | 7} -> priority "
        f"{want.dscp >> 3}); PFC on priority {want.priority} only, on {len(facts.ports)} physical port(s)"
    )
    _lldpad(plan, facts)
    for port in facts.ports:
        delta = port_delta(port, want)
        if not delta.empty:
            plan.changes.append(_port_change(port, delta, facts, want))
    if want.ecn and all(p.ecn is None for p in facts.ports):
        plan.notes.append(
            "ECN/DCQCN: this driver has no /sys/class/net/IF/ecn tree (inbox mlx5); congestion control stays at the "
            "adapter's firmware defaults; without a switch marking CE (back-to-back) PFC is what protects anyway"
        )
    _rdma_cm(plan, facts, want)
    _persistence(plan, host, facts, want)
    if not plan.changes:
        plan.noop_reason = (
            f"{facts.qos_tool} already trusts DSCP with PFC on priority {want.priority} on all "
            f"{len(facts.ports)} port(s); DSCP {want.dscp} -> priority {want.priority}"
            + ("; ECN on" if want.ecn and any(p.ecn is not None for p in facts.ports) else "")
            + f"; RDMA-CM {want.cm_mode}, ToS {want.tos}; {QOS_UNIT} enabled"
        )
    return plan


def _blockers(plan: HostPlan, facts: RoceFacts, want: Desired) -> None:
    if facts.qos_tool == "none":
        plan.blockers.append(
            f"{plan.host}: neither mlnx_qos (DOCA-OFED/MLNX_OFED mlnx-tools) nor iproute2 dcb is installed; "
            "fix: run stage ofed (DOCA-OFED) or install iproute2 >= 5.11"
        )
    for port in facts.ports:
        if port.qos_error:
            plan.blockers.append(
                f"{plan.host}: cannot read QoS of {port.netdev} ({port.rdma_device}): {port.qos_error}; "
                f"fix: check the driver of {port.netdev} (ethtool -i {port.netdev}) supports DCB"
            )
    for cm in facts.rdma_cm:
        if cm.error:
            plan.blockers.append(
                f"{plan.host}: cannot read RDMA-CM defaults of {cm.device}: {cm.error}; fix: modprobe rdma_cm "
                "(and mount configfs on /sys/kernel/config)"
            )
    lldpad_on = facts.lldpad.active in ("active", "activating") or facts.lldpad.enabled == "enabled"
    if facts.lldpad_running and facts.lldpad.active not in ("active", "activating"):
        plan.blockers.append(
            f"{plan.host}: an lldpad process runs outside systemd and will overwrite PFC on "
            f"{', '.join(p.netdev for p in facts.ports)}; fix: stop it (pkill -x lldpad) and remove what starts it"
        )
    elif lldpad_on and not want.stop_lldpad:
        plan.blockers.append(
            f"{plan.host}: lldpad is {facts.lldpad.active}/{facts.lldpad.enabled} and overwrites PFC on "
            f"{', '.join(p.netdev for p in facts.ports)}; fix: sudo systemctl disable --now lldpad, "
            "or set roce.stop_lldpad: true"
        )


def _lldpad(plan: HostPlan, facts: RoceFacts) -> None:
    units = []
    if facts.lldpad.active in ("active", "activating") or facts.lldpad.enabled == "enabled":
        units.append("lldpad.service")
    if facts.lldpad_socket.enabled == "enabled" or facts.lldpad_socket.active == "active":
        units.append("lldpad.socket")  # a socket would start lldpad again on the next lldptool call
    if units:
        plan.changes.append(
            Change(
                summary=f"stop and disable {' and '.join(units)}",
                why=LLDPAD_WHY,
                impact=Impact.DISRUPTIVE,
                commands=[RemoteCommand(argv=["systemctl", "disable", "--now", *units])],
            )
        )


def _port_change(port: RocePort, delta: PortDelta, facts: RoceFacts, want: Desired) -> Change:
    nd = port.netdev
    commands: list[RemoteCommand] = []
    what: list[str] = []
    if facts.qos_tool == "mlnx_qos":
        if delta.trust:
            commands.append(RemoteCommand(argv=["mlnx_qos", "-i", nd, "--trust", "dscp"]))
            what.append("trust DSCP")
        if delta.dscp:
            # a separate call: mlnx_qos refuses --trust and --dscp2prio together
            commands.append(
                RemoteCommand(argv=["mlnx_qos", "-i", nd, "--dscp2prio", f"set,{want.dscp},{want.priority}"])
            )
            what.append(f"map DSCP {want.dscp} to priority {want.priority}")
        if delta.pfc:
            commands.append(RemoteCommand(argv=["mlnx_qos", "-i", nd, "--pfc", want.pfc_csv]))
            what.append(f"PFC on priority {want.priority} only")
        if delta.cable:
            commands.append(RemoteCommand(argv=["mlnx_qos", "-i", nd, f"--cable_len={want.cable_len}"]))
            what.append(f"PFC headroom for {want.cable_len} m of cable (was {port.cable_len or '?'} m)")
    elif delta.qos:
        if delta.pfc:
            commands.append(
                RemoteCommand(argv=["dcb", "pfc", "set", "dev", nd, "prio-pfc", *dcb_pfc_map(want.pfc).split()])
            )
            what.append(f"PFC on priority {want.priority} only")
        if delta.trust or delta.dscp:
            # a DSCP app entry is what switches mlx5 to trust DSCP on the inbox driver
            commands.append(
                RemoteCommand(argv=["dcb", "app", "add", "dev", nd, "dscp-prio", f"{want.dscp}:{want.priority}"])
            )
            what.append(f"trust DSCP, DSCP {want.dscp} -> priority {want.priority}")
        if delta.cable:
            commands.append(RemoteCommand(argv=["dcb", "pfc", "set", "dev", nd, "delay", str(want.cable_len)]))
            what.append(f"PFC headroom for {want.cable_len} m of cable (was {port.cable_len or '?'} m)")
    for path, value in delta.ecn.items():
        commands.append(RemoteCommand(argv=["tee", f"/sys/class/net/{nd}/ecn/{path}"], input=str(value)))
    if delta.ecn:
        what.append(f"ECN/DCQCN on priority {want.priority} (CNP DSCP {want.cnp_dscp}, 802.1p {want.cnp_priority})")
    target = f"{nd} ({port.rdma_device}" + (f", slave of {port.lag_bond})" if port.lag_bond else ")")
    return Change(
        summary=f"{target}: " + "; ".join(what),
        why=(
            f"lossless RoCE: RDMA traffic is sent with DSCP {want.dscp} (ToS {want.tos}); the port must classify by "
            f"DSCP and pause only priority {want.priority}, the same on both ends of every link"
            + (". ECN lets the receiver signal congestion before PFC has to pause the link" if delta.ecn else "")
        ),
        # trust/PFC change how live traffic on the link is queued and paused; ECN alone changes nothing on the wire
        impact=Impact.DISRUPTIVE if delta.qos else Impact.SAFE,
        commands=commands,
    )


def _rdma_cm(plan: HostPlan, facts: RoceFacts, want: Desired) -> None:
    commands: list[RemoteCommand] = []
    devices: list[str] = []
    for cm in facts.rdma_cm:
        mode, tos = cm_needs(cm, want)
        if not (mode or tos):
            continue
        devices.append(cm.device)
        version = "2" if want.cm_mode == ROCE_V2 else "1"
        base = f"{CONFIGFS_CM}/{cm.device}"
        if facts.cma_tool:
            if mode:
                commands.append(RemoteCommand(argv=["cma_roce_mode", "-d", cm.device, "-p", "1", "-m", version]))
            if tos:
                commands.append(RemoteCommand(argv=["cma_roce_tos", "-d", cm.device, "-p", "1", "-t", str(want.tos)]))
        else:
            commands.append(RemoteCommand(argv=["mkdir", "-p", base]))
            if mode:
                commands.append(RemoteCommand(argv=["tee", f"{base}/ports/1/default_roce_mode"], input=want.cm_mode))
            if tos:
                commands.append(RemoteCommand(argv=["tee", f"{base}/ports/1/default_roce_tos"], input=str(want.tos)))
    if facts.rdma_cm and not any(cm_needs(cm, want)[0] for cm in facts.rdma_cm):
        plan.notes.append(
            f"RDMA-CM already uses {want.cm_mode} on {', '.join(c.device for c in facts.rdma_cm)} (the default on "
            "ConnectX-4 Lx and later): no cma_roce_mode needed"
        )
    if commands:
        plan.changes.append(
            Change(
                summary=f"RDMA-CM on {', '.join(devices)}: {want.cm_mode}, ToS {want.tos}",
                why=(
                    "RDMA-CM users (rping, perftest -R, NVMe-oF, MPI over rdma_cm) take the RoCE version and ToS from "
                    "these configfs defaults; NCCL and perftest without -R set their own GID and traffic class"
                ),
                commands=commands,
            )
        )


# Why udev and not PartOf=/WantedBy=openibd.service: PartOf= only propagates stop/restart jobs that systemd runs
# (systemd.unit(5)); `/etc/init.d/openibd restart`, which DOCA's own docs and this wizard's ofed stage use, reloads
# the driver behind systemd's back, and the inbox driver has no openibd.service at all (modprobe -r/modprobe, a PCI
# reset). Every one of these re-registers the mlx5 netdevs, a kernel "add" uevent that udev turns into a start job
# for the units in ENV{SYSTEMD_WANTS} (udev(7), systemd.device(5)).
RELOAD_NOTE = (
    "QoS across driver reloads: {rule} starts {instance} whenever mlx5_core (re)creates a port (boot, openibd "
    "restart by systemctl or by the init script, modprobe with the inbox driver); PartOf=openibd.service would miss "
    "a direct /etc/init.d/openibd call and does not exist with the inbox driver"
)


def _persistence(plan: HostPlan, host: str, facts: RoceFacts, want: Desired) -> None:
    script = script_text(host, facts, want)
    unit = unit_text(facts.openibd)
    template, rule = template_text(), udev_rule_text()
    files = []
    if facts.script_text != script:
        files.append(FileWrite(path=SCRIPT_PATH, content=script, mode=0o755, before=facts.script_text))
    if facts.unit_text != unit:
        files.append(FileWrite(path=UNIT_PATH, content=unit, before=facts.unit_text))
    if facts.template_text != template:
        files.append(FileWrite(path=TEMPLATE_PATH, content=template, before=facts.template_text))
    if facts.udev_rule_text != rule:
        files.append(FileWrite(path=UDEV_RULE_PATH, content=rule, before=facts.udev_rule_text))
    plan.notes.append(RELOAD_NOTE.format(rule=UDEV_RULE_PATH, instance=TEMPLATE_UNIT.replace("@.", "@PORT.")))
    commands = []
    if any(f.path in (UNIT_PATH, TEMPLATE_PATH) for f in files):
        commands.append(RemoteCommand(argv=["systemctl", "daemon-reload"]))
    if facts.udev_rule_text != rule:
        # new rules apply to events after a reload (udevadm(8) control --reload)
        commands.append(RemoteCommand(argv=["udevadm", "control", "--reload"]))
    if files or facts.unit.enabled != "enabled":
        commands.append(RemoteCommand(argv=["systemctl", "enable", QOS_UNIT]))
    if facts.unit.active != "active":
        # running it now proves the script works today, not at the next reboot
        commands.append(RemoteCommand(argv=["systemctl", "restart", QOS_UNIT]))
    elif files:
        # Restarting an active unit also restarts every unit that Requires= it (systemd.unit(5)): the Ray and
        # inference units would reload their model. Running the new script itself proves it just as well.
        commands.append(RemoteCommand(argv=[SCRIPT_PATH]))
    if commands:
        plan.changes.append(
            Change(
                summary=(
                    f"persist across reboots and driver reloads: {QOS_UNIT} runs {SCRIPT_PATH} at every boot, "
                    f"a udev rule runs it for each port the driver re-creates"
                ),
                why=(
                    "mlnx_qos/dcb, ECN and RDMA-CM settings live in the driver and configfs and are lost on every "
                    "reboot or driver reload (openibd restart, modprobe); a boot-only unit would leave the ports "
                    "lossy after a DOCA upgrade until someone re-runs the wizard"
                ),
                files=files,
                commands=commands,
            )
        )
