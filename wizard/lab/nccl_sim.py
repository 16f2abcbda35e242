"""What NCCL would do on the lab's hosts: devices it picks, transport, GPUDirect, bandwidth, and its INFO log."""

from __future__ import annotations

import ipaddress
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wizard.lab import degraded, ib, rdma, reach

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

SIMULATED = "# simulated by the roce-wizard lab: not a measurement"
GDR_PENALTY = 0.9  # staging through host memory costs a little on 25GbE rails
NCCL_EFFICIENCY = 0.93  # RoCE v2 headers and NCCL protocol overhead at large sizes
MTU_FACTOR = {4096: 1.0, 2048: 0.93, 1024: 0.8, 512: 0.6, 256: 0.4}
# NCCL >= 2.26 prefixes log lines with a strftime timestamp: NCCL_DEBUG_TIMESTAMP_FORMAT (default "[%F %T] ",
# underscores become spaces, %Nf prints N digits of the second's fraction) on the levels in
# NCCL_DEBUG_TIMESTAMP_LEVELS (default WARN only; ALL; "^X" inverts). Source: NCCL docs env.rst
# (NCCL_DEBUG_TIMESTAMP_FORMAT / NCCL_DEBUG_TIMESTAMP_LEVELS, "since 2.26") and src/debug.cc ncclDebugLogV.
TIMESTAMPS_SINCE = (2, 26)
TIMESTAMP_FORMAT = "[%F %T] "
LEVELS = ("VERSION", "WARN", "INFO", "ABORT", "TRACE")


def upstream(version: str | None) -> str | None:
    return version.split(":")[-1].split("-")[0] if version else None


def nccl_version(host: SimHost) -> str | None:
    """libnccl2's version (the library all_reduce_perf and torch load in the lab)."""
    return upstream(host.packages.get("libnccl2"))


def nccl_cuda(host: SimHost) -> str:
    """The CUDA release libnccl2 was built for (``2.26.2-1+cuda12.8`` -> ``12.8``), 12.4 when unknown."""
    version = host.packages.get("libnccl2") or ""
    return version.rsplit("+cuda", 1)[1] if "+cuda" in version else "12.4"


def read_conf(host: SimHost, job_env: dict[str, str], user: str = "root") -> dict[str, str]:
    """NCCL's view of its variables: ``$NCCL_CONF_FILE`` or ~/.nccl.conf, then /etc/nccl.conf; the job wins."""
    env: dict[str, str] = {}
    home = "/root" if user == "root" else f"/home/{user}"
    paths = [job_env["NCCL_CONF_FILE"] if job_env.get("NCCL_CONF_FILE") else f"{home}/.nccl.conf"]
    for path in [*paths, "/etc/nccl.conf"]:
        if not host.fs.exists(path):
            continue
        for line in host.fs.read_text(path).splitlines():
            if line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.partition("=")
            env.setdefault(key, value)  # setenv(..., 0): the first file and the job's environment win
    return {**env, **{k: v for k, v in job_env.items() if k.startswith("NCCL_")}}


def match_hcas(spec: str | None, devices: list[rdma.RdmaDev]) -> list[rdma.RdmaDev]:
    """NCCL_IB_HCA filtering: ``^`` excludes, ``=`` exact names, else prefixes; ``:port`` must be 1 here."""
    if not spec:
        return list(devices)
    exclude = spec.startswith("^")
    spec = spec.lstrip("^")
    exact = spec.startswith("=")
    tokens = [t.split(":") for t in spec.lstrip("=").split(",") if t]

    def hit(dev: rdma.RdmaDev) -> bool:
        for parts in tokens:
            name_ok = dev.name == parts[0] if exact else dev.name.startswith(parts[0])
            port_ok = len(parts) < 2 or parts[1] in ("", "1")
            if name_ok and port_ok:
                return True
        return False

    return [d for d in devices if hit(d) != exclude]


@dataclass
class HostView:
    """One host as NCCL sees it at init."""

    host: SimHost
    env: dict[str, str]
    version: str | None
    devices: list[rdma.RdmaDev] = field(default_factory=list)  # matched and ACTIVE, PCI order
    gdr: bool = False
    oob: tuple[str, str] = ("lo", "127.0.0.1")

    @property
    def short(self) -> str:
        return self.host.hostname.split(".")[0]


def host_view(host: SimHost, job_env: dict[str, str], user: str = "root") -> HostView:
    env = read_conf(host, job_env, user)
    view = HostView(host, env, nccl_version(host))
    visible = rdma.devices(host) if "ib_uverbs" in host.modules else []
    chosen = match_hcas(env.get("NCCL_IB_HCA"), visible)
    view.devices = sorted((d for d in chosen if rdma.port_active(host, d)), key=lambda d: d.pci)
    # nvidia_peermem registers GPU memory with the HCA; without it (and without DMA-BUF) GDR is off.
    view.gdr = "nvidia_peermem" in host.modules
    view.oob = _oob(host, env.get("NCCL_SOCKET_IFNAME"))
    return view


def _oob(host: SimHost, spec: str | None) -> tuple[str, str]:
    names = [n for n, d in host.netdevs.items() if d.kind != "loopback" and d.admin_up and d.ipv4]
    if spec:
        exact = spec.startswith("=")
        wanted = spec.lstrip("=").split(",")
        names = [n for n in names if any(n == w if exact else n.startswith(w) for w in wanted)]
    else:
        mgmt = host.profile.mgmt.netdev
        names = sorted(names, key=lambda n: n != mgmt)
    if not names:
        return ("lo", "127.0.0.1")
    return names[0], str(host.netdevs[names[0]].ipv4[0].ip)


@dataclass
class Job:
    """The outcome of one NCCL job across hosts."""

    network: str  # "IB" or "Socket"
    rails: int = 0
    busbw: float = 0.0  # GB/s at large sizes
    latency_us: float = 30.0
    failure: dict[str, str] = field(default_factory=dict)  # host -> NCCL WARN text


def plan_job(views: list[HostView]) -> Job:
    """Network, usable rails and bandwidth: the slowest host and rail bound the ring."""
    if any(not v.devices for v in views):
        slowest = min(_mgmt_speed(v.host) for v in views)
        return Job("Socket", 0, slowest / 8000 * 0.7, 120.0)
    rails = min(len(v.devices) for v in views)
    job = Job("IB", rails)
    speeds = []
    for i in range(rails):
        pair = [v.devices[i] for v in views]
        for v, dev in zip(views, pair, strict=True):
            for peer, peer_dev in zip(views, pair, strict=True):
                if peer is not v and not _rail_path(v.host, dev, peer.host, peer_dev):
                    job.failure.setdefault(
                        v.host.name,
                        "misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable",
                    )
        mtu = min(rdma.active_mtu(v.host, d) for v, d in zip(views, pair, strict=True))
        ports = min(_port_speed(v.host, d) for v, d in zip(views, pair, strict=True))
        speed = min(ports, _ring_uplinks_mbps(views, pair))
        speeds.append(speed / 8000 * MTU_FACTOR.get(mtu, 0.4))
    job.busbw = rails * min(speeds) * NCCL_EFFICIENCY * (1.0 if all(v.gdr for v in views) else GDR_PENALTY)
    return job


def _port_speed(host: SimHost, dev: rdma.RdmaDev) -> float:
    """Mb/s the port carries: an IB port's trained width x lane rate (a 1X port is a quarter), else the NIC's."""
    if rdma.is_ib(host, dev):
        return ib.view(host, dev.port_indices[0]).rate_gbps * 1000
    port = dev.port_indices[0]
    return degraded.speed_mbps(host, port) * degraded.cable_share(host, port)  # trained down, or a bad cable


def _ring_uplinks_mbps(views: list[HostView], pair: list[rdma.RdmaDev]) -> float:
    """The slowest leaf-spine uplink between ring neighbours on this rail (inf when none is slow): the ring moves
    every byte over each neighbour link, so one slow uplink on it bounds the whole ring."""
    switches = getattr(getattr(views[0].host.lab, "fabric", None), "switches", None)
    if switches is None or len(views) < 2:
        return float("inf")
    ends = [(v.host.name, d.port_indices[0]) for v, d in zip(views, pair, strict=True)]
    slow = [switches.path_gbps(a, b) for a, b in zip(ends, ends[1:] + ends[:1], strict=True)]
    return min((g * 1000 for g in slow if g is not None), default=float("inf"))


def _rail_path(host: SimHost, dev: rdma.RdmaDev, peer: SimHost, peer_dev: rdma.RdmaDev) -> bool:
    """RoCE v2 between two devices needs an IPv4 GID on each end and IP reachability over this port; InfiniBand
    needs both ports ACTIVE (a LID from the SM) and a shared partition, no IP at all (connections go by LID)."""
    if rdma.is_ib(host, dev) and rdma.is_ib(peer, peer_dev):
        return ib.reachable(host, dev.port_indices[0], peer, peer_dev.port_indices[0])
    peer_nd = peer.netdevs.get(peer_dev.netdev)
    local_nd = host.netdevs.get(dev.netdev)
    if not peer_nd or not local_nd or not peer_nd.ipv4 or not local_nd.ipv4:
        return False
    target = str(peer_nd.ipv4[0].ip)
    if not any(ipaddress.IPv4Address(target) in a.network for a in local_nd.ipv4):
        return False
    return reach.probe(host, target, iface=dev.netdev).outcome == "ok"


def _mgmt_speed(host: SimHost) -> int:
    return host.profile.mgmt.speed_mbps


def info_lines(view: HostView, job: Job, first_rank: int, nranks: int, pid: int) -> list[str]:
    """NCCL_DEBUG=INFO lines of one host's ranks, in the formats of NCCL's source."""
    out: list[str] = []
    p = f"{view.short}:{pid}:{pid}"
    # Wording of NCCL's source: socket.cc, net_ib/init.cc ("set to"), param.cc (integers, trailing dot).
    env = view.env
    if "NCCL_SOCKET_IFNAME" in env:
        out.append(f"{p} [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to {env['NCCL_SOCKET_IFNAME']}")
    for key in ("NCCL_CROSS_NIC", "NCCL_IB_TC", "NCCL_IB_GID_INDEX"):
        if key in env:
            out.append(f"{p} [0] NCCL INFO {key} set by environment to {env[key]}.")
    out.append(f"{p} [0] NCCL INFO Bootstrap: Using {view.oob[0]}:{view.oob[1]}<0>")
    t = f"{view.short}:{pid}:{pid + 71}"
    if "NCCL_IB_HCA" in env:
        out.append(f"{t} [0] NCCL INFO NCCL_IB_HCA set to {env['NCCL_IB_HCA']}")
    if view.devices:
        # net_ib/init.cc prints each device's link layer: "/IB" or "/RoCE"
        using = " ".join(
            f"[{i}]{d.name}:1/{'IB' if rdma.is_ib(view.host, d) else 'RoCE'}" for i, d in enumerate(view.devices)
        )
        out.append(f"{t} [0] NCCL INFO NET/IB : Using {using} [RO]; OOB {view.oob[0]}:{view.oob[1]}<0>")
    else:
        out.append(f"{t} [0] NCCL INFO NET/IB : No device found.")
        out.append(f"{t} [0] NCCL INFO NET/Socket : Using [0]{view.oob[0]}:{view.oob[1]}<0>")
    out.append(f"{t} [0] NCCL INFO Using network {job.network}")
    if job.network == "IB":
        state = "Enabled" if view.gdr else "Disabled"
        out += [
            f"{t} [0] NCCL INFO NET/IB : GPU Direct RDMA {state} for HCA {i} '{d.name}'"
            for i, d in enumerate(view.devices)
        ]
    peer = (first_rank + len(view.host.profile.gpus)) % nranks  # the next host's first rank
    channels = max(1, job.rails) * 2
    for c in range(channels):
        net = c % max(1, job.rails)
        via = f"NET/IB/{net}" + ("/GDRDMA" if view.gdr else "") if job.network == "IB" else f"NET/Socket/{net}"
        out.append(f"{t} [0] NCCL INFO Channel {c:02d}/0 : {first_rank}[0] -> {peer}[0] [send] via {via}")
        out.append(f"{t} [0] NCCL INFO Channel {c:02d}/0 : {peer}[0] -> {first_rank}[0] [receive] via {via}")
    if view.host.name in job.failure:
        out += ["", f"{t} [0] {job.failure[view.host.name]}"]  # debug.cc: "WARNs come with an extra newline"
    return [stamp(view, line) for line in out]


def timestamp_levels(view: HostView) -> set[str]:
    """Levels NCCL stamps with a time: none before 2.26, else NCCL_DEBUG_TIMESTAMP_LEVELS (default WARN)."""
    parts = tuple(int(x) for x in (view.version or "0.0").split(".")[:2] if x.isdigit())
    if parts < TIMESTAMPS_SINCE:
        return set()
    spec = view.env.get("NCCL_DEBUG_TIMESTAMP_LEVELS", "WARN").strip().upper()
    invert = spec.startswith("^")
    named = {p.strip() for p in spec.lstrip("^").split(",") if p.strip()}
    chosen = set(LEVELS) if "ALL" in named else named & set(LEVELS)
    return set(LEVELS) - chosen if invert else chosen


def stamp(view: HostView, line: str) -> str:
    """``line`` with the time prefix NCCL would print for its level (strftime of the local time)."""
    level = "WARN" if " NCCL WARN " in line else "INFO" if " NCCL INFO " in line else None
    if level is None or level not in timestamp_levels(view):
        return line
    fmt = view.env.get("NCCL_DEBUG_TIMESTAMP_FORMAT", TIMESTAMP_FORMAT).replace("_", " ")
    now = time.time()
    if match := re.search(r"%([1-9])f", fmt):
        digits = int(match[1])
        fmt = fmt.replace(match[0], f"{int(now % 1 * 10**digits):0{digits}d}", 1)
    return time.strftime(fmt, time.localtime(now)) + line
