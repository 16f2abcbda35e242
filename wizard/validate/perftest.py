"""perftest between two hosts over one rail: real argv for both sides, server first, client with retries, parsing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from wizard.executors.base import CommandResult, Executor, ExecutorError
from wizard.parsers import ParseError, parse
from wizard.parsers.perftest import PerftestBw, PerftestLat
from wizard.validate.model import RailEnd

BASE_PORT = 18515  # perftest's default; every concurrent pair gets its own port above it
SERVER_GRACE_S = 30  # `timeout` ends a server whose client never came (real perftest waits forever)
SWEEP_ALLOWANCE_S = 120  # extra time for an -a message-size sweep (see time_limit)
TIMED_OUT = 124  # exit status of coreutils' timeout when it had to stop the command
START_DELAY_S = 0.5  # the server must listen before the client connects


@dataclass
class Spec:
    """One perftest run: tool, both ends, TCP port, traffic class and how long/which sizes."""

    tool: str
    server: RailEnd
    client: RailEnd
    port: int
    tclass: int
    sweep: bool = False
    duration_s: float | None = None
    size: int | None = None
    line_buffered: bool = False  # the client host has coreutils' stdbuf: rows arrive as printed, not in 4 KiB blocks


@dataclass
class Outcome:
    spec: Spec
    client: CommandResult | None = None
    server: CommandResult | None = None
    parsed: PerftestBw | PerftestLat | None = None
    errors: list[str] = field(default_factory=list)


def side_argv(spec: Spec, end: RailEnd) -> list[str]:
    """Options shared by both sides (perftest requires the same ones on server and client)."""
    argv = [spec.tool, "-d", end.device]
    if end.gid_index is not None:
        argv += ["-x", str(end.gid_index)]
    argv += ["-p", str(spec.port), "-F"]
    if end.ib:
        # InfiniBand: the path goes by LID; the traffic class only matters in a GRH (routed IB), and the lane is
        # chosen by the service level (perftest -S/--sl) through the SM's SL-to-VL table.
        argv += [f"--sl={end.ib_sl}"] if end.ib_sl is not None else []
    else:
        argv.append(f"--tclass={spec.tclass}")
    if spec.tool.endswith("_bw"):
        argv.append("--report_gbits")
    if spec.sweep:
        argv.append("-a")
    if spec.duration_s is not None:
        argv += ["-D", f"{spec.duration_s:g}"]
    if spec.size is not None:
        argv += ["-s", str(spec.size)]
    return argv


def time_limit(spec: Spec) -> int:
    """Seconds either side may run: a stalled RDMA path makes perftest wait forever, on both sides."""
    # A -a sweep moves about 2 x 8 MiB x 5000 iterations = 80 GB: ~26 s at 25 Gb/s, ~65 s at 10 Gb/s.
    return SERVER_GRACE_S + int(spec.duration_s or 0) + (SWEEP_ALLOWANCE_S if spec.sweep else 0)


def server_argv(spec: Spec) -> list[str]:
    return ["timeout", str(time_limit(spec)), *side_argv(spec, spec.server)]


def client_argv(spec: Spec) -> list[str]:
    # Without a terminal perftest's stdout is block-buffered: stdbuf -oL makes each result row arrive live.
    prefix = ["stdbuf", "-oL"] if spec.line_buffered else []
    return ["timeout", str(time_limit(spec)), *prefix, *side_argv(spec, spec.client), spec.server.ipv4 or "?"]


def _parse(tool: str, text: str) -> PerftestBw | PerftestLat | None:
    try:
        return parse(tool, text)  # type: ignore[return-value]
    except ParseError:
        return None


async def run_pair(
    servers: Executor,
    clients: Executor,
    spec: Spec,
    on_row: Callable[[int, float], None] | None = None,
    leftovers: list[asyncio.Task] | None = None,
) -> Outcome:
    """Start the server, then the client (retrying while the server comes up); ``on_row`` gets each result row."""
    out = Outcome(spec)
    if spec.server.ipv4 is None:
        out.errors.append(f"{spec.server.host} {spec.server.netdev} has no IPv4 address to connect to")
        return out
    seen: list[str] = []

    def line(stream: str, text: str) -> None:
        if stream != "stdout":
            return
        seen.append(text)
        if on_row and text[:1] == " " and text.split()[:1] and text.split()[0].isdigit():
            parsed = _parse(spec.tool, "\n".join(seen))
            last = parsed.results[-1] if parsed and parsed.results else None
            if isinstance(parsed, PerftestBw) and last is not None:
                on_row(last.bytes, last.average.gbps)

    server = asyncio.ensure_future(servers.run(server_argv(spec), timeout_s=SERVER_GRACE_S + 600))
    try:
        await asyncio.sleep(START_DELAY_S)
        for _attempt in range(3):
            seen.clear()
            out.client = await clients.run(client_argv(spec), on_line=line, timeout_s=SERVER_GRACE_S + 600)
            text = out.client.stdout + "\n" + out.client.stderr
            if out.client.ok or "Couldn't connect" not in text or server.done():
                break
            await asyncio.sleep(START_DELAY_S)
    except ExecutorError as exc:
        out.errors.append(str(exc))
    if out.client is not None and out.client.ok:
        try:
            out.server = await asyncio.wait_for(server, SERVER_GRACE_S)
        except (TimeoutError, ExecutorError) as exc:
            out.errors.append(f"{spec.server.host}: server did not finish: {exc}")
    elif server.done() and not server.cancelled() and server.exception() is None:
        out.server = server.result()
    elif leftovers is not None:
        leftovers.append(server)  # `timeout` ends it; the run closes the connection at the end
    if out.client is not None and out.client.exit_status == TIMED_OUT:
        out.errors.append(
            f"{spec.client.host}: {spec.tool} to {spec.server.host} over {spec.client.netdev} did not finish within "
            f"{time_limit(spec)}s (the RDMA path stalls: check both ports' counters and the peer)"
        )
    if out.client is not None:
        out.parsed = _parse(spec.tool, out.client.stdout + "\n" + out.client.stderr)
        if out.parsed is not None:
            out.errors += out.parsed.errors
        elif not out.client.ok:
            out.errors.append(out.client.first_error_line())
    if out.server is not None and not out.server.ok:
        server_parsed = _parse(spec.tool, out.server.stdout + "\n" + out.server.stderr)
        out.errors += [f"server: {e}" for e in (server_parsed.errors if server_parsed else [])]
    return out


def measured_gbps(parsed: PerftestBw, duration_s: float | None) -> tuple[float, str | None]:
    """The last row's average Gb/s, and a note when it had to be worked out instead of read.

    perftest turns cycles into seconds with the CPU frequency it estimates at start. Where that estimate fails it
    warns "Correlation coefficient r^2: ... < 0.9" and a duration run (-D) can print 0.000000 Gb/s although it moved
    data (seen on VMs whose TSC is unstable; perftest's -F only silences the check). Then the bytes moved over the
    run's duration is the honest figure (a little low: the duration includes the warm-up)."""
    row = parsed.results[-1]
    clock_failed = any("Correlation coefficient" in w for w in parsed.warnings)
    if row.average.gbps > 0 or not clock_failed or not duration_s or row.iterations <= 0:
        return row.average.gbps, None
    gbps = row.bytes * row.iterations * 8 / duration_s / 1e9
    return gbps, (
        f"perftest printed 0 Gb/s with an unreliable CPU clock estimate (r^2 warning); {row.iterations} x "
        f"{row.bytes} B in {duration_s:g} s is {gbps:.3f} Gb/s"
    )
