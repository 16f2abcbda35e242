"""Stage ofed: choose and install DOCA-OFED (or MLNX_OFED LTS / inbox rdma-core), RDMA tools, perftest, time sync."""

from __future__ import annotations

from typing import Any

from steps import ofed_facts as of
from steps import ofed_predict
from steps.discovery import Discovery
from steps.discovery_facts import DiscoveryFacts, try_parse
from steps.ofed_checks import build_checks
from steps.ofed_plan import build_plan
from steps.ofed_repo import KEYRING_DIRS, KEYRINGS, MANAGED_FILES
from steps.platform_checks import firmware_check
from steps.platform_facts import named_endpoints
from wizard.executors.base import Executor
from wizard.predict import Prediction
from wizard.step import CheckItem, ClusterView, HostPlan, ProbeContext, Step

UNINSTALL_SCRIPT = "/usr/sbin/ofed_uninstall.sh"
DPKG_FORMAT = "${Package}\\t${Version}\\t${db:Status-Abbrev}\\n"


class Ofed(Step):
    id = "ofed"
    title = "Driver stack"
    summary = (
        "Choose and install DOCA-OFED (or MLNX_OFED LTS / inbox rdma-core), RDMA userspace tools, perftest"
        " and time sync."
    )

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        ex = ctx.executor
        disc = DiscoveryFacts.model_validate(ctx.facts.get("discovery") or {})
        facts = of.OfedFacts()
        notes = facts.notes
        facts.arch = (await _out(ex, ["uname", "-m"], notes)).strip()
        await self._packages(ex, facts, disc.kernel)
        ofed = try_parse("ofed_info", await _out(ex, ["ofed_info", "-s"], notes), notes)
        if ofed:
            facts.ofed_stack, facts.ofed_version = ofed.stack, ofed.version
        facts.driver_version = (await _out(ex, ["cat", "/sys/module/mlx5_core/version"], notes)).strip() or None
        modules = try_parse("lsmod", await _out(ex, ["lsmod"], notes), notes)
        facts.modules = sorted({m.name for m in modules.modules} & set(of.WATCHED_MODULES)) if modules else []
        links = try_parse("rdma_link", await _out(ex, ["rdma", "link", "show"], notes), notes)
        facts.rdma_by_netdev = {ln.netdev: ln.device for ln in links.links if ln.netdev} if links else {}
        facts.rdma_by_pci = of.parse_rdma_pci(await _out(ex, ["ls", "-l", "/sys/class/infiniband"], notes))
        await self._ibv_devinfo(ex, facts)
        states = await _out(ex, ["systemctl", "is-active", *of.TIME_UNITS], notes, any_rc=True)
        facts.services = of.parse_is_active(states, of.TIME_UNITS)
        for path in MANAGED_FILES:
            facts.files[path] = await ex.read_file(path)
        present = set()
        for folder in KEYRING_DIRS:  # a missing /etc/apt/keyrings (apt < 2.4) lists nothing
            present |= {f"{folder}/{n}" for n in (await _out(ex, ["ls", "-1", folder], notes, any_rc=True)).split()}
        facts.keyrings = [k for k in KEYRINGS if k in present]
        facts.uninstall_script = await _true(ex, ["test", "-x", UNINSTALL_SCRIPT])
        build_dir = f"/lib/modules/{disc.kernel}/build"
        facts.kernel_headers = facts.kernel_headers or await _true(ex, ["test", "-e", build_dir])
        if ctx.answers.ofed.source == "local" and ctx.answers.ofed.local_repo:
            path = ctx.answers.ofed.local_repo
            is_dir = await _true(ex, ["test", "-d", path])
            facts.local_repo = of.parse_local_repo(
                path,
                await _true(ex, ["test", "-f", path]),
                is_dir,
                await _out(ex, ["ls", "-1", path], notes) if is_dir else "",
            )
        if _renamed(disc, facts):
            # The driver restart renamed the RDMA devices (rocep59s0f0 -> mlx5_0): refresh discovery's facts so the
            # later stages plan with the names the host has now.
            ctx.facts["discovery"] = await Discovery().probe(ctx)
        return facts.model_dump(mode="json")

    async def _packages(self, ex: Executor, facts: of.OfedFacts, kernel: str) -> None:
        text = await _out(ex, ["dpkg-query", "-W", "-f", DPKG_FORMAT], facts.notes)
        installed = {}
        for line in text.splitlines():
            parts = line.split("\t")
            if len(parts) >= 3 and parts[2].startswith("ii") and parts[1]:
                installed[parts[0].split(":")[0]] = parts[1]
        headers = f"linux-headers-{kernel}"
        facts.packages, facts.stack_packages = of.keep_packages(installed, headers)
        facts.kernel_headers = headers in facts.packages

    async def _ibv_devinfo(self, ex: Executor, facts: of.OfedFacts) -> None:
        result = await ex.run(["ibv_devinfo"])
        if result.exit_status == 127:
            facts.ibv_error = "ibv_devinfo: command not found"
            return
        parsed = try_parse("ibv_devinfo", result.stdout, facts.notes) if result.ok else None
        if parsed is None:
            facts.ibv_error = result.first_error_line()
            return
        facts.ibv_devices = [d.hca_id for d in parsed.devices]
        facts.firmware_by_device = {d.hca_id: d.fw_ver for d in parsed.devices if d.fw_ver}

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        disc, facts = _facts(view, host)
        if disc is None or facts is None:
            return HostPlan(stage=self.id, host=host, blockers=[f"{host}: no discovery facts; run stage discovery"])
        return build_plan(self.id, host, view.answers.ofed, disc, facts)

    def predict(self, view: ClusterView, host: str, plan: HostPlan) -> Prediction | None:
        return ofed_predict.predict(view, host, plan)

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        disc, facts = _facts(view, host)
        if disc is None or facts is None:
            return [CheckItem(id="facts", title="facts collected", status="fail", evidence="no facts")]
        items = build_checks(host, view.answers.ofed, disc, facts)
        # DOCA brings mstflint: the firmware read that discovery skipped on a bare host can run now (a VPI port left
        # in InfiniBand mode on this Ethernet design fails here, before the network stage builds rails on it).
        firmware = firmware_check(disc.platform, named_endpoints(disc)[0]) if disc.platform else None
        if firmware is not None and disc.platform and disc.platform.firmware_tool:
            items.append(firmware)
        return items


def _facts(view: ClusterView, host: str) -> tuple[DiscoveryFacts | None, of.OfedFacts | None]:
    disc = view.stage_facts(host, "discovery")
    mine = view.stage_facts(host, "ofed")
    return (
        DiscoveryFacts.model_validate(disc) if disc else None,
        of.OfedFacts.model_validate({k: v for k, v in mine.items() if k != "cluster"}) if mine is not None else None,
    )


def _renamed(disc: DiscoveryFacts, facts: of.OfedFacts) -> bool:
    for port in disc.ports:
        now = facts.rdma_by_pci.get(port.pci) or facts.rdma_by_netdev.get(port.netdev or "")
        if now != port.rdma_device:
            return True
    return False


async def _out(ex: Executor, argv: list[str] | str, notes: list[str], *, any_rc: bool = False) -> str:
    """stdout of a read-only command; a missing tool is noted, a failing one reads as empty."""
    result = await ex.run(argv)
    if result.exit_status == 127:
        name = argv[0] if isinstance(argv, list) else argv.split()[0]
        notes.append(f"{name}: not installed")
        return ""
    return result.stdout if result.ok or any_rc else ""


async def _true(ex: Executor, argv: list[str]) -> bool:
    return (await ex.run(argv)).exit_status == 0
