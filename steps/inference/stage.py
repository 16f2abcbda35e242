"""Stage inference: Ray plus vLLM or SGLang as systemd units, a health check and a latency/throughput probe."""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from steps.inference import bench, weights
from steps.inference.builds import PYPI_JSON, parse_index_versions
from steps.inference.checks import host_checks, version_consistency
from steps.inference.choice import endpoint, gpu_topology
from steps.inference.entry import ENTRY_CONF, NGINX_UNIT, entry_host
from steps.inference.fabric import LIVE_READS, read_live
from steps.inference.layout import Layout, Node, build_layout
from steps.inference.plan import plan_host, serving_units
from steps.inference.sglang_front import SGLANG_CONF
from steps.inference.units import (
    ENGINE_UNIT,
    ENV_PATH,
    KEY_ENV,
    KEY_HEADER,
    KEY_NGINX,
    LOCK_PATH,
    NON_CARRY_PATH,
    QOS_UNIT,
    RAY_UNIT,
    TOKEN_PATH,
    UNIT_DIR,
    WAIT_PATH,
    venv_bin,
)
from wizard.answers.sections import InferenceSection
from wizard.engine.prefetch import read_file_argv
from wizard.engine.step import CheckItem, ClusterView, HostPlan, ProbeContext, Step
from wizard.executors.base import Executor

_PACKAGES = ("vllm", "sglang", "ray", "torch")
# The probe's read-only commands, defined once: the probe runs them and ``prefetch`` declares them.
FILES = (
    ENV_PATH,
    f"{UNIT_DIR}/{RAY_UNIT}",
    f"{UNIT_DIR}/{ENGINE_UNIT}",
    WAIT_PATH,
    NON_CARRY_PATH,
    ENTRY_CONF,
    SGLANG_CONF,
    LOCK_PATH,
)
KEY_DIGEST = ["sha256sum", KEY_ENV]
NGINX_VERSION = ["nginx", "-v"]
TOKEN_DIGEST = ["sha256sum", TOKEN_PATH]
KEY_FILES = (("env", KEY_ENV), ("header", KEY_HEADER), ("nginx", KEY_NGINX))
GPU_TOPO = ["nvidia-smi", "topo", "-m"]
VERBS = ("is-active", "is-enabled")


def python_version(cfg: InferenceSection) -> list[str]:
    return [venv_bin(cfg, "python"), "--version"]


def pip_list(cfg: InferenceSection) -> list[str]:
    return [venv_bin(cfg, "python"), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"]


def index_versions(cfg: InferenceSection) -> list[str]:
    mirror = ["--index-url", cfg.index_url] if cfg.index_url else []
    return [venv_bin(cfg, "python"), "-m", "pip", "index", "versions", "vllm", *mirror, "--disable-pip-version-check"]


def pypi_latest() -> list[str]:
    return ["curl", "-sSf", "--max-time", "20", PYPI_JSON.format(name="vllm")]


def key_mode(path: str) -> list[str]:
    return ["stat", "-c", "%a %U", path]


def unit_state(verb: str, unit: str) -> list[str]:
    return ["systemctl", verb, unit]


def journal(unit: str) -> list[str]:
    return ["journalctl", "-u", unit, "-n", "12", "--no-pager", "-o", "cat"]


class Inference(Step):
    id = "inference"
    title = "Inference service"
    summary = (
        "vLLM or SGLang as systemd units in replicas (one node each when the model fits one, else the smallest group"
        " of nodes over Ray), the build the driver runs, weights fetched first, one nginx entry point; health, the"
        " engine's own NCCL transport and a latency/throughput probe per replica."
    )

    def __init__(self) -> None:
        # Handed to every host only when their Ray tokens are missing or differ (a rotation). It lives in memory:
        # facts, state and logs only ever see its SHA-256 as read back from the hosts.
        self.ray_token = secrets.token_hex(32)
        # Likewise the API key every replica behind the entry point shares, handed out only when their keys differ.
        self.api_key = secrets.token_hex(32)

    dependent_probes: ClassVar[dict[str, str]] = {
        "* -m pip list *": "the venv's packages, only when its python answered --version in this read",
        "* -m pip index versions *": "the newest vLLM release, only when the venv lacks vLLM and no release is pinned",
        "curl -sSf --max-time 20 https://pypi.org/*": "the newest vLLM release, only before the venv exists",
        "journalctl -u *": "the journal of a unit this read found failed or activating",
    }

    def prefetch(self, ctx: ProbeContext) -> list[tuple[Sequence[str] | str, bool]]:
        """Everything but the venv's package list (only once its python runs) and a failed unit's journal."""
        cfg = ctx.answers.inference
        if not cfg.enabled:
            return []
        plain = [python_version(cfg), *LIVE_READS]
        sudo = [*map(read_file_argv, FILES), TOKEN_DIGEST, *(key_mode(p) for _, p in KEY_FILES), key_mode(TOKEN_PATH)]
        sudo += weights.reads(cfg)
        plain += [GPU_TOPO, *(unit_state(v, u) for u in (QOS_UNIT, RAY_UNIT, ENGINE_UNIT, NGINX_UNIT) for v in VERBS)]
        plain.append(NGINX_VERSION)
        sudo.append(KEY_DIGEST)
        return [(c, False) for c in plain] + [(c, True) for c in sudo]

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        cfg = ctx.answers.inference
        if not cfg.enabled:
            return {"enabled": False}
        ex = ctx.executor
        facts: dict[str, Any] = {"enabled": True, "python": None, "packages": {}, "files": {}, "units": {}}
        facts["probed_at"] = time.time()  # lets plans tell hosts probed in this run from stale ones
        version = await ex.run(python_version(cfg))
        match = re.search(r"Python (\d+\.\d+(\.\d+)?)", version.stdout + version.stderr)
        if version.ok and match:
            facts["python"] = match.group(1)
            listing = await ex.run(pip_list(cfg))
            facts["packages"] = parse_pip_list(listing.stdout) if listing.ok else {}
        if cfg.engine == "vllm" and cfg.engine_version is None and "vllm" not in facts["packages"]:
            # The newest release, in case this host's driver needs it pinned as its CUDA 12 build: pip asks the
            # index the venv will install from; before the venv exists, PyPI's JSON API (read-only, over HTTPS).
            query = index_versions(cfg) if facts["python"] else pypi_latest() if not cfg.index_url else None
            found = await ex.run(query) if query else None
            facts["latest"] = parse_index_versions(found.stdout) if found is not None and found.ok else None
        facts["rdma"] = await read_live(ex)
        facts["weights"] = await weights.probe(ex, cfg)
        for path in FILES:
            text = await ex.read_file(path, sudo=True)
            # One trailing newline, like every file this stage writes (transports differ in what they keep).
            facts["files"][path] = text.rstrip("\n") + "\n" if text else text
        # Only a hash of the Ray token is ever read back: its value must not land in logs or facts.
        digest = await ex.run(TOKEN_DIGEST, sudo=True)
        facts["ray_token_sha256"] = digest.stdout.split()[0] if digest.ok and digest.stdout.split() else None
        # Mode and owner of the API key files only: the key itself is never read by the wizard.
        facts["api_key"] = {}
        for name, path in KEY_FILES:
            mode = await ex.run(key_mode(path), sudo=True)
            facts["api_key"][name] = mode.stdout.strip() if mode.ok else None
        key = await ex.run(KEY_DIGEST, sudo=True)  # which replicas share one key (the entry point needs that)
        facts["api_key_sha256"] = key.stdout.split()[0] if key.ok and key.stdout.split() else None
        facts["nginx"] = (await ex.run(NGINX_VERSION)).ok
        token_mode = await ex.run(key_mode(TOKEN_PATH), sudo=True)
        facts["token_file_mode"] = token_mode.stdout.strip() if token_mode.ok else None
        topo = await ex.run(GPU_TOPO)
        facts["gpu_topology"] = gpu_topology(topo.stdout) if topo.ok else None
        qos = {}
        for verb in VERBS:
            qos[verb.removeprefix("is-")] = (await ex.run(unit_state(verb, QOS_UNIT))).stdout.strip()
        facts["qos_unit"] = {"active": qos["active"], "enabled": qos["enabled"]}
        for unit in (RAY_UNIT, ENGINE_UNIT, NGINX_UNIT):
            active = (await ex.run(unit_state("is-active", unit))).stdout.strip() or "unknown"
            enabled = (await ex.run(unit_state("is-enabled", unit))).stdout.strip() or "not-found"
            state: dict[str, Any] = {"active": active, "enabled": enabled}
            if active in ("failed", "activating"):
                lines = (await ex.run(journal(unit), sudo=True)).stdout.splitlines()
                state["journal"] = [line for line in lines if line.strip()][-8:]
            facts["units"][unit] = state
        return facts

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        if not view.answers.inference.enabled:
            return HostPlan(
                stage=self.id, host=host, noop_reason="inference.enabled is false in the answers; nothing deployed"
            )
        layout = build_layout(view)
        return plan_host(layout.effective(view), layout, host, self.ray_token, self.api_key)

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        if not view.answers.inference.enabled:
            return [
                CheckItem(id="enabled", title="inference service", status="skip", evidence="inference.enabled is false")
            ]
        layout = build_layout(view)
        return host_checks(layout.effective(view), layout, host)

    def describe(self, view: ClusterView, host: str) -> list[str]:
        """The endpoint's health and the latency/throughput probe, shown without --verbose."""
        if not view.answers.inference.enabled:
            return []
        layout = build_layout(view)
        shown = [
            c
            for c in host_checks(layout.effective(view), layout, host)
            if c.id in ("health", "engine_nccl", "probe", "entry_point")
        ]
        lines = [f"{c.title}: {c.evidence}" for c in shown if c.status in ("pass", "warn")]
        node = layout.node(host)
        if node is not None and node in layout.api_nodes():
            kind = f"replica {node.group + 1} of {len(layout.groups())}" if layout.replicas else "the group"
            lines.append(f"endpoint ({kind}): {endpoint(view.answers.inference, node.ip)} (key: {KEY_ENV} on {host})")
        return lines

    def apply_waves(self, view: ClusterView, hosts: list[str]) -> list[list[str]]:
        """Heads of groups that span nodes first (they install and write the lock file), then the other hosts,
        planned again from the heads' lock files."""
        if not view.answers.inference.enabled:
            return [hosts]
        layout = build_layout(view)
        followers = {n.host for n in layout.nodes if n.rank > 0}
        return [[h for h in hosts if h not in followers], [h for h in hosts if h in followers]]

    def cluster_checks(self, view: ClusterView) -> dict[str, list[CheckItem]]:
        if not view.answers.inference.enabled:
            return {}
        layout = build_layout(view)
        return version_consistency(layout.effective(view), layout)

    async def cluster_probe(self, view: ClusterView, executors: dict[str, Executor]) -> dict[str, dict[str, Any]]:
        """Every group's endpoint at its head, all groups at once: health, then the latency/throughput probe."""
        if not view.answers.inference.enabled:
            return {}
        layout = build_layout(view)
        view = layout.effective(view)
        results = await asyncio.gather(*(self._probe_group(view, layout, g, executors) for g in layout.groups()))
        found = {host: facts for group in results for host, facts in group.items()}
        entry = entry_host(view, layout)
        if entry is not None and entry in executors and found.get(entry, {}).get("health", {}).get("healthy"):
            cfg = view.answers.inference
            answered = await bench.wait_entry(executors[entry], cfg)
            found[entry]["entry"] = (
                await bench.run_probe(executors[entry], cfg, cfg.entry_port) if answered else {"answered": False}
            )
        return found

    async def _probe_group(
        self, view: ClusterView, layout: Layout, group: list[Node], executors: dict[str, Executor]
    ) -> dict[str, dict[str, Any]]:
        cfg = view.answers.inference
        head = group[0]
        if any(layout.refusals(n.host) for n in group):
            return {}
        missing = [n.host for n in group if n.host not in executors]
        if missing:
            reason = f"{', '.join(missing)} left the run (an earlier step failed there); the serving group needs it"
            return {n.host: {"healthy": False, "skipped": reason} for n in group if n.host in executors}
        units = serving_units(view, layout, head.host)
        engine = ENGINE_UNIT if ENGINE_UNIT in units else RAY_UNIT
        health = await bench.wait_healthy(executors[head.host], cfg, engine, cfg.ready_timeout_s)
        result: dict[str, Any] = {"health": health}
        if health["healthy"]:
            result["nccl"] = await bench.engine_nccl(executors[head.host], engine)
            result["probe"] = await bench.run_probe(executors[head.host], cfg)
        out = {head.host: result}
        for node in group[1:]:
            out[node.host] = {"served_by": head.host, "health": health}
        return out


def parse_pip_list(text: str) -> dict[str, str]:
    """`pip list --format=json` -> {name: version} for the packages this stage cares about."""
    start = text.find("[")
    try:
        rows = json.loads(text[start:]) if start >= 0 else []
    except json.JSONDecodeError:
        return {}
    found = {}
    for row in rows if isinstance(rows, list) else []:
        name = str(row.get("name", "")).lower().replace("_", "-")
        if name in _PACKAGES:
            found[name] = str(row.get("version", ""))
    return found
