"""Failures NCCL reports in words: failed RDMA completions, duplicate GPUs and the ncclResult_t of a failed call."""

from __future__ import annotations

import re
from typing import Literal

from wizard.parsers.common import Parsed

# rdma-core libibverbs/verbs.h, enum ibv_wc_status (the order is the ABI: value = index).
IBV_WC_STATUS = (
    "IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR",
    "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR",
    "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR", "IBV_WC_RETRY_EXC_ERR",
    "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR", "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR",
    "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR",
    "IBV_WC_GENERAL_ERR",
)  # fmt: skip
# NCCL src/nccl.h.in ncclResult_t and src/init.cc ncclGetErrorString (the words printed for each code).
NCCL_RESULTS = {
    1: ("ncclUnhandledCudaError", "unhandled cuda error"),
    2: ("ncclSystemError", "unhandled system error"),
    3: ("ncclInternalError", "internal error"),
    4: ("ncclInvalidArgument", "invalid argument"),
    5: ("ncclInvalidUsage", "invalid usage"),
    6: ("ncclRemoteError", "remote process exited or there was a network error"),
}
_BY_TEXT = {text: name for name, text in NCCL_RESULTS.values()}
_NAMES = "|".join(name for name, _ in NCCL_RESULTS.values())

# Three wordings of NCCL's net_ib WARN (old "with error N, opcode N, len N, vendor err N (Send) localGid .. remoteGid
# ..", 2.19+ "with status=N opcode=N len=N vendor err N (Recv) localGid .. remoteGids..", newest
# "with status=NAME(N) opcode=NAME(N) vendor_err=N localGid .. remoteGids.. hca mlx5_0"); plugins print the same.
_COMPLETION = re.compile(
    r"NET/IB\S*\s*:\s*Got completion from peer\s*(?P<peer>[^\s<]*)(?:<(?P<port>\d+)>)?\s+with\s+"
    r"(?:status=(?:(?P<sname>[A-Z_]+)\()?(?P<status>\d+)\)?|error (?P<status_old>\d+)),?\s*"
    r"opcode[= ](?:[A-Z_]+\()?(?P<opcode>\d+)\)?,?\s*(?:len[= ](?P<len>\d+),?\s*)?"
    r"vendor[_ ]err[= ](?P<verr>\d+)(?:\s*\((?P<req>[^)]*)\))?"
    r"(?:\s*localGid\s*(?P<lgid>[^\s]+))?(?:\s*remoteGids?\s*(?P<rgid>[^\s]+))?(?:\s*hca\s+(?P<hca>\S+))?"
)
_DUPLICATE = re.compile(r"Duplicate GPU detected : rank (\d+) and rank (\d+) both on CUDA device (\S+)")
_RESULT_NAME = re.compile(rf"\b({_NAMES})\b")
_RESULT_TEXT = re.compile(
    r"(?:NCCL error in: [^,]*,\s*|Test NCCL failure \S+ '|NCCL Error \d+: )(?P<text>"
    + "|".join(re.escape(text) for text in _BY_TEXT)
    + ")"
)
TRACE = re.compile(r"^\S+\.(?:cc|cu|h|cpp|c):\d+ -> (\d+)")


class NcclCompletionError(Parsed):
    """One failed RDMA work completion NCCL reported (``NET/IB : Got completion from peer ... status=N``)."""

    peer: str | None = None  # the peer's address as NCCL printed it
    peer_port: int | None = None
    status: int
    status_name: str | None = None  # IBV_WC_RETRY_EXC_ERR for 12
    opcode: int | None = None
    length: int | None = None
    vendor_err: int | None = None
    request: str | None = None  # "Send" / "Recv" ... where printed
    local_gid: str | None = None
    remote_gid: str | None = None
    hca: str | None = None  # newest NCCL names the HCA
    host: str | None = None


class NcclFatal(Parsed):
    """A fatal NCCL error: a duplicate GPU at init, or the ncclResult_t a call failed with."""

    kind: Literal["duplicate_gpu", "result"]
    result: str | None = None  # "ncclInvalidUsage", ...
    message: str
    ranks: list[int] = []
    device: str | None = None  # CUDA device bus id as NCCL printed it
    host: str | None = None


class NcclFailures(Parsed):
    """Every failed completion and fatal error found in a text (NCCL log, nccl-tests or PyTorch output)."""

    completion_errors: list[NcclCompletionError] = []
    fatal: list[NcclFatal] = []


def completion_error(message: str, host: str | None = None) -> NcclCompletionError | None:
    """The failed completion a WARN message reports, else None."""
    m = _COMPLETION.search(message)
    if not m:
        return None
    status = int(m["status"] or m["status_old"])
    name = m["sname"] or (IBV_WC_STATUS[status] if status < len(IBV_WC_STATUS) else None)
    return NcclCompletionError(
        peer=m["peer"] or None,
        peer_port=int(m["port"]) if m["port"] else None,
        status=status,
        status_name=name,
        opcode=int(m["opcode"]),
        length=int(m["len"]) if m["len"] else None,
        vendor_err=int(m["verr"]),
        request=m["req"],
        local_gid=m["lgid"],
        remote_gid=m["rgid"],
        hca=m["hca"],
        host=host,
    )


def fatal_errors(message: str, host: str | None = None) -> list[NcclFatal]:
    """Fatal errors named in one message or output line (a WARN text, a trace, a test or PyTorch error line)."""
    out = []
    if m := _DUPLICATE.search(message):
        ranks = [int(m[1]), int(m[2])]
        out.append(
            NcclFatal(
                kind="duplicate_gpu", result="ncclInvalidUsage", message=m[0], ranks=ranks, device=m[3], host=host
            )
        )  # fmt: skip  - init.cc returns ncclInvalidUsage
    result = None
    if m := TRACE.match(message):
        result = NCCL_RESULTS.get(int(m[1]), (None, None))[0]
    elif m := _RESULT_TEXT.search(message):
        result = _BY_TEXT[m["text"]]
    elif m := _RESULT_NAME.match(message.strip()):
        result = m[1]
    if result:
        out.append(NcclFatal(kind="result", result=result, message=message.strip(), host=host))
    return out


def add_fatal(items: list[NcclFatal], new: list[NcclFatal]) -> None:
    """Append ``new`` keeping one entry per result code and per duplicate-GPU message."""
    for item in new:
        key = (item.kind, item.result if item.kind == "result" else item.message)
        if all((f.kind, f.result if f.kind == "result" else f.message) != key for f in items):
            items.append(item)
