"""Stage ofed: choose and install DOCA-OFED (or MLNX_OFED LTS / inbox rdma-core), RDMA tools, perftest, time sync."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from steps.discovery.facts import DiscoveryFacts, try_parse
from steps.discovery.stage import Discovery
from steps.ofed import facts as of
from steps.ofed import predict as ofed_predict
from steps.ofed.checks import build_checks
from steps.ofed.plan import build_plan
from steps.ofed.repo import KEYRING_DIRS, KEYRINGS, MANAGED_FILES
from steps.platform.checks import firmware_check
from steps.platform.facts import named_endpoints
from wizard.engine.predict import Prediction
from wizard.engine.prefetch import read_file_argv
from wizard.engine.step import CheckItem, ClusterView, HostPlan, ProbeContext, Step
from wizard.executors.base import Executor

UNINSTALL_SCRIPT = "/usr/sbin/ofed_uninstall.sh"
DPKG_FORMAT = "${Package}\\t${Version}\\t${db:Status-Abbrev}\\n"

# The probe's read-only commands, defined once: the probe runs them and ``prefetch`` declares them.
ARCH = ["uname", "-m"]
DPKG = ["dpkg-query", "-W", "-f", DPKG_FORMAT]
OFED_INFO = ["ofed_info", "-s"]
DRIVER_VERSION = ["cat", "/sys/module/mlx5_core/version"]
LSMOD = ["lsmod"]
RDMA_LINK = ["rdma", "link", "show"]
RDMA_BY_PCI = ["ls", "-l", "/sys/class/infiniband"]
DEVINFO = ["ibv_devinfo"]
TIME_STATES = ["systemctl", "is-active", *of.TIME_UNITS]
UNINSTALL = ["test", "-x", UNINSTALL_SCRIPT]


def headers_test(kernel: str) -> list[str]:
    return ["test", "-e", f"/lib/modules/{kernel}/build"]


def keyring_listing(folder: str) -> list[str]:
    return ["ls", "-1", folder]


def local_repo_tests(path: str) -> list[list[str]]:
    """``test -d`` and ``test -f`` of the answers' local repository (its listing follows only for a folder)."""
    return [["test", "-d", path], ["test", "-f", path]]


class Ofed(Step):
    id = "ofed"
    title = "Driver stack"
    summary = (
        "Choose and install DOCA-OFED (or MLNX_OFED LTS / inbox rdma-core), RDMA userspace tools, perftest"
        " and time sync."
    )
    dependent_probes: ClassVar[dict[str, str]] = {
        "ls -1 *": "the local repository's listing, only when test -d of this read found a folder",
    }

    def prefetch(self, ctx: ProbeContext) -> list[tuple[Sequence[str] | str, bool]]:
        """Every read but the listing of a local repository (only a folder is listed). The build-folder test of
        discovery's kernel runs only when dpkg-query shows no headers package; it is declared anyway: a test
        costs nothing in the batch, a miss a round trip."""
        disc = DiscoveryFacts.model_validate(ctx.facts.get("discovery") or {})
        plain: list[Sequence[str]] = [ARCH, DPKG, OFED_INFO, DRIVER_VERSION, LSMOD, RDMA_LINK, RDMA_BY_PCI, DEVINFO]
        plain += [TIME_STATES, *(read_file_argv(p) for p in MANAGED_FILES), *map(keyring_listing, KEYRING_DIRS)]
        plain += [UNINSTALL, headers_test(disc.kernel)]
        if ctx.answers.ofed.source == "local" and ctx.answers.ofed.local_repo:
            plain += local_repo_tests(ctx.answers.ofed.local_repo)
        return [(c, False) for c in plain]

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        ex = ctx.executor
        disc = DiscoveryFacts.model_validate(ctx.facts.get("discovery") or {})
        facts = of.OfedFacts()
        notes = facts.notes
        facts.arch = (await _out(ex, ARCH, notes)).strip()
        await self._packages(ex, facts, disc.kernel)
        ofed = try_parse("ofed_info", await _out(ex, OFED_INFO, notes), notes)
        if ofed:
            facts.ofed_stack, facts.ofed_version = ofed.stack, ofed.version
        facts.driver_version = (await _out(ex, DRIVER_VERSION, notes)).strip() or None
        modules = try_parse("lsmod", await _out(ex, LSMOD, notes), notes)
        facts.modules = sorted({m.name for m in modules.modules} & set(of.WATCHED_MODULES)) if modules else []
        links = try_parse("rdma_link", await _out(ex, RDMA_LINK, notes), notes)
        facts.rdma_by_netdev = {ln.netdev: ln.device for ln in links.links if ln.netdev} if links else {}
        facts.rdma_by_pci = of.parse_rdma_pci(await _out(ex, RDMA_BY_PCI, notes))
        await self._ibv_devinfo(ex, facts)
        states = await _out(ex, TIME_STATES, notes, any_rc=True)
        facts.services = of.parse_is_active(states, of.TIME_UNITS)
        for path in MANAGED_FILES:
            facts.files[path] = await ex.read_file(path)
        present = set()
        for folder in KEYRING_DIRS:  # a missing /etc/apt/keyrings (apt < 2.4) lists nothing
            present |= {f"{folder}/{n}" for n in (await _out(ex, keyring_listing(folder), notes, any_rc=True)).split()}
        facts.keyrings = [k for k in KEYRINGS if k in present]
        facts.uninstall_script = await _true(ex, UNINSTALL)
        facts.kernel_headers = facts.kernel_headers or await _true(ex, headers_test(disc.kernel))
        if ctx.answers.ofed.source == "local" and ctx.answers.ofed.local_repo:
            path = ctx.answers.ofed.local_repo
            test_dir, test_file = local_repo_tests(path)
            is_dir = await _true(ex, test_dir)
            facts.local_repo = of.parse_local_repo(
                path,
                await _true(ex, test_file),
                is_dir,
                await _out(ex, ["ls", "-1", path], notes) if is_dir else "",
            )
        if _renamed(disc, facts):
            # The driver restart renamed the RDMA devices (rocep59s0f0 -> mlx5_0): refresh discovery's facts so the
            # later stages plan with the names the host has now.
            ctx.facts["discovery"] = await Discovery().probe(ctx)
        return facts.model_dump(mode="json")

    async def _packages(self, ex: Executor, facts: of.OfedFacts, kernel: str) -> None:
        text = await _out(ex, DPKG, facts.notes)
        installed = {}
        for line in text.splitlines():
            parts = line.split("\t")
            if len(parts) >= 3 and parts[2].startswith("ii") and parts[1]:
                installed[parts[0].split(":")[0]] = parts[1]
        headers = f"linux-headers-{kernel}"
        facts.packages, facts.stack_packages = of.keep_packages(installed, headers)
        facts.kernel_headers = headers in facts.packages

    async def _ibv_devinfo(self, ex: Executor, facts: of.OfedFacts) -> None:
        result = await ex.run(DEVINFO)
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
