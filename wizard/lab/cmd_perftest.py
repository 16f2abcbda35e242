"""Simulated perftest (ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat): a server and a client
meet over the lab's fabric, the client's rate follows both ports' state, and the ports' ethtool counters move."""

from __future__ import annotations

import asyncio
import getopt
import ipaddress
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wizard.lab import congestion, perftest_rtr, rdma, reach
from wizard.lab import perftest_sim as sim
from wizard.lab.commands import command
from wizard.lab.perftest_counters import count
from wizard.lab.streams import CommandFailed, Ctx

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

SHORT = "d:x:p:D:as:n:q:Fi:RbhT:I:m:S:"
LONG = [
    "ib-dev=", "gid-index=", "port=", "duration=", "all", "size=", "iters=", "qp=", "CPU-freq", "ib-port=",
    "report_gbits", "tclass=", "rdma_cm", "bidirectional", "help", "tos=", "inline_size=", "mtu=", "sl=",
]  # fmt: skip
DEFAULT_PORT = 18515
SERVER_WAIT_S = 300.0
ROW_SECONDS = 0.12  # a sweep prints one row about every 0.12 s (5000 iterations per size)
# perftest's own messages (perftest_parameters.c, perftest_resources.c, perftest_communication.c)
NO_DEVICES = (
    " Did not detect devices \n If device exists, check if driver is up\n Unable to find the Infiniband/RoCE device"
)
PORT_DOWN = " Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for the device"
BAD_FLAG = "\n Invalid Command or flag.\n Please check command line and run again."
NO_SOCKET = "Couldn't connect to {ip}:{port}\n Unable to open file descriptor for socket connection"
WAITING = "\n************************************\n* Waiting for client to connect... *\n" + "*" * 36
V4_MAPPED = "0000:0000:0000:0000:0000:ffff"


@dataclass
class Opts:
    tool: str
    device: str | None = None
    gid_index: int | None = None
    port: int = DEFAULT_PORT
    duration: float | None = None
    sweep: bool = False
    size: int | None = None
    iters: int | None = None
    qps: int = 1
    gbits: bool = False
    tclass: int = 0
    server_ip: str | None = None


@dataclass
class Listener:
    """A waiting server: the client hands it the lines the server prints once the test is over."""

    opts: Opts
    end: sim.End
    done: asyncio.Future[list[str]] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


def _registry(host: SimHost) -> dict[tuple[str, int], Listener]:
    owner = host.lab if host.lab is not None else host
    return owner.__dict__.setdefault("_perftest_listeners", {})


def _active(host: SimHost) -> Counter[str]:
    """Running perftest clients per host (several at once: the rails share PCIe and buffers)."""
    owner = host.lab if host.lab is not None else host
    return owner.__dict__.setdefault("_perftest_active", Counter())


def parse_opts(ctx: Ctx) -> Opts:
    try:
        pairs, rest = getopt.gnu_getopt(ctx.args, SHORT, LONG)
    except getopt.GetoptError as exc:
        raise CommandFailed(f"{ctx.name}: {exc.msg}{BAD_FLAG}") from None
    o = Opts(ctx.name)
    for k, v in pairs:
        if k in ("-d", "--ib-dev"):
            o.device = v
        elif k in ("-x", "--gid-index"):
            o.gid_index = int(v)
        elif k in ("-p", "--port"):
            o.port = int(v)
        elif k in ("-D", "--duration"):
            o.duration = float(v)
        elif k in ("-a", "--all"):
            o.sweep = True
        elif k in ("-s", "--size"):
            o.size = int(v)
        elif k in ("-n", "--iters"):
            o.iters = int(v)
        elif k in ("-q", "--qp"):
            o.qps = int(v)
        elif k == "--report_gbits":
            o.gbits = True
        elif k == "--tclass":
            o.tclass = int(v)
        elif k in ("-S", "--sl"):  # the service level of the QPs (perftest_parameters.c: 0-15)
            if not 0 <= int(v) <= 15:
                raise CommandFailed(f" SL must be between 0 and 15{BAD_FLAG}")
        elif k in ("-R", "--rdma_cm"):
            raise CommandFailed(f"{ctx.name}: rdma_cm (-R) is not simulated by the roce-wizard lab", 1)
    o.server_ip = rest[0] if rest else None
    return o


def _open_device(ctx: Ctx, o: Opts) -> sim.End:
    """perftest's device/port checks, with its real error messages."""
    host = ctx.host
    devices = rdma.devices(host) if "ib_uverbs" in host.modules or "mlx5_ib" in host.modules else []
    if not devices:
        raise CommandFailed(NO_DEVICES)
    dev = rdma.find(host, o.device) if o.device else devices[0]
    if dev is None:
        raise CommandFailed(f" IB device {o.device} not found\n Unable to find the Infiniband/RoCE device")
    if not rdma.port_active(host, dev):
        raise CommandFailed(
            " Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for the device"
        )
    if rdma.is_ib(host, dev) and o.gid_index is None:
        # perftest on an IB port uses no GID unless -x asks for one ("Default : IB - no gid"): it connects by LID
        return sim.End(host, dev, None, rdma.gid_table(host, dev).slots[0].gid, None)  # type: ignore[union-attr]
    entries = dict(rdma.gid_table(host, dev).entries())
    index = o.gid_index
    if index is None:  # perftest picks the first RoCE v2 IPv4 GID when -x is not given
        index = next(
            (
                i
                for i, e in entries.items()
                if e.type == "ROCE_V2" and e.gid.startswith("0000:0000:0000:0000:0000:ffff")
            ),
            0,
        )
    entry = entries.get(index)
    if entry is None:
        raise CommandFailed(f" Failed to query GID index {index} of {dev.name}\n Couldn't create IB resources")
    ipv4 = None
    try:
        mapped = ipaddress.IPv6Address(entry.gid).ipv4_mapped
        ipv4 = str(mapped) if mapped else None
    except ValueError:
        pass
    return sim.End(host, dev, index, entry.gid, ipv4)


def _owner_of(origin: SimHost, ip: str, answered: str = "") -> SimHost | None:
    """The running host that owns ``ip``: the one that answered the connection where the fabric traced it (a
    search of every host's addresses made each of a 1,024-host round's 4,096 connections cost a millisecond)."""
    lab = origin.lab
    if answered:
        return lab.hosts.get(answered) if lab is not None else origin
    hosts = list(lab.hosts.values()) if lab is not None else [origin]
    return next((h for h in hosts if h.state == "running" and any(d.has_addr(ip) for d in h.netdevs.values())), None)


USAGE = """Usage:
  {tool}            start a server and wait for connection
  {tool} <host>     connect to server at <host>

Options:
  -a, --all  Run sizes from 2 till 2^23
  -d, --ib-dev=<dev>  Use IB device <dev> (default first device found)
  -D, --duration  Run test for a customized period of seconds.
  -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand module is loaded, and cpu-freq is not on max.
  -i, --ib-port=<port>  Use port <port> of IB device (default 1)
  -n, --iters=<iters>  Number of exchanges (at least 5, default 5000)
  -p, --port=<port>  Listen on/connect to port <port> (default 18515)
  -q, --qp=<num of qp's>  Num of qp's(default 1)
  -R, --rdma_cm  Connect QPs with rdma_cm and run test on those QPs
  -s, --size=<size>  Size of message to exchange (default 65536)
  -x, --gid-index=<index>  Test uses GID with GID index (Default : IB - no gid . ETH - 0)
      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MB/sec)
      --tclass=<value>  Set the Traffic Class in GRH (if GRH is in use)
"""


@command("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_send_lat")
async def perftest(ctx: Ctx) -> int:
    if "-h" in ctx.args or "--help" in ctx.args:
        # The lab's perftest is built without CUDA: its usage lists no --use_cuda (perftest exits 1 after usage).
        ctx.print(USAGE.format(tool=ctx.name).rstrip("\n"))
        return 1
    o = parse_opts(ctx)
    ctx.print(sim.SIMULATED)
    end = _open_device(ctx, o)
    if o.server_ip is None:
        return await _server(ctx, o, end)
    return await _client(ctx, o, end)


async def _server(ctx: Ctx, o: Opts, end: sim.End) -> int:
    reg = _registry(ctx.host)
    key = (ctx.host.name, o.port)
    if key in reg:
        raise CommandFailed(f" Couldn't bind to port {o.port}: Address already in use")
    ctx.print(WAITING)
    listener = Listener(o, end)
    reg[key] = listener
    try:
        # Real perftest waits for ever; the lab gives up so a forgotten server cannot hang a simulated run.
        lines = await asyncio.wait_for(asyncio.shield(listener.done), max(SERVER_WAIT_S * ctx.host.time_scale, 10.0))
    except TimeoutError:
        raise CommandFailed(" Unable to init the socket connection (no client came: roce-wizard lab limit)") from None
    finally:
        reg.pop(key, None)
    for line in lines:
        ctx.print(line)
    return 0


async def _client(ctx: Ctx, o: Opts, end: sim.End) -> int:
    ip = o.server_ip or ""
    probe = reach.probe(ctx.host, ip) if _is_ip(ip) else reach.Probe("no_route")
    owner = _owner_of(ctx.host, ip, probe.peer) if probe.outcome == "ok" else None
    listener = _registry(ctx.host).get((owner.name, o.port)) if owner else None
    if listener is None or listener.opts.tool != o.tool:
        raise CommandFailed(NO_SOCKET.format(ip=ip, port=o.port))
    refused = perftest_rtr.failing_side(end, listener.end)
    if refused is not None:
        return await _rtr_failed(ctx, o, end, listener, refused[0])
    active = _active(ctx.host)
    active[ctx.host.name] += 1
    flow = congestion.join(end, listener.end, o.tclass)  # several clients into one receiver port share it
    try:
        lines = await _measure(ctx, o, end, listener, flow)
    except BaseException:
        if not listener.done.done():
            listener.done.set_result([" Failed to exchange data between server and clients"])
        raise
    finally:
        active[ctx.host.name] -= 1
        congestion.leave(flow)
    if not listener.done.done():
        listener.done.set_result(lines)
    return 0


async def _rtr_failed(ctx: Ctx, o: Opts, end: sim.End, listener: Listener, side: str) -> int:
    """A QP that cannot resolve the peer's GID over its port (wizard/lab/perftest_rtr.py): both sides give up."""
    mtu = sim.link_between(end, listener.end, o.tclass).mtu
    for line in sim.header(o.tool, end.dev.name, client=True, mtu=mtu, gid_index=end.gid_index, qps=o.qps):
        ctx.print(line)
    await asyncio.sleep(perftest_rtr.RESOLVE_TIMEOUT_S * ctx.host.time_scale)
    mine = perftest_rtr.RTR_FAILED.format(qpn=perftest_rtr.qp_number(o.port))
    theirs = perftest_rtr.RTR_FAILED.format(qpn=perftest_rtr.qp_number(o.port + 1))
    if not listener.done.done():
        listener.done.set_exception(CommandFailed(perftest_rtr.PEER_GONE if side == "client" else theirs))
    raise CommandFailed(mine if side == "client" else perftest_rtr.PEER_GONE)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


async def _measure(
    ctx: Ctx, o: Opts, client: sim.End, listener: Listener, flow: congestion.Flow | None = None
) -> list[str]:
    """Print the client's output row by row; return the server's output."""
    server = listener.end
    link = sim.link_between(client, server, o.tclass)
    lat = o.tool.endswith("_lat")
    seed = o.port
    for line in sim.header(o.tool, client.dev.name, client=True, mtu=link.mtu, gid_index=client.gid_index, qps=o.qps):
        ctx.print(line)
    for line in sim.address("local", client, seed) + sim.address("remote", server, seed + 1) + [sim.DASHES]:
        ctx.print(line)
    unit = "Gb/sec" if o.gbits else "MB/sec"
    ctx.print(sim.LAT_COLUMNS if lat else sim.BW_COLUMNS.format(u=unit))
    sizes = sim.SWEEP if o.sweep else [o.size or (2 if lat else 65536)]
    key = (client.host.name, client.dev.name, server.host.name, server.dev.name)
    last = ""
    scale = ctx.host.time_scale
    for size in sizes:
        if lat:
            iters = o.iters or 1000
            typical, p99, p999 = sim.latency_us(link, size, key)
            await asyncio.sleep((o.duration or 0.05) * scale)
            last = sim.lat_row(size, iters, typical, p99, p999)
            seconds = iters * typical / 1e6
            gbps = size * 8 * iters / max(seconds, 1e-9) / 1e9
        else:
            seconds = o.duration or ROW_SECONDS
            await asyncio.sleep(seconds * scale)
            together = _active(ctx.host)[ctx.host.name] > 1  # the rails started together are all running by now
            gbps = sim.rate_gbps(link, size, together=together, key=key)
            if flow is not None:  # an incast: the receiver port's line rate is shared
                shared = congestion.rate_gbps(flow, link, size, key)
                gbps = gbps if shared is None else shared
            iters = o.iters or (int(gbps * 1e9 / 8 * seconds / size) if o.duration else 5000)
            last = sim.bw_row(size, iters, gbps, o.gbits)
        ctx.print(last)
        count(client, server, link, gbps * 1e9 / 8 * seconds, size, o.tclass)
        if flow is not None and not lat:
            congestion.count(flow, link, seconds, int(gbps * 1e9 / 8 * seconds / max(1, min(size, link.mtu))))
    ctx.print(sim.DASHES)
    server_lines = sim.header(
        o.tool, server.dev.name, client=False, mtu=link.mtu, gid_index=server.gid_index, qps=o.qps
    )
    server_lines += sim.address("local", server, seed + 1) + sim.address("remote", client, seed) + [sim.DASHES]
    if not lat:  # the bandwidth server prints the last row too; a latency server prints nothing more
        server_lines += [sim.BW_COLUMNS.format(u=unit), last, sim.DASHES]
    return server_lines
