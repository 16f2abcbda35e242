"""Parsers for perftest (ib_{write,read,send}_{bw,lat}) and ibv_rc_pingpong outputs."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from wizard.parsers.common import Bandwidth, Parsed, ParseError, bandwidth

_DASHES = re.compile(r"^\s*-{20,}\s*$")
_TITLE = re.compile(r"^\s*([A-Za-z][\w ]*?\b(?:BW|Latency)\b[\w ]*?\bTest)\s*$")
_KV = re.compile(r"([A-Za-z][\w.*\- ]*?)\s*:\s*(\S+)")
_ADDR = re.compile(r"^\s*(local|remote) address:\s*(.*)$")
_ADDR_FIELD = re.compile(r"\b(LID|QPN|PSN|RKey|VAddr|OUT|SRQn|GID)[:\s]\s*([0-9A-Fa-fx:.]+)")
_GID_LINE = re.compile(r"^\s*GID:\s*(\S+)")
_ROW = re.compile(r"^\s*\d+\s+\d+\s+[\d.]+")
_LAT_COLS = re.compile(r"#bytes|#iterations|t_min|t_max|t_typical|t_avg|t_stdev|99\.9% percentile|99% percentile|tps")
_LAT_FIELD = dict(
    zip(
        ("#bytes", "#iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "99% percentile",
         "99.9% percentile", "tps"),
        ("bytes", "iterations", "t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "p99_us",
         "p99_9_us", "tps_average"),
        strict=True,
    )
)  # fmt: skip
_WARNING = re.compile(r"\bwarning\b|Conflicting CPU frequency|Correlation coefficient|mtu is higher than", re.I)
_ERROR = re.compile(
    r"Couldn't|Could not|Unable to|\b[Ff]ailed\b|Completion with error|ERRNO|Segmentation fault|core dumped"
    r"|Did not detect|If device exists|state is Down|\b[Ee]rror\b|Aborted|scnt=\d+|No such device"
    r"|not found|client read|server read|client write|server write|timed out"
)
# Lines only perftest prints; they let a failure output without header still count as perftest.
_PERFTEST_SIGNS = re.compile(
    r"Couldn't (?:allocate MR|create IB resources|get context for the device|set the link layer)"
    r"|Did not detect devices|Unable to find the Infiniband/RoCE device|Completion with error|run_iter_(?:bw|lat)"
    r"|BW peak won't be measured|Waiting for client to connect|Failed to create MR|ib_(?:write|read|send)_(?:bw|lat)"
    r"|Couldn't connect to|Unable to (?:open file descriptor|init the socket|set up socket|create the resources)"
    r"|Failed to exchange data between server and clients|Unable to (?:read|write) (?:to|from) socket/rdma_cm"
)
_PINGPONG_SUMMARY = re.compile(r"(\d+) bytes in ([\d.]+) seconds = ([\d.]+) (Mbit/sec)")
_PINGPONG_ITERS = re.compile(r"(\d+) iters in ([\d.]+) seconds = ([\d.]+) usec/iter")
_PINGPONG_SIGNS = re.compile(
    r"Couldn't (?:connect to|read remote address|get local LID|get port info)|(?:client|server) (?:read|write):"
    r"|No IB devices found|IB device \S+ not found|Failed status .* for wr_id|rc_pingpong"
)
_CUDA_DEVICE = re.compile(r"device name = \[(.+)\]")


class PerftestAddress(Parsed):
    """One ``local address:`` / ``remote address:`` line (plus its GID line) of perftest or rc_pingpong."""

    lid: int | None = None
    qpn: int | None = None
    psn: int | None = None
    rkey: int | None = None
    vaddr: int | None = None
    out_reads: int | None = None
    srqn: int | None = None
    gid: str | None = None  # as printed: perftest uses decimal bytes, rc_pingpong an IPv6 address
    gid_ipv4: str | None = None  # the IPv4 address when the GID is IPv4-mapped (RoCE v2 over IPv4)


class BwRow(Parsed):
    """One result row of a bandwidth test."""

    bytes: int
    iterations: int
    peak: Bandwidth
    average: Bandwidth
    msg_rate_mpps: float | None = None
    sl: int | None = None


class LatRow(Parsed):
    """One result row of a latency test; old perftest prints only min/max/typical, ``-D`` runs avg/tps."""

    bytes: int
    iterations: int
    t_min_us: float | None = None
    t_max_us: float | None = None
    t_typical_us: float | None = None
    t_avg_us: float | None = None
    t_stdev_us: float | None = None
    p99_us: float | None = None
    p99_9_us: float | None = None
    tps_average: float | None = None


class _Perftest(Parsed):
    test: str | None = None  # title line, e.g. "RDMA_Write BW Test"; None when the run died before it
    role: Literal["client", "server"] | None = None
    device: str | None = None
    transport_type: str | None = None
    link_type: str | None = None  # "Ethernet" (RoCE) or "IB"
    gid_index: int | None = None
    mtu: int | None = None
    qps: int | None = None
    connection_type: str | None = None
    tx_depth: int | None = None
    rx_depth: int | None = None
    rdma_cm: bool | None = None
    data_exchange: str | None = None
    header: dict[str, str] = {}  # every "key : value" of the header block, as printed
    local_addresses: list[PerftestAddress] = []
    remote_addresses: list[PerftestAddress] = []
    cuda_device: str | None = None
    errors: list[str] = []
    warnings: list[str] = []


class PerftestBw(_Perftest):
    """A perftest bandwidth run (ib_write_bw, ib_read_bw, ib_send_bw)."""

    results: list[BwRow] = []

    def best(self) -> BwRow | None:
        """The row with the highest average bandwidth."""
        return max(self.results, key=lambda r: r.average.gbps, default=None)

    def last(self) -> BwRow | None:
        """The last row (the largest size of an ``-a`` sweep)."""
        return self.results[-1] if self.results else None

    def row(self, size: int) -> BwRow | None:
        """The row for message size ``size`` bytes."""
        return next((r for r in self.results if r.bytes == size), None)


class PerftestLat(_Perftest):
    """A perftest latency run (ib_write_lat, ib_read_lat, ib_send_lat)."""

    results: list[LatRow] = []

    def last(self) -> LatRow | None:
        """The last row (the largest size of an ``-a`` sweep)."""
        return self.results[-1] if self.results else None

    def row(self, size: int) -> LatRow | None:
        """The row for message size ``size`` bytes."""
        return next((r for r in self.results if r.bytes == size), None)


class RcPingpong(Parsed):
    """An ibv_rc_pingpong run: addresses, the two summary lines, errors."""

    local: PerftestAddress | None = None
    remote: PerftestAddress | None = None
    bytes_transferred: int | None = None
    seconds: float | None = None
    mbit_per_sec: float | None = None
    iterations: int | None = None
    usec_per_iter: float | None = None
    bandwidth: Bandwidth | None = None
    errors: list[str] = []


def _lines(text: str) -> list[str]:
    if not text.strip():
        raise ParseError("empty input")
    return [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]


def _address(body: str) -> PerftestAddress:
    fields = {k: v.rstrip(",") for k, v in _ADDR_FIELD.findall(body.replace(",", " "))}
    names = {
        "LID": "lid",
        "QPN": "qpn",
        "PSN": "psn",
        "RKey": "rkey",
        "VAddr": "vaddr",
        "OUT": "out_reads",
        "SRQn": "srqn",
    }
    # A value cut short by a truncated paste ("LID 0x") is left out rather than guessed.
    values = {names[k]: _hex(v) for k, v in fields.items() if k in names}
    addr = PerftestAddress(**{k: v for k, v in values.items() if v is not None})
    return _with_gid(addr, fields["GID"]) if "GID" in fields else addr


def _hex(value: str) -> int | None:
    try:
        return int(value, 16)
    except ValueError:
        return None


def _with_gid(addr: PerftestAddress, gid: str) -> PerftestAddress:
    ipv4 = None
    parts = gid.split(":")
    if len(parts) == 16 and all(p.isdigit() for p in parts):  # perftest: 16 decimal bytes
        if all(int(p) == 0 for p in parts[:10]) and parts[10:12] == ["255", "255"]:
            ipv4 = ".".join(str(int(p)) for p in parts[12:])
    else:
        try:
            mapped = ipaddress.IPv6Address(gid).ipv4_mapped
            ipv4 = str(mapped) if mapped else None
        except ValueError:
            pass
    return addr.model_copy(update={"gid": gid, "gid_ipv4": ipv4})


def _add_unique(items: list[str], line: str, key: str | None = None) -> None:
    """Append ``line`` unless an equal one (or one with the same ``key``) is already there."""
    keys = [re.sub(r"[\d.]+", "#", i) for i in items] if key else items
    if (key or line) not in keys:
        items.append(line)


def _int(value: str | None) -> int | None:
    m = re.match(r"\d+", value or "")
    return int(m.group()) if m else None


def _scan(text: str, tool: str, kind: Literal["bw", "lat"], verb: str) -> dict:
    """Walk a perftest output once and return the fields shared by both result models."""
    lines = _lines(text)
    f: dict = {"header": {}, "local_addresses": [], "remote_addresses": [], "errors": [], "warnings": []}
    rows: list[list[str]] = []
    columns: list[str] = []
    unit: str | None = None
    table_kind: str | None = None
    in_header = waiting = pingpong = False
    for line in lines:
        if m := _TITLE.match(line):
            f["test"], in_header = " ".join(m.group(1).split()), True
        elif _DASHES.match(line):
            in_header = False
        elif "#bytes" in line:
            table_kind = "bw" if "BW" in line else "lat"
            if table_kind == "bw":
                um = re.search(r"BW (?:peak|average)\[([^\]]+)\]", line)
                unit = um.group(1) if um else None
                columns = ["#sl"] if "#sl" in line else []
            else:
                columns = _LAT_COLS.findall(line)
        elif m := _ADDR.match(line):
            pingpong = pingpong or "," in m.group(2)
            f[f"{m.group(1)}_addresses"].append(_address(m.group(2)))
        elif (m := _GID_LINE.match(line)) and (f["local_addresses"] or f["remote_addresses"]):
            side = "remote_addresses" if f["remote_addresses"] else "local_addresses"
            f[side][-1] = _with_gid(f[side][-1], m.group(1))
        elif table_kind and _ROW.match(line):
            rows.append(line.split())
        elif _WARNING.search(line):
            _add_unique(f["warnings"], line.strip(), key=re.sub(r"[\d.]+", "#", line.strip()))
        elif in_header and _KV.search(line):
            f["header"].update({k.strip(): v for k, v in _KV.findall(line)})
        elif _ERROR.search(line):
            _add_unique(f["errors"], line.strip())
        else:
            waiting = waiting or "Waiting for client" in line
            if m := _CUDA_DEVICE.search(line):
                f["cuda_device"] = m.group(1)
    title = f.get("test")
    if title is None and table_kind is None:
        if pingpong or _PINGPONG_SUMMARY.search(text):
            raise ParseError(f"this is ibv_rc_pingpong output, not {tool}")
        if not f["local_addresses"] and not _PERFTEST_SIGNS.search(text):
            raise ParseError(f"no perftest header, result table or perftest error message: not {tool} output")
    if title and (not title.split()[0].startswith(verb) or (kind == "bw") != (" BW " in f" {title} ")):
        raise ParseError(f"output of a perftest {title!r}, not {tool}")
    if table_kind and table_kind != kind:
        raise ParseError(f"{'bandwidth' if table_kind == 'bw' else 'latency'} result table: not {tool} output")
    h = f["header"]
    f.update(
        device=h.get("Device"),
        transport_type=h.get("Transport type"),
        link_type=h.get("Link type"),
        gid_index=_int(h.get("GID index")),
        mtu=_int(h.get("Mtu")),
        qps=_int(h.get("Number of qps")),
        connection_type=h.get("Connection type"),
        tx_depth=_int(h.get("TX depth")),
        rx_depth=_int(h.get("RX depth")),
        data_exchange=h.get("Data ex. method"),
        rdma_cm={"ON": True, "OFF": False}.get(h.get("rdma_cm QPs", "")),
    )
    if waiting:
        f["role"] = "server"
    elif "TX depth" in h and "RX depth" not in h:
        f["role"] = "client"  # perftest prints TX depth only on the client (or both sides of -b)
    f["rows"], f["columns"], f["unit"] = rows, columns, unit
    return f


def _finish(f: dict, results: list, tool: str) -> dict:
    if not results and not f["errors"]:
        f["errors"].append(f"{tool} printed no result rows (hung, interrupted, or the output is cut off)")
    for key in ("rows", "columns", "unit"):
        f.pop(key)
    return f


def _parse_bw(text: str, tool: str, verb: str) -> PerftestBw:
    f = _scan(text, tool, "bw", verb)
    results = []
    for tokens in f["rows"]:
        sl = int(tokens.pop(1)) if f["columns"] == ["#sl"] and len(tokens) > 4 else None
        if len(tokens) < 4 or f["unit"] is None:
            continue
        rate = float(tokens[4]) if len(tokens) > 4 else None
        results.append(
            BwRow(
                bytes=int(tokens[0]),
                iterations=int(tokens[1]),
                peak=bandwidth(float(tokens[2]), f["unit"]),
                average=bandwidth(float(tokens[3]), f["unit"]),
                msg_rate_mpps=rate,
                sl=sl,
            )
        )
    return PerftestBw(**_finish(f, results, tool), results=results)


def _parse_lat(text: str, tool: str, verb: str) -> PerftestLat:
    f = _scan(text, tool, "lat", verb)
    results = []
    for tokens in f["rows"]:
        values = dict(zip((_LAT_FIELD[c] for c in f["columns"]), tokens, strict=False))
        if "bytes" not in values or "iterations" not in values:
            continue
        results.append(LatRow(**{k: int(v) if k in ("bytes", "iterations") else float(v) for k, v in values.items()}))
    return PerftestLat(**_finish(f, results, tool), results=results)


def parse_ib_write_bw(text: str) -> PerftestBw:
    """Parse ``ib_write_bw`` output (client or server, MB/sec, MiB/sec or Gb/sec)."""
    return _parse_bw(text, "ib_write_bw", "RDMA_Write")


def parse_ib_read_bw(text: str) -> PerftestBw:
    """Parse ``ib_read_bw`` output."""
    return _parse_bw(text, "ib_read_bw", "RDMA_Read")


def parse_ib_send_bw(text: str) -> PerftestBw:
    """Parse ``ib_send_bw`` output."""
    return _parse_bw(text, "ib_send_bw", "Send")


def parse_ib_write_lat(text: str) -> PerftestLat:
    """Parse ``ib_write_lat`` output (old 3-column, current 9-column and ``-D`` layouts)."""
    return _parse_lat(text, "ib_write_lat", "RDMA_Write")


def parse_ib_read_lat(text: str) -> PerftestLat:
    """Parse ``ib_read_lat`` output."""
    return _parse_lat(text, "ib_read_lat", "RDMA_Read")


def parse_ib_send_lat(text: str) -> PerftestLat:
    """Parse ``ib_send_lat`` output."""
    return _parse_lat(text, "ib_send_lat", "Send")


def parse_ibv_rc_pingpong(text: str) -> RcPingpong:
    """Parse ``ibv_rc_pingpong`` output; a run without the summary lines records an error."""
    lines = _lines(text)
    if any(_TITLE.match(line) for line in lines) or any("#bytes" in line for line in lines):
        raise ParseError("this is perftest output, not ibv_rc_pingpong")
    out: dict = {"errors": []}
    for line in lines:
        if m := _ADDR.match(line):
            out.setdefault(m.group(1), _address(m.group(2)))
        elif m := _PINGPONG_SUMMARY.search(line):
            out.update(
                bytes_transferred=int(m.group(1)),
                seconds=float(m.group(2)),
                mbit_per_sec=float(m.group(3)),
                bandwidth=bandwidth(float(m.group(3)), m.group(4)),
            )
        elif m := _PINGPONG_ITERS.search(line):
            out.update(iterations=int(m.group(1)), usec_per_iter=float(m.group(3)))
        elif _ERROR.search(line):
            _add_unique(out["errors"], line.strip())
    if "local" not in out and "bytes_transferred" not in out and not _PINGPONG_SIGNS.search(text):
        raise ParseError("no 'local address:', summary line or rc_pingpong error: not ibv_rc_pingpong output")
    if "bytes_transferred" not in out and not out["errors"]:
        out["errors"].append("no summary line: the run did not finish (hung, interrupted, or the output is cut off)")
    return RcPingpong(**out)
