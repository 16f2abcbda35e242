"""Stage gpudirect: DMA-BUF where supported, nvidia-peermem otherwise; proven in use, not just loaded."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Sequence
from typing import Any, ClassVar

from steps.discovery import facts as df
from steps.gpudirect.facts import (
    PEERMEM_CONF,
    GpuDirectFacts,
    Rail,
    choose_mode,
    gpu_paths,
    installed_dkms_package,
    peermem_kernel_lines,
)
from steps.gpudirect.plan import build_plan, host_checks, no_gpu_reason
from steps.platform.checks import platform_checks
from steps.platform.facts import (
    IOMMU_TYPES,
    PlatformFacts,
    firmware_prefetch,
    named_endpoints,
    platform_prefetch,
    probe_platform,
)
from steps.roce.facts import devinfo_ports
from wizard.engine.prefetch import read_file_argv
from wizard.engine.step import CheckItem, ClusterView, HostPlan, ProbeContext, Step
from wizard.executors.base import CommandResult, Executor, ExecutorError
from wizard.parsers import ParseError, parse

PERFTEST_PORT = 18515
DPKG_FORMAT = "${Package}\\t${Version}\\t${db:Status-Abbrev}\\n"
PERFTEST_SECONDS = 5

# The probe's read-only commands, defined once: the probe runs them and ``prefetch`` declares them.
UNAME = ["uname", "-r"]
DRIVER = [["modinfo", "-F", "version", "nvidia"], ["modinfo", "-F", "license", "nvidia"]]
PEERMEM_FILE = ["modinfo", "-F", "filename", "nvidia-peermem"]
PEERMEM_DEPENDS = ["modinfo", "-F", "depends", "nvidia-peermem"]
DKMS_PACKAGES = ["dpkg-query", "-W", "-f", DPKG_FORMAT, "nvidia-dkms-*"]
DKMS_STATUS = ["dkms", "status", "nvidia"]
LSMOD = ["lsmod"]
OFED_INFO = ["ofed_info", "-s"]
DMESG = ["dmesg"]
TOPOLOGY = [["rdma", "link", "show"], ["ip", "-j", "addr", "show"], ["ibv_devinfo", "-v"], ["nvidia-smi", "topo", "-m"]]
PERFTEST_HELP = ["ib_write_bw", "--help"]


def headers_test(kernel: str) -> list[str]:
    return ["test", "-e", f"/lib/modules/{kernel}/build"]


class GpuDirect(Step):
    id = "gpudirect"
    title = "GPUDirect RDMA"
    summary = "DMA-BUF where supported, nvidia-peermem otherwise; proven in use, not just loaded."
    dependent_probes: ClassVar[dict[str, str]] = {
        "mlxconfig -d *": "per ConnectX card; batched for discovery's cards with the tool discovery found",
        "mstconfig -d *": "per ConnectX card; batched for discovery's cards with the tool discovery found",
        "grep -sH . /sys/bus/pci/devices/*/iommu_group/type": "only where this read lists IOMMU groups; batched "
        "when discovery saw them",
    }

    def prefetch(self, ctx: ProbeContext) -> list[tuple[Sequence[str] | str, bool]]:
        """Every fixed read; on a host where discovery found GPUs also the nvidia-peermem build reads (the module
        ships with the NVIDIA driver), the GPU/NIC topology and the platform reads, with the firmware queries and
        the IOMMU type read predicted from discovery's platform facts."""
        disc = df.DiscoveryFacts.model_validate(ctx.facts.get("discovery") or {})
        plain = [UNAME, *DRIVER, PEERMEM_FILE, LSMOD, OFED_INFO, read_file_argv(PEERMEM_CONF), PERFTEST_HELP]
        declared = [(c, False) for c in plain] + [(DMESG, True)]
        if not disc.gpus:
            return declared
        build = [PEERMEM_DEPENDS, DKMS_PACKAGES, DKMS_STATUS, headers_test(disc.kernel)]
        declared += [(c, False) for c in [*build, *TOPOLOGY]] + platform_prefetch()
        platform = disc.platform
        if platform is not None and platform.iommu_groups:
            declared.append((IOMMU_TYPES, False))
        return declared + firmware_prefetch(sorted(named_endpoints(disc)[0]), platform and platform.firmware_tool)

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        ex = ctx.executor
        notes: list[str] = []
        disc = df.DiscoveryFacts.model_validate(ctx.facts.get("discovery") or {})
        facts = GpuDirectFacts(gpus=len(disc.gpus))
        facts.kernel = (await ex.run(UNAME)).stdout.strip() or disc.kernel
        version = await ex.run(DRIVER[0])
        license_ = await ex.run(DRIVER[1])
        if version.ok and license_.ok:
            facts.driver_version, facts.license = version.stdout.strip(), license_.stdout.strip()
        facts.peermem_available = (await ex.run(PEERMEM_FILE)).ok
        if facts.peermem_available:
            await self._probe_build(ex, facts)
        lsmod = df.try_parse("lsmod", (await ex.run(LSMOD)).stdout, notes)
        loaded = {m.name for m in lsmod.modules} if lsmod else set()
        facts.peermem_loaded, facts.nv_peer_mem_loaded = "nvidia_peermem" in loaded, "nv_peer_mem" in loaded
        ofed = df.try_parse("ofed_info", (await ex.run(OFED_INFO)).stdout, notes)
        # ofed_info -s: "OFED-internal-..." is DOCA-OFED, "MLNX_OFED_LINUX-..." MLNX_OFED; both carry peer memory
        facts.ofed_stack = {"DOCA": "doca", "MLNX_OFED": "mlnx_ofed"}.get(ofed.stack or "") if ofed else None
        facts.peermem_conf = await ex.read_file(PEERMEM_CONF)
        dmesg = await ex.run(DMESG, sudo=True)
        facts.kernel_log = peermem_kernel_lines(dmesg.stdout)
        if facts.gpus:
            await self._probe_topology(ex, facts, notes)
        help_text = await ex.run(PERFTEST_HELP)
        usage = help_text.stdout + help_text.stderr
        if help_text.exit_status in (126, 127):  # not installed / not executable: the shell's codes
            facts.perftest_error = help_text.first_error_line()
        facts.perftest_cuda = "--use_cuda=" in usage
        facts.perftest_dmabuf = "--use_cuda_dmabuf" in usage
        out = facts.model_dump(mode="json")
        out["notes"] = notes
        # re-read (not taken from discovery): an operator may have fixed ACS/IOMMU and rebooted since
        nics, gpus = named_endpoints(disc)
        out["platform"] = (await probe_platform(ex, nics, gpus)).model_dump(mode="json") if gpus else None
        return out

    async def _probe_build(self, ex: Executor, facts: GpuDirectFacts) -> None:
        """What nvidia-peermem on disk was built against, and the DKMS package that can rebuild it."""
        depends = await ex.run(PEERMEM_DEPENDS)
        if depends.ok:
            facts.peermem_depends = [d for d in depends.stdout.strip().split(",") if d]
        listed = await ex.run(DKMS_PACKAGES)
        facts.nvidia_dkms_package = installed_dkms_package(listed.stdout)
        status = await ex.run(DKMS_STATUS)
        facts.dkms_status = [line.strip() for line in status.stdout.splitlines() if line.strip()] if status.ok else []
        facts.kernel_headers = (await ex.run(headers_test(facts.kernel))).ok

    async def _probe_topology(self, ex: Executor, facts: GpuDirectFacts, notes: list[str]) -> None:
        link_argv, addr_argv, devinfo_argv, topo_argv = TOPOLOGY
        links = df.try_parse("rdma_link", (await ex.run(link_argv)).stdout, notes)
        interfaces = df.try_parse("ip_json", (await ex.run(addr_argv)).stdout, notes)
        devinfo = devinfo_ports(df.try_parse("ibv_devinfo", (await ex.run(devinfo_argv)).stdout, notes))
        devices = {link.device for link in links.links} if links else set()
        topo = df.try_parse("nvidia_smi_topo", (await ex.run(topo_argv)).stdout, notes)
        facts.paths = gpu_paths(topo, devices) if topo else []
        for link in links.links if links else []:
            iface = interfaces.get(link.netdev) if interfaces and link.netdev else None
            if iface is None or not iface.ipv4 or link.state != "ACTIVE":
                continue
            gpu = next((p.gpu for p in facts.paths if link.device in p.nics), None)
            gid = devinfo.get(link.device, (None, None))[1]
            facts.rails.append(
                Rail(device=link.device, netdev=iface.ifname, ipv4=iface.ipv4[0], gpu=gpu, gid_index=gid)
            )

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        facts = _facts(view, host)
        if facts is None:
            return HostPlan(stage=self.id, host=host, blockers=[f"{host}: no gpudirect facts (probe did not run)"])
        return build_plan(host, facts, view.answers.gpudirect.mode)

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        facts = _facts(view, host)
        if facts is None:
            return [CheckItem(id="facts", title="gpudirect facts", status="fail", evidence="no facts collected")]
        raw = view.stage_facts(host, self.id) or {}
        items = host_checks(facts, view.answers.gpudirect.mode, raw.get("cluster"))
        disc = view.stage_facts(host, "discovery")
        if raw.get("platform") and disc and view.answers.gpudirect.mode != "off":
            # ACS redirect on a GPU<->NIC path fails GPUDirect; IOMMU translation and link downgrades warn
            platform = PlatformFacts.model_validate(raw["platform"])
            items += platform_checks(platform, *named_endpoints(df.DiscoveryFacts.model_validate(disc)), gpudirect=True)
        return items

    async def cluster_probe(self, view: ClusterView, executors: dict[str, Executor]) -> dict[str, dict[str, Any]]:
        """One ``ib_write_bw --use_cuda`` pair between the first two hosts on one rail, GPU memory on both ends."""
        names = [h.name for h in view.answers.hosts if h.name in executors]
        requested = view.answers.gpudirect.mode
        facts = {n: f for n in names if (f := _facts(view, n)) is not None and not no_gpu_reason(f, requested)}
        pair = [n for n in names if n in facts][:2]
        if len(pair) < 2 or not view.answers.gpudirect.cuda_perftest:
            return {}
        (a, fa), (b, fb) = ((n, facts[n]) for n in pair)
        skipped = _pair_skip(fa, fb, a, b, requested)
        rails = _common_rail(fa, fb)
        if skipped is None and rails is None:
            skipped = f"no rail with IPv4 addresses in one subnet on {a} and {b}"
        if skipped or rails is None:
            return {n: {"gdr_test": {"skipped": skipped}} for n in pair}
        result = await _perftest_pair(executors[a], executors[b], rails, fa, fb, requested, view.answers.roce.tos)
        result["peer"] = b
        return {a: {"gdr_test": result}, b: {"gdr_test": {**result, "peer": a}}}


def _pair_skip(fa: GpuDirectFacts, fb: GpuDirectFacts, a: str, b: str, requested: str) -> str | None:
    for name, f in ((a, fa), (b, fb)):
        if f.perftest_error:
            return f"ib_write_bw cannot run on {name} ({f.perftest_error}); stage nccl proves GPUDirect with NCCL's log"
        if not f.perftest_cuda:
            return (
                f"perftest on {name} is built without CUDA (ib_write_bw --help lists no --use_cuda); "
                "stage nccl proves GPUDirect with NCCL's own log"
            )
        if choose_mode(f, requested)[1]:
            return f"no usable GPUDirect path on {name} (see gpudirect_mode)"
    return None


def _common_rail(fa: GpuDirectFacts, fb: GpuDirectFacts) -> tuple[Rail, Rail] | None:
    for ra in fa.rails:
        net = ipaddress.ip_interface(ra.ipv4).network
        for rb in fb.rails:
            if ipaddress.ip_interface(rb.ipv4).network == net and rb.ipv4 != ra.ipv4:
                return ra, rb
    return None


async def _perftest_pair(
    client: Executor, server: Executor, rails: tuple[Rail, Rail], fa: GpuDirectFacts, fb: GpuDirectFacts,
    requested: str, tos: int,
) -> dict[str, Any]:  # fmt: skip
    ra, rb = rails
    dmabuf = choose_mode(fa, requested)[0] == "dmabuf" and fa.perftest_dmabuf and fb.perftest_dmabuf

    def argv(rail: Rail) -> list[str]:
        cmd = ["ib_write_bw", "-d", rail.device, f"--use_cuda={rail.gpu or 0}"]
        cmd += ["--use_cuda_dmabuf"] if dmabuf else []
        cmd += ["-x", str(rail.gid_index)] if rail.gid_index is not None else []
        # the lossless class from roce.tos, a fixed duration and port: both ends must pass the same options
        return cmd + [f"--tclass={tos}", "-F", "--report_gbits", "-D", str(PERFTEST_SECONDS), "-p", str(PERFTEST_PORT)]

    server_cmd, client_cmd = argv(rb), argv(ra) + [str(ipaddress.ip_interface(rb.ipv4).ip)]
    record: dict[str, Any] = {
        "device": ra.device, "gpu": ra.gpu or 0, "peer_device": rb.device, "peer_gpu": rb.gpu or 0,
        "flags": " ".join(client_cmd[3:-1]), "command": " ".join(client_cmd),
    }  # fmt: skip
    limit = PERFTEST_SECONDS + 60
    serving = asyncio.create_task(server.run(server_cmd, timeout_s=limit))
    await asyncio.sleep(1.0)  # the server must be listening before the client connects
    try:
        done = await client.run(client_cmd, timeout_s=limit)
    except ExecutorError as exc:
        serving.cancel()
        record["error"] = exc.detail
        return record
    served = await _settle(serving)
    record.update(_bw_result(done, served))
    return record


async def _settle(task: asyncio.Task[CommandResult]) -> CommandResult | None:
    try:
        return await asyncio.wait_for(task, 30)
    except (ExecutorError, TimeoutError):
        return None


def _bw_result(client: CommandResult, server: CommandResult | None) -> dict[str, Any]:
    try:
        bw = parse("ib_write_bw", client.stdout + "\n" + client.stderr)
    except ParseError as exc:
        return {"error": f"exit {client.exit_status}: {client.first_error_line() or exc}"}
    rows = getattr(bw, "results", [])
    errors = list(getattr(bw, "errors", []))
    if server is not None and not server.ok:
        errors.append(f"server: {server.first_error_line()}")
    if not rows:
        return {"error": "; ".join(errors) or client.first_error_line()}
    return {"gbps": round(rows[-1].average.gbps, 2), "error": None if client.ok else "; ".join(errors) or None}


def _facts(view: ClusterView, host: str) -> GpuDirectFacts | None:
    raw = view.stage_facts(host, "gpudirect")
    if not raw:
        return None
    return GpuDirectFacts.model_validate({k: v for k, v in raw.items() if k not in ("notes", "cluster", "platform")})
