"""Doctor: the seed runbook's troubleshooting trees, walked automatically on every host, most likely cause first.

Trees: bandwidth below expectation, RDMA test fails, GPU communication slow, bond or rails unbalanced, inference
slow. Each check shows what was seen (evidence) and the fix; the checks follow roce-correctness.md, not the seed's
wrong commands (no ``mlnx_qos --pfc_get``, no PFC on a bond, no ``NCCL_IB_CUDA_SUPPORT``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from steps.discovery.links import recheck
from wizard.answers.model import Answers
from wizard.executors.base import Executor, ExecutorError
from wizard.validate.hostfacts import HostFacts, probe_all
from wizard.validate.lint import lint
from wizard.validate.model import PASS_RATIO, CheckResult, Report

TREES = [
    "bandwidth below expectation",
    "RDMA test fails",
    "GPU communication slow",
    "bond or rails unbalanced",
    "inference slow",
]
LAYERS = [TREES[1], TREES[0], TREES[3], TREES[2], TREES[4]]
RDMA_MODULES = ("mlx5_ib", "ib_uverbs", "ib_core", "rdma_cm")


class Finding(CheckResult):
    """One doctor check inside a tree."""

    tree: str = ""


def _f(tree: str, id_: str, title: str, ok: bool | None, evidence: str, fix: str, host: str | None = None) -> Finding:
    status = "skip" if ok is None else "pass" if ok else "fail"
    return Finding(tree=tree, id=id_, title=title, status=status, evidence=evidence, fix=None if ok else fix, host=host)


def _from_lint(tree: str, item: CheckResult) -> Finding:
    return Finding(tree=tree, **item.model_dump())


async def diagnose(
    answers: Answers,
    executors: dict[str, Executor],
    last: Report | None,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
) -> list[Finding]:
    """Probe every host, walk every tree; returns findings sorted fail, warn, pass, skip and, within each, from the
    lowest layer up, so the first lines are the most likely causes."""
    emit = on_event or (lambda kind, data: None)
    emit("phase", {"name": "probe", "text": "reading facts on every host"})
    facts = await probe_all(answers, executors)
    items = {i.id: i for i in lint(answers, facts)}
    conf = {h: await _read(executors[h], answers.nccl.conf_path) for h in facts}
    findings = _bandwidth(items, last) + _rdma(facts, items, answers) + _gpu(facts, conf, last, answers)
    findings += _balance(facts, last) + _inference(facts, answers) + await _links(facts, executors)
    for f in findings:
        emit("check", {"finding": f})
    rank = {"fail": 0, "warn": 1, "pass": 2, "skip": 3}
    # Lower layers first: a dead link or driver explains slow bandwidth, which explains slow NCCL and inference.
    return sorted(findings, key=lambda f: (rank[f.status], LAYERS.index(f.tree)))


async def _read(ex: Executor, path: str) -> str | None:
    try:
        return await ex.read_file(path)
    except ExecutorError:
        return None


async def _links(facts: dict[str, HostFacts], executors: dict[str, Executor]) -> list[Finding]:
    """A flapping link fails RDMA tests (retry exceeded) and costs bandwidth: read its counters a second time,
    a few seconds after discovery's read, and compare (steps/discovery/links.py)."""
    t = TREES[1]
    names = [n for n, h in facts.items() if h.error is None]
    found = await asyncio.gather(*(recheck(executors[n], n, facts[n].rails()) for n in names))
    return [Finding(tree=t, host=n, **i.model_dump()) for n, items in zip(names, found, strict=True) for i in items]


def _bandwidth(items: dict[str, CheckResult], last: Report | None) -> list[Finding]:
    t = TREES[0]
    out = [_from_lint(t, items[k]) for k in ("link", "mtu", "trust", "pfc", "dscp", "speed")]
    if last is None:
        out.append(
            _f(
                t,
                "measured",
                "measured per-rail bandwidth",
                None,
                "no bwtest results saved yet",
                "run roce-wizard bwtest",
            )
        )
        return out
    slow = [r for r in last.rails if r.status != "pass"]
    evidence = "; ".join(f"{r.label}: {r.gbps or 0:.1f} Gb/s" for r in slow) or (
        f"{len(last.rails)} rails >= {PASS_RATIO:.0%} of line rate ({last.finished})"
    )
    out.append(
        _f(
            t,
            "measured",
            "last bwtest: every rail >= 90 % of line rate",
            not slow,
            evidence,
            slow[0].fix or "see the causes of the last bwtest" if slow else "",
        )
    )
    drops = [c for c in last.counters if c.status == "fail"]
    out.append(
        _f(
            t,
            "counters",
            "no drops on the lossless priority during the last test",
            not drops,
            "; ".join(f"{c.host} {c.netdev}: {c.note}" for c in drops) or "pause frames, no discards",
            "PFC is not effective end to end: run stage roce on the host named; stop lldpad",
        )
    )
    return out


def _rdma(facts: dict[str, HostFacts], items: dict[str, CheckResult], answers: Answers) -> list[Finding]:
    t = TREES[1]
    out = [_from_lint(t, items["hosts"])]
    for name, h in facts.items():
        d = h.discovery
        out.append(
            _f(
                t,
                "ofed",
                "OFED/driver stack installed",
                bool(d.ofed_stack),
                f"{d.ofed_stack} {d.ofed_version}",
                "run stage ofed (DOCA-OFED)",
                name,
            )
        )
        missing = [m for m in RDMA_MODULES if m not in d.modules]
        out.append(
            _f(
                t,
                "modules",
                "RDMA kernel modules loaded",
                not missing,
                f"missing {', '.join(missing)}" if missing else ", ".join(RDMA_MODULES),
                "modprobe the missing modules or restart openibd (stage ofed)",
                name,
            )
        )
        cms = h.roce.rdma_cm if h.roce else []
        v1 = [c.device for c in cms if c.mode and "v2" not in c.mode.lower().replace(" ", "")]
        out.append(
            _f(
                t,
                "roce-v2",
                "RDMA-CM uses RoCE v2",
                not v1 if cms else None,
                f"RoCE v1 on {', '.join(v1)}" if v1 else f"{len(cms)} devices in RoCE v2",
                "run stage roce (cma_roce_mode -d DEV -p 1 -m 2)",
                name,
            )
        )
    out.append(_from_lint(t, items["gid"]))
    out.append(
        _f(
            t,
            "firewall",
            "firewall cannot block the RDMA data path",
            True,
            "RoCE v2 data bypasses netfilter; only the TCP side channel (perftest 18515+, NCCL bootstrap) "
            "needs the management network open",
            "",
        )
    )
    return out


def _gpu(
    facts: dict[str, HostFacts], conf: dict[str, str | None], last: Report | None, answers: Answers
) -> list[Finding]:
    t = TREES[2]
    out = []
    for name, h in facts.items():
        text = conf.get(name)
        values = dict(line.split("=", 1) for line in (text or "").splitlines() if "=" in line and line[:1] != "#")
        devices = [p.rdma_device for p in h.rails() if p.rdma_device]
        hca = values.get("NCCL_IB_HCA", "")
        listed = [d for d in devices if d in hca]
        out.append(
            _f(
                t,
                "ib-hca",
                "NCCL_IB_HCA lists every RDMA port",
                None if text is None else len(listed) == len(devices),
                f"{answers.nccl.conf_path}: NCCL_IB_HCA={hca or '(unset)'}; devices {', '.join(devices)}",
                "run stage nccl: NCCL_IB_HCA==<every device>:1 (exact names)",
                name,
            )
        )
        old = [k for k in ("NCCL_IB_CUDA_SUPPORT", "NCCL_IB_RETRY_CNT", "NCCL_MIN_NCHANNELS") if k in values]
        out.append(
            _f(
                t,
                "stale-vars",
                "no obsolete or invalid NCCL variables",
                not old,
                ", ".join(old) or "none",
                "remove them (stage nccl writes a clean nccl.conf)",
                name,
            )
        )
        # DMA-BUF needs no module; "off" means the operator chose host staging.
        gdr = "nvidia_peermem" in h.discovery.modules or answers.gpudirect.mode in ("dmabuf", "off")
        out.append(
            _f(
                t,
                "gdr",
                "GPUDirect RDMA available (nvidia_peermem or DMA-BUF)",
                gdr if h.discovery.gpus else None,
                "nvidia_peermem loaded" if gdr else "nvidia_peermem not loaded",
                "run stage gpudirect (modprobe nvidia-peermem or use DMA-BUF with the open kernel modules)",
                name,
            )
        )
    if last is not None and last.nccl.status != "skip":
        out.append(
            _f(
                t,
                "transport",
                "NCCL ran over IB (RoCE), not sockets",
                last.nccl.transport == "IB",
                f"transport {last.nccl.transport}; {last.nccl.reason}",
                "see NCCL_IB_HCA and the RDMA devices",
            )
        )
    return out


def _balance(facts: dict[str, HostFacts], last: Report | None) -> list[Finding]:
    t = TREES[3]
    out = []
    for name, h in facts.items():
        bonded = [p.netdev for p in h.rails() if p.master]
        out.append(
            _f(
                t,
                "rails",
                "RDMA ports are rails, not bond slaves",
                not bonded,
                f"bonded: {', '.join(map(str, bonded))}" if bonded else "every port carries its own rail",
                "use per-port rails (a bond carries one RoCE LAG QP per card, never 4x25G); stage network",
                name,
            )
        )
    if last is not None and last.together:
        rates = [(r.gbps or 0.0, r) for r in last.together]
        low, high = min(rates, key=lambda x: x[0]), max(rates, key=lambda x: x[0])
        even = high[0] == 0 or low[0] >= 0.9 * high[0]
        out.append(
            _f(
                t,
                "spread",
                "rails carry equal bandwidth when all run together",
                even,
                f"slowest {low[1].label} {low[0]:.1f} Gb/s, fastest {high[0]:.1f} Gb/s",
                f"check {low[1].client.host} {low[1].client.netdev} and its cable: "
                f"{low[1].cause or 'counters and link speed'}",
            )
        )
    return out


def _inference(facts: dict[str, HostFacts], answers: Answers) -> list[Finding]:
    t = TREES[4]
    cfg = answers.inference
    out = []
    for name, h in facts.items():
        gpus = len(h.discovery.gpus)
        out.append(
            _f(
                t,
                "tp",
                "tensor-parallel size fits the GPUs of one node",
                cfg.tensor_parallel_size <= gpus or None,
                f"{gpus} GPUs, tensor_parallel_size {cfg.tensor_parallel_size}",
                "set inference.tensor_parallel_size to the GPUs per node (TP inside a node, PP across)",
                name,
            )
        )
    out.append(
        _f(
            t,
            "pp",
            "pipeline parallel spans the nodes (not TP over 25GbE)",
            cfg.pipeline_parallel_size == len(facts) or not cfg.enabled,
            f"pipeline_parallel_size {cfg.pipeline_parallel_size}, {len(facts)} nodes",
            "tensor parallel over the network is latency bound on 25GbE: keep TP per node, PP = nodes",
        )
    )
    return out
