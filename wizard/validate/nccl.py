"""NCCL across the hosts: all_reduce_perf bus bandwidth by message size and the transport NCCL really used."""

from __future__ import annotations

from steps.nccl.causes import find_cause
from steps.nccl.run import lines_by_host, mgmt_ipv4, mpirun_argv, summarize_log
from wizard.answers.model import Answers
from wizard.executors.base import Executor, ExecutorError
from wizard.parsers import ParseError, parse
from wizard.validate.hostfacts import HostFacts
from wizard.validate.model import NcclResult

BUSBW_SHARE = 0.72  # item 58: >= ~9 GB/s busbw at >= 1 GiB on 4 x 25GbE (12.5 GB/s of wire)


async def run_nccl(answers: Answers, executors: dict[str, Executor], facts: dict[str, HostFacts]) -> NcclResult:
    """Run the nccl stage's mpirun command once more; skipped with the reason when nccl-tests is not there."""
    cfg = answers.nccl
    hosts = [n for n in facts if facts[n].error is None]
    if cfg.test != "nccl-tests":
        return NcclResult(reason=f"nccl.test is {cfg.test!r}: bandwidth by size needs nccl-tests")
    if len(hosts) < 2:
        return NcclResult(reason="needs two reachable hosts")
    binary = f"{cfg.tests_path}/all_reduce_perf"
    for h in hosts:
        if not (await executors[h].run(["test", "-x", binary])).ok:
            return NcclResult(reason=f"{binary} is not built on {h}: run stage nccl first")
    disc = {h: facts[h].discovery for h in hosts}
    tcp_if = cfg.socket_ifname or disc[hosts[0]].ssh_interface or "lo"
    slots = [(mgmt_ipv4(disc[h], cfg.socket_ifname or disc[h].ssh_interface or "") or h, len(disc[h].gpus) or 1)
             for h in hosts]  # fmt: skip
    entry = next(e for e in answers.hosts if e.name == hosts[0])
    argv = mpirun_argv(cfg, slots, tcp_if, entry.user or answers.ssh.user, cfg.conf_path)
    try:
        result = await executors[hosts[0]].run(argv, timeout_s=cfg.test_timeout_s)
    except ExecutorError as exc:
        return NcclResult(status="fail", reason=str(exc))
    output = result.stdout + "\n" + result.stderr
    out = NcclResult(status="pass" if result.ok else "fail")
    try:
        perf = parse("nccl_all_reduce_perf", output)
        out.busbw = [(r.size_bytes, r.out_of_place.busbw_gbytes or 0.0) for r in perf.rows]  # type: ignore[attr-defined]
        out.peak_busbw = perf.peak_busbw_gbytes()  # type: ignore[attr-defined]
    except ParseError as exc:
        out.status, out.reason = "fail", f"no all_reduce_perf table: {exc}"
    groups = lines_by_host(output)
    first = next(iter(groups.values()), [])
    log = summarize_log(first) if first else {}
    out.transport = log.get("network") or log.get("transport")
    if out.transport and out.transport != "IB":
        out.status = "fail"
        out.reason = f"NCCL used {out.transport}, not IB (RoCE): check NCCL_IB_HCA and the RDMA devices"
    elif not result.ok and not out.reason:
        out.reason = f"mpirun exited {result.exit_status}: {result.first_error_line()}"
    if not result.ok and (cause := find_cause(hosts[0], log, {"tail": output.splitlines()[-40:]})):
        out.reason = f"{cause.evidence}. Fix: {cause.fix}"  # a failed completion or fatal init error, named
    return out


def judge(result: NcclResult, rails_gbps: float | None) -> NcclResult:
    """Compare the bus bandwidth at >= 1 GiB with the rails' line rate (busbw is meant to be compared with it)."""
    large = [bw for size, bw in result.busbw if size >= 1 << 30]
    if result.status != "pass" or not large or not rails_gbps:
        return result
    want = rails_gbps / 8 * BUSBW_SHARE
    best = max(large)
    if best < want:
        result.status = "fail"
        result.reason = f"busbw {best:.2f} GB/s at >= 1 GiB, want >= {want:.1f} GB/s ({BUSBW_SHARE:.0%} of the rails)"
    else:
        result.reason = f"busbw {best:.2f} GB/s at >= 1 GiB (>= {want:.1f} GB/s)"
    return result
