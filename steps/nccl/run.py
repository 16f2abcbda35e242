"""Pure pieces of the cross-host NCCL run: launch command lines, the torch smoke script, log summaries."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from steps.discovery.facts import DiscoveryFacts
from wizard.answers.sections import NcclSection
from wizard.parsers import ParseError
from wizard.parsers.nccl import log_host, parse_nccl_all_reduce_perf, parse_nccl_debug

DEBUG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,GRAPH,ENV"}
GIB = 1 << 30
SMOKE_BYTES = GIB
_SMOKE = re.compile(r"^roce-wizard-allreduce:\s+(.*)$", re.M)


def mgmt_ipv4(disc: DiscoveryFacts, ifname: str) -> str | None:
    """First IPv4 address of ``ifname`` (management NIC or a ConnectX port), else the SSH server address."""
    cidrs = disc.other_interfaces.get(ifname)
    if cidrs is None:
        port = disc.port_by_netdev(ifname)
        cidrs = port.ipv4 if port else []
    for cidr in cidrs:
        if ":" not in cidr:
            return cidr.split("/")[0]
    return disc.ssh_server_address


def mpirun_argv(cfg: NcclSection, slots: list[tuple[str, int]], tcp_if: str, user: str, conf_path: str) -> list[str]:
    """One process per GPU from the first host: ``-np hosts*gpus -N gpus ... all_reduce_perf -g 1``."""
    gpus = slots[0][1]
    argv = [cfg.mpirun, "-np", str(gpus * len(slots)), "-N", str(gpus)]
    argv += ["-H", ",".join(f"{ip}:{n}" for ip, n in slots), "--bind-to", "numa"]
    if user == "root":
        argv.append("--allow-run-as-root")
    # MPI only bootstraps the ranks: keep it on TCP over the management network, away from the RDMA rails.
    argv += ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"]
    argv += ["--mca", "btl_tcp_if_include", tcp_if, "--mca", "oob_tcp_if_include", tcp_if]
    argv += ["--mca", "plm_rsh_args", "-o BatchMode=yes"]
    for key, value in DEBUG_ENV.items():
        argv += ["-x", f"{key}={value}"]
    if conf_path != "/etc/nccl.conf":
        argv += ["-x", f"NCCL_CONF_FILE={conf_path}"]
    argv += ["-x", "LD_LIBRARY_PATH", "-x", "PATH"]
    argv += [f"{cfg.tests_path}/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1"]
    return argv


def torchrun_argv(
    cfg: NcclSection, nnodes: int, rank: int, gpus: int, master: str, script: str, conf: str
) -> list[str]:
    """``env NCCL_DEBUG=INFO ... torchrun --nnodes N --node-rank R --nproc-per-node G --master-addr A ...``."""
    env = [f"{k}={v}" for k, v in DEBUG_ENV.items()]
    if conf != "/etc/nccl.conf":
        env.append(f"NCCL_CONF_FILE={conf}")
    argv = ["env", *env, cfg.torchrun, "--nnodes", str(nnodes), "--node-rank", str(rank)]
    argv += ["--nproc-per-node", str(gpus), "--master-addr", master, "--master-port", str(cfg.master_port)]
    return [*argv, script]


def smoke_script() -> str:
    """The torch.distributed all_reduce smoke test (rank 0 prints one result line)."""
    return f'''#!/usr/bin/env python3
"""roce-wizard NCCL smoke test: all_reduce across every GPU of every host; rank 0 prints one result line."""

import os
import time

import torch
import torch.distributed as dist

SIZE_BYTES = {SMOKE_BYTES}
WARMUP = 5
ITERS = 20


def main() -> None:
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    count = SIZE_BYTES // 4
    check = torch.full((count,), float(rank + 1), device="cuda")
    dist.all_reduce(check)
    correct = bool(torch.all(check == world * (world + 1) / 2).item())
    data = torch.zeros(count, device="cuda")
    for _ in range(WARMUP):
        dist.all_reduce(data)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(ITERS):
        dist.all_reduce(data)
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / ITERS
    algbw = SIZE_BYTES / seconds / 1e9
    busbw = algbw * 2 * (world - 1) / world
    if rank == 0:
        print(
            f"roce-wizard-allreduce: world={{world}} bytes={{SIZE_BYTES}} time_us={{seconds * 1e6:.1f}} "
            f"algbw_gbytes={{algbw:.2f}} busbw_gbytes={{busbw:.2f}} correct={{correct}}",
            flush=True,
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''


def parse_smoke_result(text: str) -> dict[str, Any] | None:
    """The smoke script's result line as numbers, None when it never printed one."""
    match = _SMOKE.search(text)
    if not match:
        return None
    fields = dict(item.split("=", 1) for item in match.group(1).split() if "=" in item)
    try:
        return {
            "world": int(fields["world"]),
            "bytes": int(fields["bytes"]),
            "busbw_gbytes": float(fields["busbw_gbytes"]),
            "correct": fields.get("correct") == "True",
        }
    except (KeyError, ValueError):
        return None


def lines_by_host(text: str) -> dict[str, list[str]]:
    """NCCL log lines grouped by the host name NCCL printed (gethostname cut at the first dot)."""
    groups: dict[str, list[str]] = {}
    for line in text.splitlines():
        host = log_host(line)  # also behind the time prefix NCCL >= 2.26 puts on WARN lines
        if host:
            groups.setdefault(host, []).append(line)
    return groups


def summarize_log(lines: list[str]) -> dict[str, Any]:
    """What one host's NCCL_DEBUG=INFO lines prove about the transport (JSON-able, small)."""
    try:
        log = parse_nccl_debug("\n".join(lines))
    except ParseError as exc:
        return {"parsed": False, "errors": [str(exc)]}
    vias = Counter(c.via for c in log.channels if c.via.startswith("NET/"))
    return {
        "parsed": True,
        "version": log.version,
        "transport": log.transport,
        "network": log.network,
        "ib_devices": log.ib_devices,
        "ib_no_device": log.ib_no_device,
        "merged_devices": log.merged_devices,
        "socket_interfaces": log.socket_interfaces,
        "gdr_enabled": log.gdr_enabled,
        "gdr_enabled_hcas": log.gdr_enabled_hcas,
        "gdr_disabled_hcas": log.gdr_disabled_hcas,
        "dmabuf": log.dmabuf,
        "net_channels": dict(sorted(vias.items())),
        "env": log.env,
        "errors": log.errors[:5],
        "warnings": log.warnings[:5],
        "completion_errors": [e.model_dump() for e in log.completion_errors[:5]],
        "fatal": [f.model_dump() for f in log.fatal[:5]],
    }


def summarize_perf(text: str) -> dict[str, Any]:
    """all_reduce_perf's result: bus bandwidth at >= 1 GiB, correctness, failures."""
    try:
        perf = parse_nccl_all_reduce_perf(text)
    except ParseError as exc:
        return {"parsed": False, "errors": [str(exc)]}
    large = [r.out_of_place.busbw_gbytes for r in perf.rows if r.size_bytes >= GIB and r.out_of_place.busbw_gbytes]
    wrong = [r.size_bytes for r in perf.rows if (r.out_of_place.wrong or 0) > 0 or (r.in_place.wrong or 0) > 0]
    return {
        "parsed": True,
        "nranks": perf.nranks,
        "nccl_version": perf.nccl_version,
        "rows": len(perf.rows),
        "max_bytes": perf.last().size_bytes if perf.last() else None,
        "busbw_1g": max(large) if large else None,
        "peak_busbw": perf.peak_busbw_gbytes(),
        "avg_busbw": perf.avg_bus_bandwidth_gbytes,
        "correct": perf.out_of_bounds_ok is not False and not wrong,
        "duplicated_header": perf.duplicated_header,
        "errors": perf.errors[:5],
    }


def tail(text: str, lines: int = 15) -> list[str]:
    """The last non-empty lines of an output, for evidence."""
    return [line for line in text.splitlines() if line.strip()][-lines:]
