"""Stage roce: DSCP trust, PFC on one priority, ECN/DCQCN and RDMA-CM defaults on every RoCE port, persisted."""

from __future__ import annotations

from typing import Any

from steps import discovery_facts as df
from steps.roce_checks import cluster_consistency, host_checks
from steps.roce_dcbx import dcbx_checks
from steps.roce_desired import Desired
from steps.roce_facts import (
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
    parse_grep_values,
    parse_systemctl_show,
    roce_targets,
)
from steps.roce_plan import build_plan
from wizard.executors.base import CommandResult, Executor
from wizard.parsers import ParseError, parse
from wizard.step import CheckItem, ClusterView, HostPlan, ProbeContext, Step


class Roce(Step):
    id = "roce"
    title = "RoCE v2 and lossless QoS"
    summary = (
        "DSCP trust, PFC on one priority, ECN, RDMA-CM ToS; re-applied at boot and after every driver reload; "
        "checked across hosts."
    )

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        ex = ctx.executor
        notes: list[str] = []
        facts = RoceFacts()
        targets, devinfo = await self._targets(ctx, facts, notes)
        tools = (await ex.run(["command", "-v", "mlnx_qos", "dcb", "cma_roce_mode", "cma_roce_tos"])).stdout
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
        for device in dict.fromkeys(p.rdma_device for p in facts.ports):
            facts.rdma_cm.append(await self._probe_cm(ex, device, facts.cma_tool))
        units = ["lldpad.service", "lldpad.socket", QOS_UNIT, "openibd.service"]
        show = await ex.run(["systemctl", "show", "--property=Id,ActiveState,UnitFileState", *units])
        states = parse_systemctl_show(show.stdout)
        facts.lldpad, facts.lldpad_socket, facts.unit, openibd = (states.get(u, UnitState()) for u in units)
        facts.openibd = openibd.enabled != "not-found"
        facts.lldpad_running = (await ex.run(["pgrep", "-x", "lldpad"])).exit_status == 0
        facts.unit_text = await ex.read_file(UNIT_PATH)
        facts.script_text = await ex.read_file(SCRIPT_PATH)
        facts.template_text = await ex.read_file(TEMPLATE_PATH)
        facts.udev_rule_text = await ex.read_file(UDEV_RULE_PATH)
        return facts.model_dump(mode="json") | {"notes": notes}

    async def _targets(self, ctx: ProbeContext, facts: RoceFacts, notes: list[str]) -> tuple[list[Target], DevInfo]:
        """The physical RoCE ports with their RDMA devices, read again now: stage ofed renames inbox rocepXsYfZ
        devices to mlx5_N and stage network may add bonds, so discovery's names can be stale."""
        ex = ctx.executor
        disc = df.DiscoveryFacts.model_validate(ctx.facts.get("discovery") or {})
        ports = [df.NicPort(pci=p.pci, device_id=p.device_id, model=p.model) for p in disc.ports]
        interfaces = df.try_parse("ip_json", (await ex.run(["ip", "-j", "-d", "addr", "show"])).stdout, notes)
        links = df.try_parse("rdma_link", (await ex.run(["rdma", "link", "show"])).stdout, notes)
        df.link_netdevs(ports, interfaces, links)
        devinfo = devinfo_ports(df.try_parse("ibv_devinfo", (await ex.run(["ibv_devinfo", "-v"])).stdout, notes))
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
            result = await ex.run(["mlnx_qos", "-i", nd], sudo=True)
            try:
                qos = parse("mlnx_qos", result.stdout)
            except ParseError as exc:
                port.qos_error = _error(result) if not result.ok else str(exc)
                return
            port.trust, port.pfc = qos.trust, list(qos.pfc_enabled) or None  # type: ignore[attr-defined]
            port.dscp2prio = dict(qos.dscp2prio)  # type: ignore[attr-defined]
            port.qos_warnings = list(qos.warnings)  # type: ignore[attr-defined]
        elif tool == "dcb":
            pfc = await ex.run(["dcb", "pfc", "show", "dev", nd, "prio-pfc"], sudo=True)
            app = await ex.run(["dcb", "app", "show", "dev", nd, "dscp-prio"], sudo=True)
            if not (pfc.ok and app.ok):
                port.qos_error = _error(pfc if not pfc.ok else app)
                return
            port.pfc = parse_dcb_pfc(pfc.stdout)
            port.dscp2prio = parse_dcb_app_dscp(app.stdout)
            # upstream mlx5 trusts DSCP exactly when DSCP app entries exist (en_dcbnl.c mlx5e_dcbnl_ieee_setapp)
            port.trust = "dscp" if port.dscp2prio else "pcp"

    async def _probe_ecn(self, ex: Executor, ports: list[RocePort], priority: int) -> None:
        """One read of the ECN files of every port; a port without the ecn tree (inbox driver) keeps None."""
        rel = [f"roce_np/enable/{priority}", f"roce_rp/enable/{priority}", "roce_np/cnp_dscp", "roce_np/cnp_802p_prio"]
        paths = [f"/sys/class/net/{p.netdev}/ecn/{r}" for p in ports for r in rel]
        if not paths:
            return
        values = parse_grep_values((await ex.run(["grep", "-sH", ".", *paths], sudo=True)).stdout)
        for port in ports:
            base = f"/sys/class/net/{port.netdev}/ecn"
            found = {r: values[f"{base}/{r}"] for r in rel if f"{base}/{r}" in values}
            if found:
                port.ecn = {r: int(v) for r, v in found.items() if v.isdigit()}

    async def _probe_cm(self, ex: Executor, device: str, cma_tool: bool) -> RdmaCm:
        cm = RdmaCm(device=device)
        if cma_tool:
            mode = await ex.run(["cma_roce_mode", "-d", device, "-p", "1"], sudo=True)
            tos = await ex.run(["cma_roce_tos", "-d", device, "-p", "1"], sudo=True)
            cm.mode, tos_text = parse_cma_value(mode.stdout), parse_cma_value(tos.stdout)
            cm.tos = int(tos_text) if tos_text and tos_text.isdigit() else None
            if cm.mode is None or cm.tos is None:
                cm.error = _error(mode if cm.mode is None else tos)
            return cm
        # inbox: no mlnx-tools; read the configfs files if the device directory was ever created
        base = f"{CONFIGFS_CM}/{device}/ports/1"
        text = (
            await ex.run(["grep", "-sH", ".", f"{base}/default_roce_mode", f"{base}/default_roce_tos"], sudo=True)
        ).stdout
        values = parse_grep_values(text)
        cm.mode = values.get(f"{base}/default_roce_mode")
        tos = values.get(f"{base}/default_roce_tos")
        cm.tos = int(tos) if tos and tos.isdigit() else None
        return cm

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        facts = _facts(view, host)
        if facts is None:
            return HostPlan(stage=self.id, host=host, blockers=[f"{host}: no roce facts (probe did not run)"])
        return build_plan(host, facts, Desired.from_answers(view.answers))

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        facts = _facts(view, host)
        if facts is None:
            return [CheckItem(id="facts", title="roce facts", status="fail", evidence="no facts collected")]
        discovery = view.stage_facts(host, "discovery")
        found = df.DiscoveryFacts.model_validate(discovery) if discovery else None
        return host_checks(host, facts, Desired.from_answers(view.answers)) + dcbx_checks(host, facts, found)

    def cluster_checks(self, view: ClusterView) -> dict[str, list[CheckItem]]:
        facts = {h.name: f for h in view.answers.hosts if (f := _facts(view, h.name)) is not None}
        return cluster_consistency(facts, Desired.from_answers(view.answers))


def _facts(view: ClusterView, host: str) -> RoceFacts | None:
    raw = view.stage_facts(host, "roce")
    if not raw:
        return None
    return RoceFacts.model_validate({k: v for k, v in raw.items() if k not in ("notes", "cluster")})


def _error(result: CommandResult) -> str:
    if result.exit_status == 127:
        return f"{result.command.split()[0]}: command not found"
    return result.first_error_line()
