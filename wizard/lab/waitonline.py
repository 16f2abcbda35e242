"""network-online.target at boot on a simulated host: which links the wait-online service waits for, and how long.

Sources of the behaviour simulated here:
- systemd-networkd-wait-online.service(8): waits for every link managed by systemd-networkd to be configured,
  default --timeout=120 s; on timeout it logs "Timeout occurred while waiting for network connectivity." and
  exits 1. network-online.target only Wants= it, so the target is reached anyway, late, and every unit ordered
  After=network-online.target starts late with it (systemd.special(7), https://systemd.io/NETWORK_ONLINE/).
- netplan (netplan-yaml docs, `optional`): "An optional device is not required for booting ... *only* supported by
  networkd". netplan 0.106 (Ubuntu 22.04) writes RequiredForOnline=no into the .network file of an optional
  device (src/networkd.c); netplan >= 1.0 instead lists every non-optional networkd device with
  `-i IFACE:carrier|degraded` in a wait-online drop-in (src/gen-networkd.c,
  _netplan_networkd_generate_wait_online). Either way: a non-optional networkd link without carrier holds the boot.
- netplan renderer (netplan-yaml docs, `renderer`; src/parse.c finish_iterator): a device's own `renderer:` wins,
  else the global `network: renderer:`, where the lexically last file that sets it wins for every file; default
  networkd. netplan's NetworkManager backend ignores `optional` (src/nm.c never reads it).
- nm-online(1) `-s` (NetworkManager-wait-online.service): startup completes once NetworkManager "has activated (or
  attempted to activate) every auto-activate connection which is available given the current network state": a
  device without carrier has no available connection and does not hold the boot.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wizard.lab import netplan, services

if TYPE_CHECKING:
    from wizard.lab.host import SimHost

TIMEOUT_S = 120.0  # systemd-networkd-wait-online --timeout default
POLL_S = 0.5  # simulated seconds between carrier checks
KERNEL_S = 4.213  # simulated kernel + initrd time, shown in "Startup finished in ..."
EARLY_USERSPACE_S = 1.850  # simulated userspace time before network-online.target without any wait
UNIT_S = 0.05  # simulated start time of each unit
NETWORKD_WAIT = "systemd-networkd-wait-online.service"
NM_WAIT = "NetworkManager-wait-online.service"
NETWORKD_WAIT_UNIT = """[Unit]
Description=Wait for Network to be Configured
Documentation=man:systemd-networkd-wait-online.service(8)
DefaultDependencies=no
Conflicts=shutdown.target
Requires=systemd-networkd.service
After=systemd-networkd.service
Before=network-online.target shutdown.target

[Service]
Type=oneshot
ExecStart=/lib/systemd/systemd-networkd-wait-online
RemainAfterExit=yes

[Install]
WantedBy=network-online.target
"""


@dataclass
class BootTiming:
    """Simulated seconds of the last boot (what `Startup finished in ...` and systemd-analyze report)."""

    kernel: float = KERNEL_S
    userspace: float = 0.0
    wait_online: float = 0.0
    timed_out: bool = False
    waited_for: list[str] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)  # unit -> seconds into userspace when it started


def backend_of(cfg: dict[str, Any], section: str, name: str) -> str:
    """The daemon netplan hands a definition to: its own renderer, its section's, the global one, else networkd."""
    net = cfg.get("network") or {}
    block = net.get(section) or {}
    conf = block.get(name) or {}
    return str(conf.get("renderer") or block.get("renderer") or net.get("renderer") or "networkd")


def definitions(cfg: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(section, name, conf) of every ethernet and bond definition in a merged netplan configuration."""
    net = cfg.get("network") or {}
    out = []
    for section in ("ethernets", "bonds"):
        for name, conf in (net.get(section) or {}).items():
            if name != "renderer":
                out.append((section, str(name), conf if isinstance(conf, dict) else {}))
    return out


def required_links(host: SimHost, cfg: dict[str, Any]) -> list[str]:
    """Links systemd-networkd-wait-online waits for: networkd-rendered, not optional, present (or virtual)."""
    links = []
    for section, name, conf in definitions(cfg):
        if backend_of(cfg, section, name) != "networkd" or conf.get("optional") is True:
            continue
        if conf.get("activation-mode"):
            continue  # netplan makes a definition with activation-mode optional
        if section == "ethernets" and name not in host.netdevs:
            continue  # netplan ignores a physical definition whose interface does not exist
        links.append(name)
    return links


def uses_backend(cfg: dict[str, Any], backend: str) -> bool:
    return any(backend_of(cfg, s, n) == backend for s, n, _ in definitions(cfg))


def _ensure_unit(host: SimHost) -> None:
    path = f"/lib/systemd/system/{NETWORKD_WAIT}"
    if not host.fs.exists(path):
        host.fs.install(path, NETWORKD_WAIT_UNIT)


async def reach_online(host: SimHost, timing: BootTiming, *, sleep: bool = True) -> None:
    """Run the wait-online services of the host's renderers, then reach network-online.target.

    ``sleep`` false (the lab's first boot, which happened before the lab started) records the wait without
    spending it.
    """
    try:
        cfg, _ = netplan.load(host, services.ROOT)
    except netplan.NetplanError:
        cfg = {}
    # netplan generate enables systemd-networkd and its wait-online service for networkd definitions itself
    # (src/generate.c, enable_networkd), even on a host whose networkd unit is disabled.
    if uses_backend(cfg, "networkd"):
        _ensure_unit(host)
        await _networkd_wait(host, timing, required_links(host, cfg), sleep)
    nm = services.find_unit(host, "NetworkManager.service")
    if nm is not None and services.enabled_state(host, nm) == "enabled":
        # nm-online -s: devices without carrier have no available connection and do not delay startup.
        rt = services.runtime(host, NM_WAIT)
        host.journal_log(NM_WAIT, "Starting Network Manager Wait Online...")
        rt.state, rt.sub = "active", "exited"
        host.journal_log(NM_WAIT, "Finished Network Manager Wait Online.")
    host.journal_log("network-online.target", "Reached target Network is Online.")


async def _networkd_wait(host: SimHost, timing: BootTiming, links: list[str], sleep: bool) -> None:
    rt = services.runtime(host, NETWORKD_WAIT)
    host.pid_hint += 17
    rt.pid = host.pid_hint
    timing.waited_for = list(links)
    host.journal_log(NETWORKD_WAIT, "Starting Wait for Network to be Configured...")
    waited = 0.0
    if sleep and links and not all(host.netdev_carrier(n) for n in links):
        await _ssh_answers(host)
    while links and not all(host.netdev_carrier(n) for n in links) and waited < TIMEOUT_S:
        if not sleep:
            waited = TIMEOUT_S
            break
        await asyncio.sleep(POLL_S * host.time_scale)
        waited += POLL_S
    timing.wait_online = waited
    if links and not all(host.netdev_carrier(n) for n in links):
        timing.timed_out = True
        rt.state, rt.sub, rt.status = "failed", "failed", 1
        ident = f"systemd-networkd-wait-online[{rt.pid}]"
        host.journal_log(NETWORKD_WAIT, "Timeout occurred while waiting for network connectivity.", ident=ident)
        host.journal_log(NETWORKD_WAIT, f"{NETWORKD_WAIT}: Main process exited, code=exited, status=1/FAILURE")
        host.journal_log(NETWORKD_WAIT, f"{NETWORKD_WAIT}: Failed with result 'exit-code'.")
        host.journal_log(NETWORKD_WAIT, "Failed to start Wait for Network to be Configured.")
        return
    rt.state, rt.sub, rt.status = "active", "exited", 0
    host.journal_log(NETWORKD_WAIT, "Finished Wait for Network to be Configured.")


async def _ssh_answers(host: SimHost) -> None:
    """ssh.service is ordered After=network.target only: sshd answers while wait-online still waits."""
    for listener in list(host.power_listeners):
        pending = listener("on")
        if pending is not None:
            await pending


def timespan(seconds: float) -> str:
    """systemd's format_timespan at millisecond accuracy: '4.213s', '2min 1.850s', '2min 302ms'."""
    ms = int(round(seconds * 1000))
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1000)
    parts = [f"{minutes}min"] if minutes else []
    if secs:
        parts.append(f"{secs}.{ms:03d}s" if ms else f"{secs}s")
    elif ms or not parts:
        parts.append(f"{ms}ms")
    return " ".join(parts)


def startup_finished(timing: BootTiming) -> str:
    """The line systemd logs when boot completes (also what `systemd-analyze time` prints first)."""
    total = timing.kernel + timing.userspace
    return (
        f"Startup finished in {timespan(timing.kernel)} (kernel) + {timespan(timing.userspace)} (userspace) = "
        f"{timespan(total)}."
    )
