"""Stage roce: DSCP trust, PFC on one priority, ECN/DCQCN and RDMA-CM defaults on every RoCE port, persisted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from steps.discovery import facts as df
from steps.roce.checks import cluster_consistency, host_checks
from steps.roce.dcbx import dcbx_checks
from steps.roce.desired import Desired
from steps.roce.facts import (
    CONFIGFS_CM,
    QOS_UNIT,
    SCRIPT_PATH,
    TEMPLATE_PATH,
    UDEV_RULE_PATH,
    UNIT_PATH,
    DevInfo,
    RdmaCm,
    RoceFacts,
    RocePort,
    SkippedPort,
    Target,
    UnitState,
    devinfo_ports,
    parse_cma_value,
    parse_dcb_app_dscp,
    parse_dcb_pfc,
    parse_dcb_pfc_delay,
    parse_grep_values,
    parse_systemctl_show,
    roce_targets,
)
from steps.roce.ib_sl import lane_check, probe_lanes
from steps.roce.plan import build_plan
from wizard.engine.prefetch import read_file_argv
from wizard.engine.step import CheckItem, ClusterView, HostPlan, ProbeContext, Step
from wizard.executors.base import CommandResult, Executor
from wizard.parsers import ParseError, parse

# The probe's read-only commands, defined once: the probe runs them and ``prefetch`` declares them.
IP_ADDR = ["ip", "-j", "-d", "addr", "show"]
RDMA_LINK = ["rdma", "link", "show"]
DEVINFO = ["ibv_devinfo", "-v"]
TOOLS = ["command", "-v", "mlnx_qos", "dcb", "cma_roce_mode", "cma_roce_tos"]
UNITS = ["lldpad.service", "lldpad.socket", QOS_UNIT, "openibd.service"]
UNIT_STATES = ["systemctl", "show", "--property=Id,ActiveState,UnitFileState", *UNITS]
LLDPAD = ["pgrep", "-x", "lldpad"]
FILES = (UNIT_PATH, SCRIPT_PATH, TEMPLATE_PATH, UDEV_RULE_PATH)
# Globs over every netdev / configfs device, read once: they depend on nothing this read finds (the probe keeps
# the lines of its own ports and devices), so the first batch carries them.
CM_FILES = ("default_roce_mode", "default_roce_tos")
CM_CONFIGFS = "grep -sH . " + " ".join(f"{CONFIGFS_CM}/*/ports/1/{f}" for f in CM_FILES)


def ecn_files(priority: int) -> list[str]:
    return [f"roce_np/enable/{priority}", f"roce_rp/enable/{priority}", "roce_np/cnp_dscp", "roce_np/cnp_802p_prio"]


def ecn_read(priority: int) -> str:
    return "grep -sH . " + " ".join(f"/sys/class/net/*/ecn/{r}" for r in ecn_files(priority))


def qos_argvs(tool: str, netdev: str) -> list[list[str]]:
    if tool == "mlnx_qos":
        return [["mlnx_qos", "-i", netdev]]
    if tool == "dcb":
        return [
            ["dcb", "pfc", "show", "dev", netdev, "prio-pfc", "delay"],
            ["dcb", "app", "show", "dev", netdev, "dscp-prio"],
        ]
    return []


def cma_argvs(device: str) -> list[list[str]]:
    return [["cma_roce_mode", "-d", device, "-p", "1"], ["cma_roce_tos", "-d", device, "-p", "1"]]


class Roce(Step):
    id = "roce"
    title = "RoCE v2 and lossless QoS"
    summary = (
        "DSCP trust, PFC on one priority, ECN, RDMA-CM ToS; re-applied at boot and after every driver reload; "
        "checked across hosts."
    )
    dependent_probes: ClassVar[dict[str, str]] = {
        "mlnx_qos -i *": "per RoCE port this read finds; batched for discovery's ports when discovery saw mlnx-tools",
        "dcb * show dev *": "per RoCE port this read finds; batched for discovery's ports when discovery saw no "
        "mlnx-tools",
        "cma_roce_* -d *": "per RDMA device this read finds; batched for discovery's devices with mlnx-tools",
        "smpquery *": "with sudo, per InfiniBand port with a LID, only where fabric.ib_sl is set",
    }

    def prefetch(self, ctx: ProbeContext) -> list[tuple[Sequence[str] | str, bool]]:
        """The fixed reads, plus the per-port QoS and per-device RDMA-CM reads predicted from discovery (its ports
        and whether mlnx-tools is installed): a wrong prediction costs the real ones a round trip, nothing else."""
        plain = [IP_ADDR, RDMA_LINK, DEVINFO, TOOLS, UNIT_STATES, LLDPAD, *map(read_file_argv, FILES)]
        declared: list[tuple[Sequence[str] | str, bool]] = [(c, False) for c in plain]
        disc = df.DiscoveryFacts.model_validate(ctx.facts.get("discovery") or {})
        layers = {p.rdma_device: p.link_layer for p in disc.ports if p.rdma_device and p.link_layer}
        allow = ctx.answers.network.management_changes_allowed(ctx.host.name)
        targets, _ = roce_targets([p.model_copy() for p in disc.ports], {}, layers, disc.ssh_interface, allow)
        if not targets:
            return declared
        mlnx_tools = "mlnx-tools" in disc.packages
        declared.append((ecn_read(ctx.answers.roce.priority), True))
        declared += [(c, True) for port, _, _ in targets for c in qos_argvs("mlnx_qos" if mlnx_tools else "dcb",
                     port.netdev or "")]  # fmt: skip
        devices = dict.fromkeys(device for _, device, _ in targets)
        declared += [(c, True) for d in devices for c in cma_argvs(d)] if mlnx_tools else [(CM_CONFIGFS, True)]
        return declared

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        ex = ctx.executor
        notes: list[str] = []
        facts = RoceFacts()
        targets, devinfo = await self._targets(ctx, facts, notes)
        tools = (await ex.run(TOOLS)).stdout
        found = {line.rsplit("/", 1)[-1] for line in tools.split()}
        facts.qos_tool = "mlnx_qos" if "mlnx_qos" in found else "dcb" if "dcb" in found else "none"
        facts.cma_tool = {"cma_roce_mode", "cma_roce_tos"} <= found
        for port, device, bond in targets:
            assert port.netdev is not None
            rp = RocePort(netdev=port.netdev, pci=port.pci, rdma_device=device, lag_bond=bond, mtu=port.mtu)
            rp.gid_index = devinfo.get(device, (None, None))[1]
            await self._probe_qos(ex, rp, facts.qos_tool)
            facts.ports.append(rp)
        await self._probe_ecn(ex, facts.ports, ctx.answers.roce.priority)
        devices = list(dict.fromkeys(p.rdma_device for p in facts.ports))
        # inbox (no mlnx-tools): the configfs files of every device, read once
        configfs = (
            parse_grep_values((await ex.run(CM_CONFIGFS, sudo=True)).stdout) if devices and not facts.cma_tool else {}
        )
        for device in devices:
            facts.rdma_cm.append(await self._probe_cm(ex, device, facts.cma_tool, configfs))
        show = await ex.run(UNIT_STATES)
        states = parse_systemctl_show(show.stdout)
        facts.lldpad, facts.lldpad_socket, facts.unit, openibd = (states.get(u, UnitState()) for u in UNITS)
        facts.openibd = openibd.enabled != "not-found"
        facts.lldpad_running = (await ex.run(LLDPAD)).exit_status == 0
        facts.unit_text = await ex.read_file(UNIT_PATH)
        facts.script_text = await ex.read_file(SCRIPT_PATH)
        facts.template_text = await ex.read_file(TEMPLATE_PATH)
        facts.udev_rule_text = await ex.read_file(UDEV_RULE_PATH)
        sl = ctx.answers.fabric.ib_sl
        if sl is not None and ctx.answers.fabric.link_layer_of(ctx.host.name) != "ethernet":
            disc = df.DiscoveryFacts.model_validate(ctx.facts.get("discovery") or {})
            ib = [(p.rdma_device, p.ib.lid) for p in disc.rdma_ports() if p.ib and p.ib.lid and p.ib.state == "ACTIVE"]
            facts.ib_lanes = await probe_lanes(ex, [(d, lid) for d, lid in ib if d], sl)
        return facts.model_dump(mode="json") | {"notes": notes}

    async def _targets(self, ctx: ProbeContext, facts: RoceFacts, notes: list[str]) -> tuple[list[Target], DevInfo]:
        """The physical RoCE ports with their RDMA devices, read again now: stage ofed renames inbox rocepXsYfZ
        devices to mlx5_N and stage network may add bonds, so discovery's names can be stale."""
        ex = ctx.executor
        disc = df.DiscoveryFacts.model_validate(ctx.facts.get("discovery") or {})
        ports = [df.NicPort(pci=p.pci, device_id=p.device_id, model=p.model) for p in disc.ports]
        interfaces = df.try_parse("ip_json", (await ex.run(IP_ADDR)).stdout, notes)
        links = df.try_parse("rdma_link", (await ex.run(RDMA_LINK)).stdout, notes)
        df.link_netdevs(ports, interfaces, links)
        devinfo = devinfo_ports(df.try_parse("ibv_devinfo", (await ex.run(DEVINFO)).stdout, notes))
        bonds = {i.ifname for i in (interfaces.interfaces if interfaces else []) if i.kind == "bond"}
        all_links = links.links if links else []
        lag = {link.netdev: link.device for link in all_links if link.netdev in bonds}
        layers = {dev: layer for dev, (layer, _) in devinfo.items() if layer}
        allow = ctx.answers.network.management_changes_allowed(ctx.host.name)
        targets, facts.skipped = roce_targets(ports, lag, layers, disc.ssh_interface, allow)
        port_netdevs = {p.netdev for p in ports if p.netdev}
        for link in all_links:
            if link.netdev and link.netdev not in port_netdevs and link.netdev not in lag:
                facts.skipped.append(
                    SkippedPort(
                        name=f"{link.device} ({link.netdev})",
                        reason="not a ConnectX port (Soft-RoCE rxe or another vendor): no adapter PFC/DSCP to set",
                    )
                )
        return targets, devinfo

    async def _probe_qos(self, ex: Executor, port: RocePort, tool: str) -> None:
        nd = port.netdev
        if tool == "mlnx_qos":
            result = await ex.run(qos_argvs(tool, nd)[0], sudo=True)
            try:
                qos = parse("mlnx_qos", result.stdout)
            except ParseError as exc:
                port.qos_error = _error(result) if not result.ok else str(exc)
                return
            port.trust, port.pfc = qos.trust, list(qos.pfc_enabled) or None  # type: ignore[attr-defined]
            port.cable_len = qos.cable_len  # type: ignore[attr-defined]
            port.dscp2prio = dict(qos.dscp2prio)  # type: ignore[attr-defined]
            port.qos_warnings = list(qos.warnings)  # type: ignore[attr-defined]
        elif tool == "dcb":
            pfc_argv, app_argv = qos_argvs(tool, nd)
            pfc = await ex.run(pfc_argv, sudo=True)
            app = await ex.run(app_argv, sudo=True)
            if not (pfc.ok and app.ok):
                port.qos_error = _error(pfc if not pfc.ok else app)
                return
            port.pfc = parse_dcb_pfc(pfc.stdout)
            port.cable_len = parse_dcb_pfc_delay(pfc.stdout)
            port.dscp2prio = parse_dcb_app_dscp(app.stdout)
            # upstream mlx5 trusts DSCP exactly when DSCP app entries exist (en_dcbnl.c mlx5e_dcbnl_ieee_setapp)
            port.trust = "dscp" if port.dscp2prio else "pcp"

    async def _probe_ecn(self, ex: Executor, ports: list[RocePort], priority: int) -> None:
        """One read of the ECN files of every port; a port without the ecn tree (inbox driver) keeps None."""
        rel = ecn_files(priority)
        if not ports:
            return
        values = parse_grep_values((await ex.run(ecn_read(priority), sudo=True)).stdout)
        for port in ports:
            base = f"/sys/class/net/{port.netdev}/ecn"
            found = {r: values[f"{base}/{r}"] for r in rel if f"{base}/{r}" in values}
            if found:
                port.ecn = {r: int(v) for r, v in found.items() if v.isdigit()}

    async def _probe_cm(self, ex: Executor, device: str, cma_tool: bool, configfs: dict[str, str]) -> RdmaCm:
        cm = RdmaCm(device=device)
        if cma_tool:
            mode_argv, tos_argv = cma_argvs(device)
            mode = await ex.run(mode_argv, sudo=True)
            tos = await ex.run(tos_argv, sudo=True)
            cm.mode, tos_text = parse_cma_value(mode.stdout), parse_cma_value(tos.stdout)
            cm.tos = int(tos_text) if tos_text and tos_text.isdigit() else None
            if cm.mode is None or cm.tos is None:
                cm.error = _error(mode if cm.mode is None else tos)
            return cm
        # inbox: no mlnx-tools; read the configfs files if the device directory was ever created
        base = f"{CONFIGFS_CM}/{device}/ports/1"
        cm.mode = configfs.get(f"{base}/default_roce_mode")
        tos = configfs.get(f"{base}/default_roce_tos")
        cm.tos = int(tos) if tos and tos.isdigit() else None
        return cm

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        facts = _facts(view, host)
        if facts is None:
            return HostPlan(stage=self.id, host=host, blockers=[f"{host}: no roce facts (probe did not run)"])
        plan = build_plan(host, facts, Desired.from_answers(view.answers))
        if view.answers.fabric.link_layer_of(host) == "infiniband" and not facts.ports:
            sl = view.answers.fabric.ib_sl
            lane = f"service level {sl} (fabric.ib_sl; NCCL_IB_SL, perftest --sl)" if sl is not None else "SL 0"
            plan.noop_reason = (
                "InfiniBand: lossless by credit-based flow control, so no DSCP trust, PFC or ECN to set; traffic "
                f"uses {lane}, which the subnet manager's SL-to-VL table maps to a virtual lane"
            )
        return plan

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        facts = _facts(view, host)
        if facts is None:
            return [CheckItem(id="facts", title="roce facts", status="fail", evidence="no facts collected")]
        discovery = view.stage_facts(host, "discovery")
        found = df.DiscoveryFacts.model_validate(discovery) if discovery else None
        sl = view.answers.fabric.ib_sl
        if sl is not None and view.answers.fabric.link_layer_of(host) != "ethernet" and not facts.ports:
            return [lane_check(sl, facts.ib_lanes)]  # InfiniBand: no QoS, only the lane the SL lands on
        return host_checks(host, facts, Desired.from_answers(view.answers)) + dcbx_checks(host, facts, found)

    def cluster_checks(self, view: ClusterView) -> dict[str, list[CheckItem]]:
        facts = {h.name: f for h in view.answers.hosts if (f := _facts(view, h.name)) is not None}
        # hosts without RoCE ports (InfiniBand) have no QoS to compare
        facts = {name: f for name, f in facts.items() if f.ports}
        return cluster_consistency(facts, Desired.from_answers(view.answers)) if facts else {}


def _facts(view: ClusterView, host: str) -> RoceFacts | None:
    raw = view.stage_facts(host, "roce")
    if not raw:
        return None
    return RoceFacts.model_validate({k: v for k, v in raw.items() if k not in ("notes", "cluster")})


def _error(result: CommandResult) -> str:
    if result.exit_status == 127:
        return f"{result.command.split()[0]}: command not found"
    return result.first_error_line()
