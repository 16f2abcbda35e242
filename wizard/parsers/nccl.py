"""Parsers for nccl-tests results (all_reduce_perf and friends) and NCCL_DEBUG=INFO logs."""

from __future__ import annotations

import re
from typing import Literal

from wizard.parsers.common import Bandwidth, Parsed, ParseError, bandwidth
from wizard.parsers.nccl_failures import (
    TRACE,
    NcclCompletionError,
    NcclFailures,
    NcclFatal,
    add_fatal,
    completion_error,
    fatal_errors,
)

# "#  Rank  0 Group  0 Pid  56543 on     thanos device  0 [0x07] NVIDIA A100-SXM4-80GB"; old builds lack Group.
_RANK = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]+)\]\s+(.+?)\s*$"
)
_PARAMS = re.compile(r"^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)")
_ITERS = re.compile(r"warmup iters:\s*(\d+)\s+iters:\s*(\d+)")
_NUM = r"(?:[\d.]+(?:e[+-]?\d+)?|N/A)"
_ROW = re.compile(rf"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(?:(-?\d+)\s+)?((?:{_NUM}\s+){{7}}{_NUM})\s*$")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\w+)?")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([\d.]+)")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)(?:\+cuda([\d.]+))?")
_TESTS_VERSION = re.compile(r"^#\s*nccl-tests version (\S+)")
_COLLECTIVE = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_FAILURE = re.compile(
    r"(?:Cuda|NCCL|Test|CUDA) failure|Test (?:NCCL|CUDA) failure|NCCL WARN|mpirun detected that one or more"
    r"|MPI_ABORT was invoked|exited on signal|unhandled (?:system|cuda) error|FAILED|Segmentation fault"
)
# "host:pid:tid [gpu] NCCL INFO message"; WARN adds "file:line" and, in newer NCCL, "(function)". Anything may come
# first: a launcher tag ("[1,0]<stdout>:", "[default0]:", "[0] ", "(pid=12) "), or the timestamp NCCL >= 2.26 prints
# (NCCL_DEBUG_TIMESTAMP_FORMAT, default "[%F %T] ", on the levels of NCCL_DEBUG_TIMESTAMP_LEVELS, default WARN; see
# NCCL env.rst and src/debug.cc). The host starts the line or follows a blank, "]", ">", ":" or ")".
_LOG = re.compile(
    r"^(?P<prefix>.*?)(?<![^\s\]>:)])(?P<host>[^\s:\[\]()<>]+):(?P<pid>\d+):(?P<tid>\d+)\s+\[(?P<dev>[^\]]*)\]\s+"
    r"(?:(?P<src>\S+:\d+)\s+(?:\((?P<func>[^)]*)\)\s+)?)?NCCL (?P<lvl>INFO|WARN)\s?(?P<msg>.*)$"
)
_CLOCK = re.compile(r"\d{1,2}:\d\d:\d\d")
_IB_USING = re.compile(r"NET/IB\s*:\s*Using\s+(.*?)(?:\s*;\s*OOB\s+(\S+))?\s*$")
_IB_DEV = re.compile(r"\[(\d+)\]([\w+.\-]+):(\d+)/([\w/]+)")
_GDR_ON = re.compile(r"GPU Direct RDMA (?:\(([^)]+)\) )?[Ee]nabled for HCA (\d+) '([^'\s]+)")
_GDR_OFF = re.compile(r"GPU Direct RDMA Disabled for HCA (\d+) '([^'\s]+)")
_WARN_IS_ERROR = re.compile(r"error|fail|unable|timeout|timed out|abort|cannot|could not|invalid", re.I)
_CHANNEL = re.compile(
    r"(?:Channel|Ring) (\d+)(?:/\d+)?\s*:\s*(\d+)(?:\[\w+\])?\s*->\s*(\d+)(?:\[\w+\])?\s*(?:\[(\w+)\]\s*)?via (.+?)\s*$"
)
_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+) set (by environment )?to (.*?)\.?\s*$")


class NcclRankDevice(Parsed):
    """One ``# Rank N ... device D [bus] NAME`` header line."""

    rank: int
    pid: int
    host: str
    device: int
    bus_id: str  # as printed: "0x07" (old), "0000:06:00" (newer nccl-tests)
    name: str


class NcclTiming(Parsed):
    """Time and bandwidths of one placement (out-of-place or in-place); GB/s are 1e9 bytes/s."""

    time_us: float | None
    algbw_gbytes: float | None
    busbw_gbytes: float | None
    busbw: Bandwidth | None  # busbw converted to Gb/s
    wrong: int | None = None  # "#wrong" count; None when "N/A" (-c 0) or the old "error" column
    error: float | None = None  # old nccl-tests "error" column (max relative error)


class NcclPerfRow(Parsed):
    """One result row."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int | None  # absent in old nccl-tests
    out_of_place: NcclTiming
    in_place: NcclTiming


class NcclPerf(Parsed):
    """An nccl-tests run (all_reduce_perf and the other *_perf binaries share the format)."""

    tests_version: str | None = None
    nccl_version: str | None = None
    collective: str | None = None
    n_threads: int | None = None
    n_gpus: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    warmup_iters: int | None = None
    iters: int | None = None
    nranks: int | None = None  # distinct rank numbers in the "Using devices" list
    devices: list[NcclRankDevice] = []
    duplicated_header: bool = False  # header printed more than once: ranks ran as independent jobs
    rows: list[NcclPerfRow] = []
    out_of_bounds: int | None = None
    out_of_bounds_ok: bool | None = None
    avg_bus_bandwidth_gbytes: float | None = None
    avg_bus_bandwidth: Bandwidth | None = None
    errors: list[str] = []
    warnings: list[str] = []

    def peak_busbw_gbytes(self) -> float | None:
        """Highest out-of-place bus bandwidth of any row, in GB/s."""
        values = [r.out_of_place.busbw_gbytes for r in self.rows if r.out_of_place.busbw_gbytes is not None]
        return max(values, default=None)

    def last(self) -> NcclPerfRow | None:
        """The last (largest) row."""
        return self.rows[-1] if self.rows else None


class NcclIbPort(Parsed):
    """One ``[i]dev:port/LINK`` entry of ``NET/IB : Using``."""

    index: int
    device: str  # merged virtual devices keep their name, e.g. "mlx5_0+mlx5_1"
    port: int
    link_layer: str  # "RoCE" or "IB"
    tags: list[str] = []  # e.g. ["SHARP"]


class NcclChannel(Parsed):
    """One ``Channel NN/M : src[dev] -> dst[dev] [send] via X`` connection line."""

    channel: int
    src: int
    dst: int
    direction: str | None = None  # "send" / "receive" where printed
    via: str  # e.g. "NET/IB/0/GDRDMA", "P2P/IPC", "NET/Socket/0"


class NcclDebug(Parsed):
    """What an NCCL_DEBUG=INFO log says about the network NCCL chose."""

    version: str | None = None
    cuda_version: str | None = None
    hosts: list[str] = []
    network: str | None = None  # "Using network X" as printed: IB, IBext, Socket, ...
    net_plugin: str | None = None  # loaded external net plugin, None when internal
    net_plugin_path: str | None = None
    collnet_plugin: str | None = None  # e.g. "SHARP"
    ib_devices: list[str] = []
    ib_ports: list[NcclIbPort] = []
    merged_devices: list[str] = []  # "Made virtual device ... name=mlx5_0+mlx5_1 ... ndevs=2" (NIC fusion)
    ib_no_device: bool = False  # "NET/IB : No device found."
    relaxed_ordering: bool = False  # "[RO]" on the NET/IB line
    oob_interfaces: list[str] = []  # "if:ip" NCCL bootstraps over
    socket_interfaces: list[str] = []  # "if:ip" from "NET/Socket : Using"
    transport: Literal["IB", "Socket"] | None = None
    socket_fallback: bool = False  # inter-node traffic goes over TCP sockets
    gdr_enabled: bool = False  # any "GPU Direct RDMA Enabled" line or channel "via .../GDRDMA"
    gdr_enabled_hcas: list[str] = []
    gdr_disabled: bool = False
    gdr_disabled_hcas: list[str] = []
    dmabuf: bool = False
    channels: list[NcclChannel] = []
    warnings: list[str] = []  # NCCL WARN messages that do not report a failure
    errors: list[str] = []  # NCCL WARN failures, "file.cc:N -> code" error traces, test failures
    env: dict[str, str] = {}  # "NCCL_X set by environment to Y" (and "NCCL_X set to Y")
    timestamped: bool = False  # lines carried a time prefix (NCCL >= 2.26, NCCL_DEBUG_TIMESTAMP_*)
    completion_errors: list[NcclCompletionError] = []  # failed RDMA work completions (NET/IB status=N)
    fatal: list[NcclFatal] = []  # duplicate GPU at init, result codes of failed calls (from "-> N" traces)


def _text_lines(text: str) -> list[str]:
    if not text.strip():
        raise ParseError("empty input")
    return [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


def _float(value: str) -> float | None:
    return None if value == "N/A" else float(value)


def _timing(values: list[str], old_format: bool) -> NcclTiming:
    time_us, algbw, busbw, last = (_float(v) for v in values)
    check = {"error": last} if old_format else {"wrong": None if last is None else int(last)}
    return NcclTiming(
        time_us=time_us,
        algbw_gbytes=algbw,
        busbw_gbytes=busbw,
        busbw=None if busbw is None else bandwidth(busbw, "GB/s"),
        **check,
    )


def parse_nccl_all_reduce_perf(text: str) -> NcclPerf:
    """Parse nccl-tests ``all_reduce_perf`` output (MPI or not, any header generation, failures)."""
    lines = _text_lines(text)
    out: dict = {"devices": [], "rows": [], "errors": [], "warnings": []}
    headers = 0
    old_format = False
    for line in lines:
        if m := _PARAMS.match(line.strip()):
            headers += 1
            out.update(n_threads=int(m[1]), n_gpus=int(m[2]), min_bytes=int(m[3]), max_bytes=int(m[4]))
            if it := _ITERS.search(line):
                out.update(warmup_iters=int(it[1]), iters=int(it[2]))
        elif m := _RANK.match(line):
            out["devices"].append(
                NcclRankDevice(rank=int(m[1]), pid=int(m[2]), host=m[3], device=int(m[4]), bus_id=m[5], name=m[6])
            )
        elif line.lstrip().startswith("#") and "size" in line and "count" in line:
            old_format = "error" in line.split() and "#wrong" not in line
        elif m := _ROW.match(line):
            values = m[6].split()
            out["rows"].append(
                NcclPerfRow(
                    size_bytes=int(m[1]),
                    count=int(m[2]),
                    dtype=m[3],
                    redop=m[4],
                    root=None if m[5] is None else int(m[5]),
                    out_of_place=_timing(values[:4], old_format),
                    in_place=_timing(values[4:], old_format),
                )
            )
        elif m := _OOB.match(line):
            out.update(out_of_bounds=int(m[1]), out_of_bounds_ok=m[2] == "OK")
            if m[2] != "OK":
                out["errors"].append(line.lstrip("# ").strip())
        elif m := _AVG.match(line):
            out.update(avg_bus_bandwidth_gbytes=float(m[1]), avg_bus_bandwidth=bandwidth(float(m[1]), "GB/s"))
        elif m := _TESTS_VERSION.match(line):
            out["tests_version"] = m[1]
            if lib := re.search(r"nccl-library=(\d+)", line):
                code = int(lib[1])  # NCCL_VERSION_CODE: major*10000 + minor*100 + patch
                out.setdefault("nccl_version", f"{code // 10000}.{code % 10000 // 100}.{code % 100}")
        elif m := _COLLECTIVE.match(line):
            out["collective"] = m[1]
        elif (m := _VERSION.search(line)) and "NCCL WARN" not in line:
            out["nccl_version"] = m[1]
        elif _FAILURE.search(line):
            out["errors" if "WARN" not in line else "warnings"].append(line.strip())
    if headers == 0 and not out["devices"] and not out["rows"]:
        raise ParseError("no nccl-tests header (nThread ... nGpus ...), device list or result rows")
    ranks = {d.rank for d in out["devices"]}
    out["nranks"] = len(ranks) if ranks else None
    out["duplicated_header"] = headers > 1 or len(ranks) < len(out["devices"])
    if out["duplicated_header"]:
        out["warnings"].append(
            "header printed more than once / duplicate rank ids: each process ran as its "
            "own job (nccl-tests built without MPI=1, or launched without mpirun)"
        )
    if not out["rows"] and not out["errors"]:
        out["errors"].append("no result rows (run hung, was interrupted, or the output is cut off)")
    return NcclPerf(**out)


def log_host(line: str) -> str | None:
    """The host name an NCCL_DEBUG log line was printed on (behind any launcher or time prefix), else None."""
    match = _LOG.match(line.strip())
    return match["host"] if match else None


def nccl_failures(text: str) -> NcclFailures:
    """Failed completions and fatal errors in any output: NCCL log lines, nccl-tests or PyTorch error lines."""
    out = NcclFailures()
    for raw in text.replace("\r\n", "\n").split("\n"):
        log = _LOG.match(raw.strip())
        message, host = (log["msg"].strip(), log["host"]) if log else (raw.strip(), None)
        if error := completion_error(message, host):
            out.completion_errors.append(error)
        add_fatal(out.fatal, fatal_errors(message, host))
    return out


def _add(items: list[str], value: str) -> None:
    if value not in items:
        items.append(value)


def parse_nccl_debug(text: str) -> NcclDebug:
    """Parse an ``NCCL_DEBUG=INFO`` log (any mix of ranks and hosts) into the network facts it shows."""
    lines = _text_lines(text)
    lists = ("hosts", "ib_devices", "ib_ports", "merged_devices", "oob_interfaces", "socket_interfaces",
             "gdr_enabled_hcas", "gdr_disabled_hcas", "channels", "warnings", "errors", "completion_errors",
             "fatal")  # fmt: skip
    flags = ("ib_no_device", "relaxed_ordering", "gdr_enabled", "dmabuf", "timestamped")
    out: dict = {"env": {}} | {k: [] for k in lists} | dict.fromkeys(flags, False)
    seen = 0
    for line in lines:
        if (m := _VERSION.search(line)) and "NCCL version" in line:
            out.update(version=m[1], cuda_version=m[2])
        if not (log := _LOG.match(line.strip())):
            if _FAILURE.search(line) and "NCCL WARN" not in line:
                _add(out["errors"], line.strip())
            continue
        seen += 1
        _add(out["hosts"], log["host"])
        out["timestamped"] = out["timestamped"] or bool(_CLOCK.search(log["prefix"]))
        msg = log["msg"].strip()
        fatal = fatal_errors(msg, log["host"])
        add_fatal(out["fatal"], fatal)
        if log["lvl"] == "WARN":
            failed = completion_error(msg, log["host"])
            if failed:
                out["completion_errors"].append(failed)
            _add(out["errors" if failed or fatal or _WARN_IS_ERROR.search(msg) else "warnings"], msg)
        elif TRACE.match(msg):
            _add(out["errors"], msg)
        elif m := _IB_USING.search(msg):
            for idx, dev, port, link in _IB_DEV.findall(m[1]):
                if dev not in out["ib_devices"]:
                    out["ib_devices"].append(dev)
                    layer, *tags = link.split("/")
                    out["ib_ports"].append(
                        NcclIbPort(index=int(idx), device=dev, port=int(port), link_layer=layer, tags=tags)
                    )
            out["relaxed_ordering"] = out["relaxed_ordering"] or "[RO]" in m[1]
            if m[2]:
                _add(out["oob_interfaces"], m[2].removesuffix("<0>"))
        elif m := re.search(r"Made virtual device \[\d+\] name=(\S+) .*ndevs=(\d+)", msg):
            if int(m[2]) > 1:
                _add(out["merged_devices"], m[1])
        elif "NET/IB" in msg and "No device found" in msg:
            out["ib_no_device"] = True
        elif m := re.search(r"NET/Socket\s*:\s*Using\s+(.*)$", msg):
            for iface in re.findall(r"\[\d+\](\S+?)(?:<\d+>)?(?=\s|$)", m[1]):
                _add(out["socket_interfaces"], iface)
        elif m := re.search(r"Bootstrap\s*:\s*Using\s+(\S+?)(?:<\d+>)?$", msg):
            _add(out["oob_interfaces"], m[1])
        elif m := re.match(r"Using network (\S+)", msg):
            out["network"] = m[1]
        elif m := re.search(r"Loaded (net|collnet) plugin (.+?)(?: \(v\d+\))?$", msg):
            out["net_plugin" if m[1] == "net" else "collnet_plugin"] = m[2]
        elif m := re.match(r"Plugin Path\s*:\s*(\S+)", msg):
            out["net_plugin_path"] = m[1]
        elif m := _GDR_ON.search(msg):
            out["dmabuf"] = out["dmabuf"] or m[1] == "DMABUF"
            _add(out["gdr_enabled_hcas"], m[3])
        elif m := _GDR_OFF.search(msg):
            out["gdr_disabled"] = True
            _add(out["gdr_disabled_hcas"], m[2])
        elif "GPU Direct RDMA Enabled for GPU" in msg:
            out["gdr_enabled"] = True
        elif "DMA-BUF is available" in msg:
            out["dmabuf"] = True
        elif m := _CHANNEL.search(msg):
            out["channels"].append(
                NcclChannel(channel=int(m[1]), src=int(m[2]), dst=int(m[3]), direction=m[4], via=m[5])
            )
        elif m := _ENV.search(msg):
            if m[2] or m[1] not in out["env"]:
                out["env"][m[1]] = m[3]
    if not seen:
        raise ParseError("no 'NCCL INFO' / 'NCCL WARN' log lines: not an NCCL_DEBUG log")
    out["transport"] = _transport(out)
    out["socket_fallback"] = out["transport"] == "Socket"
    out["gdr_enabled"] = (
        out["gdr_enabled"] or bool(out["gdr_enabled_hcas"]) or any("GDRDMA" in c.via for c in out["channels"])
    )
    return NcclDebug(**out)


def _transport(out: dict) -> Literal["IB", "Socket"] | None:
    """Which network carries inter-node data: channel lines, then "Using network", then the NET/ lines."""
    vias = [c.via for c in out["channels"] if c.via.startswith("NET/")]
    if vias:
        return "Socket" if all(v.startswith("NET/Socket") for v in vias) else "IB"
    network = out.get("network")
    if network:
        return "Socket" if network == "Socket" else "IB" if network.startswith("IB") else None
    if out["ib_ports"]:
        return "IB"  # NCCL < 2.12 prints no "Using network" line; NET/IB initialised means IB is used
    if out["ib_no_device"] and out["socket_interfaces"]:
        return "Socket"
    return None
