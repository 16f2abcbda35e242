"""The cross-host NCCL run: mpirun from the first host (nccl-tests) or torchrun on every host (torch)."""

from __future__ import annotations

import asyncio
import ipaddress
import re
from typing import Any

from steps.discovery.facts import DiscoveryFacts
from steps.nccl.build import SMOKE_SCRIPT
from steps.nccl.env import memlock_problem
from steps.nccl.facts import NcclFacts
from steps.nccl.run import (
    lines_by_host,
    mgmt_ipv4,
    mpirun_argv,
    parse_smoke_result,
    summarize_log,
    summarize_perf,
    tail,
    torchrun_argv,
)
from wizard.engine.step import ClusterView
from wizard.executors.base import CommandResult, CommandTimeout, Executor

_FATAL = re.compile(r"NCCL WARN|Test NCCL failure|Cuda failure|error while loading shared|DistStoreError|NCCL error")
_SSH_TROUBLE = ("Permission denied", "Host key verification failed", "unable to reliably start", "lost communication")


async def run_cluster_test(view: ClusterView, executors: dict[str, Executor]) -> dict[str, dict[str, Any]]:
    """Run the configured test across the hosts still in the run; returns facts per host."""
    cfg = view.answers.nccl
    hosts = [h.name for h in view.answers.hosts if h.name in executors]
    if cfg.test == "none":
        return {}
    if len(hosts) < 2:
        missing = [h.name for h in view.answers.hosts if h.name not in executors]
        why = f"only {', '.join(hosts) or 'no host'} left in the run; a cross-host NCCL test needs two or more"
        if missing:
            why += f" ({', '.join(missing)} stopped at an earlier stage: fix it there and re-run)"
        return {h: {"skipped": why, "partial": bool(missing)} for h in hosts}
    disc = {h: DiscoveryFacts.model_validate(view.stage_facts(h, "discovery") or {}) for h in hosts}
    facts = {
        h: NcclFacts.model_validate({k: v for k, v in (view.stage_facts(h, "nccl") or {}).items() if k != "cluster"})
        for h in hosts
    }
    ifnames = {h: cfg.socket_ifname or disc[h].ssh_interface for h in hosts}
    ips = {h: mgmt_ipv4(disc[h], ifnames[h] or "") for h in hosts}
    problems = _preconditions(hosts, disc, facts, ifnames, ips, cfg.test)
    if problems:
        return {h: {"error": problems.get(h) or f"not run: {'; '.join(problems.values())}"} for h in hosts}
    if cfg.test == "torch":
        return await _torch(view, executors, hosts, disc, ips)
    return await _mpirun(view, executors, hosts, disc, ifnames, ips)


def _preconditions(
    hosts: list[str],
    disc: dict[str, DiscoveryFacts],
    facts: dict[str, NcclFacts],
    ifnames: dict[str, str | None],
    ips: dict[str, str | None],
    test: str,
) -> dict[str, str]:
    problems: dict[str, str] = {}
    counts = {h: len(disc[h].gpus) for h in hosts}
    for h in hosts:
        if counts[h] == 0:
            problems[h] = f"{h}: nvidia-smi shows no GPU; NCCL needs one per rank"
        elif not ifnames[h] or not ips[h]:
            problems[h] = f"{h}: no management interface/IPv4 known; set nccl.socket_ifname"
        elif test == "nccl-tests" and not (facts[h].all_reduce_perf and facts[h].all_reduce_perf.exists):
            problems[h] = f"{h}: all_reduce_perf is missing (see this stage's plan)"
        elif problem := memlock_problem(h, facts[h]):
            problems[h] = problem  # ranks would die in ibv_reg_mr: say why instead of running
    if len(set(counts.values())) > 1 and not problems:
        listing = ", ".join(f"{h}: {n}" for h, n in counts.items())
        problems = dict.fromkeys(hosts, f"GPU counts differ ({listing}); one rank per GPU needs the same count")
    return problems


async def _mpirun(
    view: ClusterView,
    executors: dict[str, Executor],
    hosts: list[str],
    disc: dict[str, DiscoveryFacts],
    ifnames: dict[str, str | None],
    ips: dict[str, str | None],
) -> dict[str, dict[str, Any]]:
    cfg, first = view.answers.nccl, hosts[0]
    launcher = executors[first]
    for other in hosts[1:]:
        check = await launcher.run(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", str(ips[other]), "true"])
        if not check.ok:
            error = (
                f"{first} cannot ssh to {other} ({ips[other]}) without a password, which mpirun needs: "
                f"{check.first_error_line()}"
            )
            return {h: {"error": error, "ssh": True, "ran_from": first} for h in hosts}
    user = view.host(first).user or view.answers.ssh.user
    slots = [(str(ips[h]), len(disc[h].gpus)) for h in hosts]
    argv = mpirun_argv(cfg, slots, _tcp_include(hosts, disc, ifnames, ips), user, cfg.conf_path)
    result = await _run(launcher, argv, cfg.test_timeout_s)
    output = result.stdout + "\n" + result.stderr
    error = None
    if result.exit_status != 0:
        error = f"mpirun exited {result.exit_status}: {_telling_line(output) or result.first_error_line()}"
        if any(word in output for word in _SSH_TROUBLE):
            error += " (mpirun could not start its daemons over ssh on every host)"
    common = {
        "launcher": "mpirun",
        "ran_from": first,
        "command": " ".join(argv),
        "exit_status": result.exit_status,
        "error": error,
        "perf": summarize_perf(output),
        "tail": tail(output),
    }
    return _per_host(hosts, disc, output, common)


async def _torch(
    view: ClusterView,
    executors: dict[str, Executor],
    hosts: list[str],
    disc: dict[str, DiscoveryFacts],
    ips: dict[str, str | None],
) -> dict[str, dict[str, Any]]:
    cfg, conf = view.answers.nccl, view.answers.nccl.conf_path
    master = str(ips[hosts[0]])
    runs = [
        torchrun_argv(cfg, len(hosts), rank, len(disc[h].gpus), master, SMOKE_SCRIPT, conf)
        for rank, h in enumerate(hosts)
    ]
    results = await asyncio.gather(
        *(_run(executors[h], argv, cfg.test_timeout_s) for h, argv in zip(hosts, runs, strict=True))
    )
    smoke = parse_smoke_result(results[0].stdout)
    perf = {"parsed": smoke is not None, "busbw_1g": smoke["busbw_gbytes"] if smoke else None}
    perf |= {"correct": bool(smoke and smoke["correct"]), "errors": [] if smoke else ["no result line from rank 0"]}
    out: dict[str, dict[str, Any]] = {}
    for h, argv, result in zip(hosts, runs, results, strict=True):
        output = result.stdout + "\n" + result.stderr
        out[h] = {
            "launcher": "torchrun",
            "ran_from": h,
            "command": " ".join(argv),
            "exit_status": result.exit_status,
            "error": None
            if result.ok
            else f"torchrun exited {result.exit_status}: {_telling_line(output) or result.first_error_line()}",
            "perf": perf,
            "tail": tail(output),
            "log": summarize_log(output.splitlines()),
        }
    return out


def _per_host(
    hosts: list[str], disc: dict[str, DiscoveryFacts], output: str, common: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    groups = lines_by_host(output)
    version = next((line for line in output.splitlines() if line.startswith("NCCL version")), None)
    out = {}
    for h in hosts:
        name = (disc[h].hostname or h).split(".")[0]
        lines = groups.get(name, [])
        summary = summarize_log(([version] if version else []) + lines) if lines else {"parsed": False, "errors": []}
        summary["lines"] = len(lines)
        out[h] = common | {"nccl_hostname": name, "log": summary}
    return out


def _tcp_include(
    hosts: list[str], disc: dict[str, DiscoveryFacts], ifnames: dict[str, str | None], ips: dict[str, str | None]
) -> str:
    """Open MPI's interface filter: the common management interface name, else its subnet (CIDR)."""
    names = {ifnames[h] for h in hosts}
    if len(names) == 1:
        return str(names.pop())
    first = hosts[0]
    cidrs = disc[first].other_interfaces.get(ifnames[first] or "", [])
    for cidr in cidrs:
        if cidr.split("/")[0] == ips[first]:
            return str(ipaddress.ip_interface(cidr).network)
    return f"{ips[first]}/32"


def _telling_line(output: str) -> str | None:
    """The line that says why a job died (an NCCL WARN, a test or CUDA failure, a missing library)."""
    for line in output.splitlines():
        if _FATAL.search(line):
            return line.strip()
    return None


async def _run(executor: Executor, argv: list[str], timeout_s: float) -> CommandResult:
    try:
        return await executor.run(argv, timeout_s=timeout_s)
    except CommandTimeout as exc:
        return CommandResult(" ".join(argv), 124, "", f"timed out after {timeout_s:g}s ({exc.detail})", timeout_s)
