"""Health check and latency/throughput probe of the OpenAI-compatible endpoint, run on the head over SSH."""

from __future__ import annotations

import asyncio
import json
import math
import time
from typing import Any

from steps.inference.entry import UPSTREAM_HEADER
from steps.inference.units import KEY_HEADER
from wizard.answers.sections import InferenceSection
from wizard.executors.base import Executor
from wizard.parsers import ParseError, parse
from wizard.parsers.nccl import log_host

PROMPT = "Explain in one paragraph why RoCE v2 needs a lossless priority (PFC) or ECN on the fabric."
SIMULATED_FINGERPRINT = "roce-wizard-simulated"
_WRITE_OUT = "\n%{http_code} %{time_total}\n"


def health_argv(cfg: InferenceSection, port: int | None = None) -> list[str]:
    # Loopback on the head: the wizard never sends traffic to the answers' addresses itself.
    return ["curl", "-sf", "--max-time", "5", f"http://127.0.0.1:{port or cfg.port}/health"]


def completion_argv(cfg: InferenceSection, port: int | None = None) -> list[str]:
    """One completion with curl on the host; through the entry point (``port``) the response headers come too, to
    tell which replica answered."""
    body = json.dumps(
        {"model": cfg.model, "prompt": PROMPT, "max_tokens": cfg.probe_max_tokens, "temperature": 0},
        separators=(",", ":"),
    )
    return [
        "curl",
        "-sS",
        "--max-time",
        "600",
        "-H",
        "Content-Type: application/json",
        # The key stays on the host: curl (run as root) reads the 0600 header file itself (curl(1) -H @file, 7.55+).
        "-H",
        f"@{KEY_HEADER}",
        "-d",
        body,
        "-w",
        _WRITE_OUT,
        *(["-D", "-"] if port else []),
        f"http://127.0.0.1:{port or cfg.port}/v1/completions",
    ]


def parse_completion(stdout: str) -> dict[str, Any]:
    """curl output ([headers,] body, then '<http code> <seconds>') -> status, seconds, completion tokens, fingerprint
    and, through the entry point, the replica that answered."""
    upstream = None
    if stdout.startswith("HTTP/"):
        head, _, stdout = stdout.replace("\r\n", "\n").partition("\n\n")
        for line in head.splitlines()[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == UPSTREAM_HEADER.lower():
                upstream = value.strip().split(",")[-1].strip()  # the last one tried is the one that answered
    body, _, tail = stdout.rstrip("\n").rpartition("\n")
    fields = tail.split()
    if len(fields) != 2 or not fields[0].isdigit():
        return {"ok": False, "error": "no curl status line in the output"}
    code, seconds = int(fields[0]), float(fields[1])
    try:
        doc = json.loads(body)
    except json.JSONDecodeError:
        return {"ok": False, "http": code, "seconds": seconds, "error": (body.strip() or "empty body")[:200]}
    usage = doc.get("usage") if isinstance(doc, dict) else None
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if code != 200 or not isinstance(tokens, int):
        message = doc.get("message") or doc.get("error") if isinstance(doc, dict) else None
        return {"ok": False, "http": code, "seconds": seconds, "error": str(message or "no usage.completion_tokens")}
    return {
        "ok": True,
        "http": code,
        "seconds": seconds,
        "tokens": tokens,
        "simulated": doc.get("system_fingerprint") == SIMULATED_FINGERPRINT,
        **({"upstream": upstream} if upstream else {}),
    }


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(results: list[dict[str, Any]], waves: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """p50/p90 latency per request and aggregate tokens/s (tokens over the sum of each wave's slowest request)."""
    good = [r for r in results if r.get("ok")]
    summary: dict[str, Any] = {"requests": len(results), "succeeded": len(good)}
    errors = sorted({str(r.get("error")) for r in results if not r.get("ok")})
    if errors:
        summary["errors"] = errors[:3]
    if not good:
        return summary
    busy = sum(max((r["seconds"] for r in wave if r.get("ok")), default=0.0) for wave in waves)
    tokens = sum(r["tokens"] for r in good)
    latencies = [r["seconds"] for r in good]
    summary.update(
        p50_s=round(percentile(latencies, 50), 3),
        p90_s=round(percentile(latencies, 90), 3),
        completion_tokens=tokens,
        tokens_per_s=round(tokens / busy, 1) if busy > 0 else None,
        simulated=all(r.get("simulated") for r in good),
    )
    return summary


async def wait_healthy(executor: Executor, cfg: InferenceSection, unit: str, timeout_s: float) -> dict[str, Any]:
    """Poll /health on the head until it answers, the engine unit fails, or ``timeout_s`` passes."""
    start = time.monotonic()
    delay, attempts = 0.5, 0
    while True:
        attempts += 1
        result = await executor.run(health_argv(cfg), timeout_s=15)
        if result.ok:
            return {"healthy": True, "attempts": attempts, "waited_s": round(time.monotonic() - start, 1)}
        state = (await executor.run(["systemctl", "is-active", unit])).stdout.strip()
        if state == "failed" or time.monotonic() - start + delay > timeout_s:
            journal = await executor.run(["journalctl", "-u", unit, "-n", "12", "--no-pager", "-o", "cat"], sudo=True)
            return {
                "healthy": False,
                "attempts": attempts,
                "waited_s": round(time.monotonic() - start, 1),
                "unit_state": state or "unknown",
                "curl_exit": result.exit_status,
                "journal": [line for line in journal.stdout.splitlines() if line.strip()][-8:],
            }
        await asyncio.sleep(delay)
        delay = min(delay * 2, 10.0)


async def run_probe(executor: Executor, cfg: InferenceSection, port: int | None = None) -> dict[str, Any]:
    """``probe_requests`` completions in waves of ``probe_concurrency``; curl on the host measures each one (through
    the entry point when ``port`` is given, counting which replica answered)."""
    argv = completion_argv(cfg, port)
    results: list[dict[str, Any]] = []
    waves: list[list[dict[str, Any]]] = []
    remaining = cfg.probe_requests
    while remaining > 0:
        size = min(cfg.probe_concurrency, remaining)
        outputs = await asyncio.gather(*(executor.run(argv, sudo=True, timeout_s=660) for _ in range(size)))
        wave = [parse_completion(o.stdout) if o.ok else {"ok": False, "error": o.first_error_line()} for o in outputs]
        waves.append(wave)
        results.extend(wave)
        remaining -= size
    summary = summarize(results, waves)
    summary.update(concurrency=cfg.probe_concurrency, max_tokens=cfg.probe_max_tokens)
    summary["ttft_s"] = await time_to_first_token(executor, cfg, port)
    served: dict[str, int] = {}
    for r in results:
        if r.get("upstream"):
            served[r["upstream"]] = served.get(r["upstream"], 0) + 1
    if port:
        summary["served_by"] = served
    return summary


async def wait_entry(executor: Executor, cfg: InferenceSection, timeout_s: float = 60) -> bool:
    """The entry point answers /health (nginx passes it to a replica) within ``timeout_s``."""
    assert cfg.entry_port is not None
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if (await executor.run(health_argv(cfg, cfg.entry_port), timeout_s=15)).ok:
            return True
        await asyncio.sleep(1.0)
    return False


def engine_journal_argv(unit: str) -> list[str]:
    return ["journalctl", "-u", unit, "--no-pager", "-o", "cat", "-n", "5000"]


def since_last_start(text: str) -> str:
    """The journal lines written since the unit's last start (systemd's "Started ..." line), where NCCL's init
    lines of the running engine are."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Started ")]
    return "\n".join(lines[starts[-1] + 1 :] if starts else lines)


async def engine_nccl(executor: Executor, unit: str) -> dict[str, Any]:
    """The engine's own NCCL as its init lines tell it, host by host (Ray workers print into the head's journal):
    version, transport and the devices or sockets used. The group runs on RDMA only if every host does."""
    result = await executor.run(engine_journal_argv(unit), sudo=True)
    if not result.ok:
        return {"read": False, "error": result.first_error_line()}
    by_host: dict[str, list[str]] = {}
    for line in since_last_start(result.stdout).splitlines():
        host = log_host(line)
        if host is not None:
            by_host.setdefault(host, []).append(line)
    hosts: dict[str, dict[str, Any]] = {}
    for host, lines in by_host.items():
        try:
            found = parse("nccl_debug", "\n".join(lines))
        except ParseError:
            continue
        hosts[host] = {
            "version": found.version,
            "transport": found.transport,
            "ib_ports": [f"{p.device}:{p.port}/{p.link_layer}" for p in found.ib_ports],
            "socket_interfaces": found.socket_interfaces,
            "ib_no_device": found.ib_no_device,
            "gid_index": found.env.get("NCCL_IB_GID_INDEX"),
        }
    if not hosts:
        return {"read": True, "lines": False}
    first = next(iter(hosts.values()))
    socket = {h: v for h, v in hosts.items() if v["transport"] != "IB"}
    return {
        "read": True,
        "lines": True,
        "version": first["version"],
        "transport": "Socket" if socket else "IB",
        "socket_hosts": sorted(socket),
        "ib_ports": first["ib_ports"],
        "socket_interfaces": [i for v in socket.values() for i in v["socket_interfaces"]],
        "ib_no_device": any(v["ib_no_device"] for v in socket.values()),
        "gid_index": first["gid_index"],
        "hosts": sorted(hosts),
    }


async def until_routed(executor: Executor, cfg: InferenceSection, upstream: str, timeout_s: float) -> bool:
    """Completions through the entry point until ``upstream`` answers one: nginx takes a replica back only after
    its fail_timeout, so a replica that answers /health may still be skipped for a while."""
    argv = completion_argv(cfg, cfg.entry_port)
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        result = await executor.run(argv, sudo=True, timeout_s=660)
        if result.ok and parse_completion(result.stdout).get("upstream") == upstream:
            return True
        await asyncio.sleep(0.5)
    return False


def ttft_argv(cfg: InferenceSection, port: int | None = None) -> list[str]:
    """One streamed completion: curl's time to the first byte of the stream is the time to the first token."""
    body = json.dumps(
        {"model": cfg.model, "prompt": PROMPT, "max_tokens": 16, "temperature": 0, "stream": True},
        separators=(",", ":"),
    )
    return ["curl", "-sS", "-N", "--max-time", "600", "-H", "Content-Type: application/json", "-H", f"@{KEY_HEADER}",
            "-d", body, "-o", "/dev/null", "-w", "%{http_code} %{time_starttransfer}\n",
            f"http://127.0.0.1:{port or cfg.port}/v1/completions"]  # fmt: skip


async def time_to_first_token(executor: Executor, cfg: InferenceSection, port: int | None = None) -> float | None:
    result = await executor.run(ttft_argv(cfg, port), sudo=True, timeout_s=660)
    fields = result.stdout.split()
    if not result.ok or len(fields) != 2 or fields[0] != "200":
        return None
    return round(float(fields[1]), 3)
