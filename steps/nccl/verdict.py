"""Verdicts on a cross-host NCCL run: RDMA transport with every HCA, GPUDirect RDMA, bus bandwidth."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from steps.discovery.facts import DiscoveryFacts
from steps.nccl.causes import find_cause
from steps.nccl.conf import GID_AUTO_SINCE
from steps.nccl.facts import NcclFacts, version_tuple
from wizard.engine.step import CheckItem

RERUN = "re-run: roce-wizard --only nccl"


@dataclass
class Expect:
    """What the host's nccl.conf tells NCCL, to compare with what the log shows."""

    hcas: list[str]
    gdr: bool = True
    conf_has_gid: bool = False
    overrides: list[str] = field(default_factory=list)  # "PATH sets KEY=VALUE" that beat /etc/nccl.conf
    modules: list[str] = field(default_factory=list)  # kernel modules loaded now (nvidia_peermem or not)


def run_checks(host: str, run: dict[str, Any] | None, expect: Expect) -> list[CheckItem]:
    """Checks that read this host's share of the cross-host run."""
    if run is None:
        return [_item("run", "cross-host NCCL test", "fail", "no result recorded", RERUN)]
    if "skipped" in run:  # a warning when peers dropped out earlier: nothing proved this host's fabric
        return [_item("run", "cross-host NCCL test", "warn" if run.get("partial") else "skip", run["skipped"])]
    if "log" not in run:  # nothing ran: a precondition or the ssh check between hosts failed
        return [_item("run", "cross-host NCCL test", "fail", run.get("error") or "not run", _error_fix(run))]
    log = run.get("log") or {}
    items = [_transport(host, log, run, expect), _hcas(host, log, expect.hcas)]
    items.append(
        _gdr(host, log, expect.modules)
        if expect.gdr
        else _item("gdr", "GPUDirect RDMA", "skip", "not expected (gpudirect.mode off, or Soft-RoCE devices)")
    )
    version = log.get("version") or run.get("perf", {}).get("nccl_version")
    items.append(_version(host, version, expect.conf_has_gid))
    # A failed RDMA completion, a duplicate GPU or an NCCL result code becomes a named cause with its own fix.
    cause = find_cause(host, log, run) if run.get("error") or log.get("completion_errors") else None
    if cause and not cause.specific and _error_fix(run) != _error_fix({}):
        cause = None  # the error message itself names the cause (ssh, unreachable rail, hang)
    if cause:
        items.append(_item("cause", "why the NCCL run failed", "fail", cause.evidence, cause.fix))
    if run.get("error"):
        fix = f"{cause.name}: {cause.fix}" if cause else _error_fix(run)
        items.append(_item("run", "cross-host NCCL test", "fail", run["error"], fix))
    return items


def perf_checks(
    run: dict[str, Any] | None, minimum: float, causes: list[str], ceiling: float | None
) -> list[CheckItem]:
    """Bus bandwidth at >= 1 GiB against nccl.min_busbw_gbytes, and result correctness."""
    if not run or "skipped" in run or not run.get("perf"):
        return []
    perf = run["perf"]
    items = []
    value = perf.get("busbw_1g")
    limit = f" (ceiling of the rails {ceiling:.1f} GB/s)" if ceiling else ""
    if value is None and run.get("error"):
        items.append(_item("busbw", "bus bandwidth at >= 1 GiB", "skip", "no result: the run itself failed"))
    elif value is None:
        errors = "; ".join(perf.get("errors") or []) or "the run printed no result at 1 GiB or more"
        items.append(_item("busbw", "bus bandwidth at >= 1 GiB", "fail", errors, "; ".join(causes) or RERUN))
    elif value < minimum:
        evidence = f"busbw {value:.2f} GB/s < nccl.min_busbw_gbytes {minimum:g}{limit}"
        fix = "; ".join(causes) or "check PFC/pause counters (ethtool -S) and the rails' MTU and speed"
        items.append(_item("busbw", "bus bandwidth at >= 1 GiB", "fail", evidence, fix))
    else:
        items.append(
            _item("busbw", "bus bandwidth at >= 1 GiB", "pass", f"busbw {value:.2f} GB/s >= {minimum:g}{limit}")
        )
    if perf.get("duplicated_header"):
        items.append(
            _item(
                "mpi",
                "one MPI job",
                "fail",
                "ranks ran as independent jobs (duplicated headers)",
                "rebuild nccl-tests with MPI=1 (delete the build directory and re-run this stage)",
            )
        )
    if not perf.get("correct", True):
        items.append(
            _item(
                "correct",
                "all_reduce results",
                "fail",
                "wrong results reported (#wrong / out of bounds)",
                "check GPU memory errors (nvidia-smi -q -d ECC) and the NICs' counters",
            )
        )
    return items


def _transport(host: str, log: dict[str, Any], run: dict[str, Any], expect: Expect) -> CheckItem:
    title = "NCCL transport is NET/IB (RDMA)"
    if not log.get("parsed"):
        return _item("transport", title, "fail", f"no NCCL INFO lines from {host}", _error_fix(run))
    if log.get("transport") == "IB":
        return _item(
            "transport", title, "pass", f"{host}: network {log.get('network') or 'IB'}, channels {_channels(log)}"
        )
    env_hca = log.get("env", {}).get("NCCL_IB_HCA")
    if log.get("ib_no_device"):
        cause = (
            f"NET/IB found no device on {host}: NCCL_IB_HCA ({env_hca or 'unset'}) names no ACTIVE RDMA port, or "
            "libibverbs/the mlx5 provider is missing"
        )
    elif log.get("transport") == "Socket":
        cause = f"NCCL fell back to TCP sockets (NET/Socket) on {host}"
        if log.get("ib_devices"):
            cause += f" although NET/IB saw {', '.join(log['ib_devices'])}: RDMA connections failed"
        if log.get("errors"):
            cause += f" ({log['errors'][0]})"
    else:
        cause = f"the log does not show which network {host} used (no 'Using network' or channel lines)"
    fix = "run the network and roce stages (links, IPs, GIDs), check /etc/nccl.conf NCCL_IB_HCA, then " + RERUN
    wanted = "=" + ",".join(expect.hcas)
    if env_hca and env_hca != wanted:
        cause += f"; NCCL saw NCCL_IB_HCA={env_hca}, not /etc/nccl.conf's {wanted}"
        fix = (
            "remove the override ("
            + ("; ".join(expect.overrides) or "job environment or $NCCL_CONF_FILE")
            + ": NCCL reads it before /etc/nccl.conf and the first value wins), then "
            + RERUN
        )
    return _item("transport", title, "fail", cause, fix)


def _hcas(host: str, log: dict[str, Any], expected: list[str]) -> CheckItem:
    title = "NCCL uses every expected HCA"
    used = set(log.get("ib_devices") or [])
    for merged in log.get("merged_devices") or []:
        used |= set(merged.split("+"))
    missing = [name for name in expected if name.split(":")[0] not in used]
    if not log.get("parsed") or log.get("transport") != "IB":
        return _item("hcas", title, "skip", "no RDMA transport to inspect")
    if missing:
        return _item(
            "hcas",
            title,
            "fail",
            f"{host}: NCCL did not use {', '.join(missing)} (NET/IB : Using {', '.join(sorted(used)) or 'nothing'})",
            f"check the port state with rdma link on {host}, then {RERUN}",
        )
    return _item("hcas", title, "pass", f"{host}: NET/IB : Using {', '.join(expected)}")


def _gdr(host: str, log: dict[str, Any], modules: list[str]) -> CheckItem:
    title = "GPUDirect RDMA"
    if not log.get("parsed") or log.get("transport") != "IB":
        return _item("gdr", title, "skip", "no RDMA transport to inspect")
    disabled = log.get("gdr_disabled_hcas") or []
    gdr_channels = sum(n for via, n in (log.get("net_channels") or {}).items() if "GDRDMA" in via)
    if disabled or not log.get("gdr_enabled"):
        peermem = "nvidia_peermem" in modules
        cause = (
            "nvidia_peermem is not loaded and DMA-BUF is not available"
            if not peermem and not log.get("dmabuf")
            else "the GPU driver does not register GPU memory with the HCA"
        )
        evidence = f"{host}: GPU Direct RDMA Disabled for HCA {', '.join(disabled) or '(none enabled)'}: {cause}"
        fix = (
            "run the gpudirect stage (modprobe nvidia-peermem, persisted in /etc/modules-load.d), or use DMA-BUF "
            f"(open GPU kernel modules, kernel >= 5.12); then {RERUN}"
        )
        return _item("gdr", title, "fail", evidence, fix)
    if not gdr_channels:
        return _item(
            "gdr",
            title,
            "warn",
            f"{host}: GDR enabled for {', '.join(log['gdr_enabled_hcas'])} but no channel "
            "uses NET/IB/.../GDRDMA: GPUs and NICs are further apart than NCCL_NET_GDR_LEVEL (default PXB)",
            "read nvidia-smi topo -m; staging through host memory is expected on such topologies",
        )
    how = "DMA-BUF" if log.get("dmabuf") else "nvidia-peermem"
    return _item(
        "gdr",
        title,
        "pass",
        f"{host}: enabled for {', '.join(log.get('gdr_enabled_hcas') or [])} "
        f"({how}); {gdr_channels} channel(s) via GDRDMA",
    )


def _version(host: str, version: str | None, conf_has_gid: bool) -> CheckItem:
    title = "NCCL version matches nccl.conf"
    parsed = version_tuple(version)
    if parsed is None:
        return _item("version", title, "warn", f"{host}: the log shows no NCCL version")
    if parsed < GID_AUTO_SINCE and not conf_has_gid:
        return _item(
            "version",
            title,
            "fail",
            f"{host}: the job ran NCCL {version}, older than 2.21, without "
            "NCCL_IB_GID_INDEX: it may pick a RoCE v1 or IPv6 GID",
            f"install libnccl2 >= 2.21, or {RERUN} after making dpkg show the NCCL in use",
        )
    return _item("version", title, "pass", f"{host}: NCCL {version}")


def _channels(log: dict[str, Any]) -> str:
    counts = log.get("net_channels") or {}
    return ", ".join(f"{n} via {via}" for via, n in counts.items()) or "no NET channel lines"


def _error_fix(run: dict[str, Any]) -> str:
    if run.get("ssh"):
        return (
            f"on {run.get('ran_from')}, as the SSH user: create a key (ssh-keygen) and install it on every other host "
            "(ssh-copy-id), accept their host keys once; or set nccl.test: torch (no host-to-host ssh needed)"
        )
    if "Network is unreachable" in (run.get("error") or ""):
        return (
            "an RDMA rail is broken between the hosts (cables crossed between cards, or a peer port without an "
            "address in the rail's subnet): run the network stage and its cabling checks, then " + RERUN
        )
    if run.get("exit_status") == 124:
        return "the run hung: check that TCP between the hosts' management addresses is open, then " + RERUN
    return "read the run's output in this host's log, fix the cause, then " + RERUN


def bandwidth_causes(hosts: dict[str, NcclFacts], mtu: int) -> list[str]:
    """Known reasons for low bus bandwidth, each naming host and port: links down, MTU below the answer."""
    causes = []
    for host, facts in hosts.items():
        for port in facts.rdma:
            name = port.netdev or port.device
            if port.link_layer == "InfiniBand":  # no MTU to raise: the SM's path MTU applies; only the state
                if port.state != "ACTIVE":
                    why = "no subnet manager (INIT)" if port.state == "INIT" else "reconnect the cable"
                    causes.append(f"{host} {name}: IB port {port.state}, {why}")
                continue
            if (port.link_layer or "Ethernet") != "Ethernet":
                continue
            if port.state != "ACTIVE":
                causes.append(f"{host} {name}: link {port.state}, reconnect the cable")
            elif port.netdev in facts.mtus and facts.mtus[port.netdev] < mtu:
                causes.append(f"{host} {name}: MTU {facts.mtus[port.netdev]} < network.mtu {mtu} (stage network)")
    return causes


def rail_health(host: str, facts: NcclFacts, mtu: int) -> CheckItem:
    """A warning for rail ports that are down or below network.mtu: NCCL still runs, only slower."""
    causes = bandwidth_causes({host: facts}, mtu)
    if not causes:
        return _item("rails", "rail ports up at full MTU", "pass", f"{host}: every rail port ACTIVE, MTU >= {mtu}")
    return _item("rails", "rail ports up at full MTU", "warn", "; ".join(causes),
                 "RoCE runs at the smaller path MTU or without the rail: run the network stage")  # fmt: skip


def rail_ceiling(disc: DiscoveryFacts, chosen: list[str]) -> float | None:
    """Sum of the chosen ports' link speeds in GB/s (the bound busbw is compared with)."""
    speeds = {p.rdma_device: p.speed_mbps for p in disc.ports if p.rdma_device}
    values = [speeds.get(name.split(":")[0]) for name in chosen]
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v) / 8000


def _item(id_: str, title: str, status: str, evidence: str, fix: str | None = None) -> CheckItem:
    return CheckItem(id=id_, title=title, status=status, evidence=evidence, fix=fix)  # type: ignore[arg-type]
