"""Named causes of a failed NCCL run: a failed RDMA completion, two ranks on one GPU, an NCCL result code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wizard.parsers.nccl import nccl_failures

RERUN = "re-run: roce-wizard --only nccl"
FABRIC = (
    "check the lossless class end to end: PFC on the RoCE priority and DSCP trust on both hosts' ports "
    "(mlnx_qos -i <port>) and on every switch port between them; look for drops and pauses (ethtool -S <port> | "
    "grep -E 'discard|pause|out_of_buffer'); both GIDs must be RoCE v2 IPv4 addresses of the same rail subnet "
    "(show_gids); reseat or replace a flapping cable (rdma link, ip -s link); run roce-wizard --only roce, then "
    + RERUN
)
# What each ibv_wc_status means for NCCL (rdma-core ibv_poll_cq(3); NCCL troubleshooting "Networking issues").
_STATUS = {
    12: ("RDMA transport retries exhausted", "the peer did not acknowledge: packets or ACKs were lost on the way "
         "(lossy fabric, PFC off, wrong GID, cabling)", FABRIC),
    13: ("RDMA receiver not ready, retries exhausted", "the peer stopped posting receives: its process hung, "
         "crashed or ran out of memory", "read the peer host's log for its first error, then " + RERUN),
    10: ("RDMA remote access error", "the peer refused the memory access: GPU memory was not registered with "
         "the HCA (GPUDirect RDMA)", "run roce-wizard --only gpudirect (nvidia-peermem or DMA-BUF), then " + RERUN),
    4: ("RDMA local protection error", "the HCA could not use the registered buffer: GPUDirect RDMA "
        "registration or IOMMU translation", "run roce-wizard --only gpudirect (nvidia-peermem, IOMMU "
        "passthrough, ACS), then " + RERUN),
}  # fmt: skip
_RESULTS = {
    "ncclSystemError": ("a system call or library call failed (ncclSystemError)",
                        "check that NCCL_SOCKET_IFNAME reaches every peer, libibverbs and the mlx5 provider are "
                        "installed, ulimit -l is unlimited for the job's user and /dev/shm is large enough; then "),
    "ncclRemoteError": ("a remote process exited or the network failed (ncclRemoteError)",
                        "read the other hosts' logs for their first NCCL WARN, check the rails (roce-wizard --only "
                        "roce); then "),
    "ncclUnhandledCudaError": ("a CUDA call failed (ncclUnhandledCudaError)",
                               "check nvidia-smi and dmesg for Xid errors and that the driver supports the CUDA "
                               "release NCCL was built for; then "),
    "ncclInvalidUsage": ("NCCL rejected how it was called (ncclInvalidUsage)",
                         "read the NCCL WARN line above the error (NCCL_DEBUG=WARN); then "),
    "ncclInvalidArgument": ("NCCL rejected an argument (ncclInvalidArgument)",
                            "read the NCCL WARN line above the error (NCCL_DEBUG=WARN); then "),
    "ncclInternalError": ("NCCL hit an internal error (ncclInternalError)",
                          "upgrade libnccl2 and report the log to NVIDIA if it persists; then "),
}  # fmt: skip


@dataclass
class Cause:
    """Why the run failed, in words an operator can act on."""

    name: str
    evidence: str
    fix: str
    specific: bool = True  # False for a bare result code: a known message (ssh, unreachable rail) says more


def find_cause(host: str, log: dict[str, Any], run: dict[str, Any]) -> Cause | None:
    """The first named cause in this host's log, else in the run's error and tail (PyTorch, nccl-tests lines)."""
    text = "\n".join([run.get("error") or "", *(run.get("tail") or [])])
    extra = nccl_failures(text)
    completions = list(log.get("completion_errors") or []) + [e.model_dump() for e in extra.completion_errors]
    fatal = list(log.get("fatal") or []) + [f.model_dump() for f in extra.fatal]
    # The first error that is not a flush: a flushed request (status 5) only follows an earlier failure.
    failed = next((e for e in completions if e["status"] != 5), completions[0] if completions else None)
    if failed:
        return _completion(host, failed)
    duplicate = next((f for f in fatal if f["kind"] == "duplicate_gpu"), None)
    if duplicate:
        return _duplicate(host, duplicate)
    result = next((f for f in fatal if f["result"] in _RESULTS), None)
    if result:
        name, fix = _RESULTS[result["result"]]
        return Cause(name, f"{host}: {name}: {result['message']}", fix + RERUN, specific=False)
    return None


def _completion(host: str, e: dict[str, Any]) -> Cause:
    status, label = e["status"], e.get("status_name") or "unknown status"
    title, meaning, fix = _STATUS.get(
        status,
        ("RDMA work request failed", "see ibv_poll_cq(3) for this status", "check the rails, then " + RERUN),
    )
    if status == 5:
        title, meaning = "RDMA requests flushed", "the queue pair had already failed; the first error is earlier"
        fix = "find the first NCCL WARN on this host and its peer, then " + RERUN
    name = f"{title} (status={status}, {label})"
    where = f"{e.get('hca') or 'NET/IB'} on {e.get('host') or host}"
    peer = f"{e.get('peer') or '?'}" + (f"<{e['peer_port']}>" if e.get("peer_port") else "")
    evidence = f"{host}: {name}: {meaning}; {where} <- peer {peer}, vendor err {e.get('vendor_err')}"
    gids = [g for g in (e.get("local_gid"), e.get("remote_gid")) if g]
    if gids:
        evidence += f", localGid {gids[0]}" + (f", remoteGid {gids[1]}" if len(gids) > 1 else "")
        if any(not g.lower().startswith("::ffff:") for g in gids):
            fix = (
                f"{', '.join(g for g in gids if not g.lower().startswith('::ffff:'))} is not a RoCE v2 IPv4 GID "
                "(::ffff:a.b.c.d): NCCL picked an IPv6 or RoCE v1 GID; give the rails IPv4 addresses or set "
                "NCCL_IB_GID_INDEX to the RoCE v2 IPv4 index from show_gids; " + fix
            )
    return Cause(name, evidence, fix)


def _duplicate(host: str, f: dict[str, Any]) -> Cause:
    a, b = (f.get("ranks") or [None, None])[:2]
    name = "two ranks on one GPU (Duplicate GPU detected, ncclInvalidUsage)"
    evidence = f"{host}: {name}: ranks {a} and {b} both on CUDA device {f.get('device')}"
    fix = (
        "run exactly one process per GPU, each on its own device: mpirun -N <GPUs per host> with all_reduce_perf "
        "-g 1 (do not narrow CUDA_VISIBLE_DEVICES to one GPU for all ranks), or torchrun --nproc-per-node <GPUs "
        "per host> with torch.cuda.set_device(LOCAL_RANK); then " + RERUN
    )
    return Cause(name, evidence, fix)
