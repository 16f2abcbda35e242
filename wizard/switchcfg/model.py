"""What the leaf switches must be told: the lossless QoS from the answers and the LLDP-found port map."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from steps.roce.desired import Desired
from wizard.answers.model import Answers
from wizard.answers.switches import PfcWatchdog
from wizard.engine.step import ClusterView

# ECN marking thresholds on the lossless egress queue, in bytes. NVIDIA's RoCE profile on Spectrum switches marks
# from 150 KB to 1.5 MB ("Port ECN absolute threshold ... traffic class 3", Cumulus Linux 5.15 user guide,
# "RDMA over Converged Ethernet - RoCE", Default RoCE Configuration); the same pair is used for every vendor so the
# fabric marks alike whatever the leaf runs.
ECN_MIN_BYTES = 150_000
ECN_MAX_BYTES = 1_500_000
_MAC = re.compile(r"^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$", re.IGNORECASE)


@dataclass(frozen=True)
class SwitchQos:
    """The switch-side image of the hosts' single ToS answer (and the MTU the hosts use)."""

    tos: int
    dscp: int
    priority: int
    ecn: bool
    cnp_dscp: int
    cnp_priority: int
    host_mtu: int
    watchdog: PfcWatchdog = field(default_factory=PfcWatchdog)
    buffer_model: str = "dynamic"  # SONiC's (DEVICE_METADATA buffer_model)
    cable_m: int | None = None  # roce.cable_length_m: the switch sizes its lossless headroom for it as the hosts do

    @classmethod
    def from_answers(cls, answers: Answers) -> SwitchQos:
        want = Desired.from_answers(answers)  # the same derivation the roce stage applies on the hosts
        return cls(
            tos=want.tos,
            dscp=want.dscp,
            priority=want.priority,
            ecn=want.ecn,
            cnp_dscp=want.cnp_dscp,
            cnp_priority=want.cnp_priority,
            host_mtu=answers.network.mtu,
            watchdog=answers.switches.pfc_watchdog,
            buffer_model=answers.switches.sonic_buffer_model,
            cable_m=answers.roce.cable_length_m,
        )

    def summary(self) -> str:
        ecn = f"ECN marking {ECN_MIN_BYTES}-{ECN_MAX_BYTES} bytes" if self.ecn else "no ECN (roce.ecn is false)"
        wd = self.watchdog
        watchdog = (
            f"PFC watchdog {wd.detection_ms} ms detection, {wd.restoration_ms} ms restoration, {wd.action}"
            if wd.enabled
            else "no PFC watchdog (switches.pfc_watchdog.enabled is false)"
        )
        return (
            f"ToS {self.tos} = DSCP {self.dscp} -> priority {self.priority} (PFC no-drop); "
            f"CNP DSCP {self.cnp_dscp} -> priority {self.cnp_priority} (strict priority); {ecn}; {watchdog}; "
            f"host MTU {self.host_mtu}" + (f"; headroom for {self.cable_m} m cables" if self.cable_m else "")
        )


@dataclass(frozen=True)
class SwitchPortUse:
    """One switch port and the host port LLDP found behind it."""

    switch: str
    port: str
    host: str
    netdev: str
    rail: int | None

    def serves(self) -> str:
        """'gpu-003 ens108np0 (rail 2)': what the port is for, as the operator reads it."""
        rail = f"rail {self.rail}" if self.rail is not None else "in no rail of the answers"
        return f"{self.host} {self.netdev} ({rail})"


@dataclass(frozen=True)
class Unconfigured:
    """A host port no switch file covers, and why."""

    host: str
    netdev: str
    reason: str


def _rdma_ethernet(ports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ports a rail can use, in PCI order (the order steps/network/design.py assigns rails in)."""
    usable = [
        p
        for p in ports
        if p.get("netdev") and p.get("link_layer") != "InfiniBand" and not str(p.get("model", "")).endswith("VF")
    ]
    return sorted(usable, key=lambda p: (p.get("pci") or "~", p["netdev"]))


def rails_of(answers: Answers, netdevs: list[str]) -> dict[str, int]:
    """Rail index per netdev: explicit ``rails[i].netdev`` first, the rest in PCI order, as the network stage does."""
    rails = answers.network.rails
    if not rails:
        return {netdev: i for i, netdev in enumerate(netdevs)}
    explicit = {r.netdev for r in rails if r.netdev}
    auto = [n for n in netdevs if n not in explicit]
    result: dict[str, int] = {}
    for index, rail in enumerate(rails):
        if rail.netdev:
            if rail.netdev in netdevs:
                result[rail.netdev] = index
        elif auto:
            result[auto.pop(0)] = index
    return result


def switch_port_name(lldp: dict[str, Any]) -> str | None:
    """The switch's own name for the port: the LLDP port id, or its description when the id is a MAC address."""
    port_id = lldp.get("port_id")
    descr = lldp.get("port_descr")
    if port_id and lldp.get("port_id_type") != "mac" and not _MAC.match(port_id):
        return str(port_id)
    return str(descr) if descr else (str(port_id) if port_id else None)


def port_map(view: ClusterView) -> dict[str, list[SwitchPortUse]]:
    """Switch name -> its ports that face a host RDMA port, from ``facts[host]["discovery"]["ports"][i]["lldp"]``."""
    result: dict[str, list[SwitchPortUse]] = {}
    for host in (h.name for h in view.answers.hosts):
        ports = _rdma_ethernet((view.facts.get(host, {}).get("discovery") or {}).get("ports") or [])
        rails = rails_of(view.answers, [p["netdev"] for p in ports])
        for p in ports:
            lldp = p.get("lldp") or {}
            switch = lldp.get("chassis_name") or lldp.get("chassis_id")
            port = switch_port_name(lldp)
            if switch and port:
                use = SwitchPortUse(str(switch), port, host, p["netdev"], rails.get(p["netdev"]))
                result.setdefault(use.switch, []).append(use)
    return {s: sorted(uses, key=lambda u: _natural(u.port)) for s, uses in sorted(result.items())}


def unconfigured(view: ClusterView, failed: dict[str, str] | None = None) -> list[Unconfigured]:
    """Host ports that no switch file covers, each with the reason (no LLDP neighbour, InfiniBand, no facts)."""
    out: list[Unconfigured] = []
    for host in (h.name for h in view.answers.hosts):
        disc = view.facts.get(host, {}).get("discovery")
        if failed and host in failed:
            out.append(Unconfigured(host, "*", f"not probed: {failed[host]}"))
            continue
        if not disc:
            out.append(Unconfigured(host, "*", "no discovery facts for this host"))
            continue
        status = disc.get("lldp_status")
        if status and status != "ok":  # one line for the host, not one per port: the fix is the host's
            out.append(Unconfigured(host, "*", _no_neighbour(status)))
            continue
        for p in disc.get("ports") or []:
            netdev = p.get("netdev") or p.get("pci") or "?"
            if p.get("link_layer") == "InfiniBand":
                out.append(
                    Unconfigured(host, netdev, "InfiniBand port: its fabric is configured by the subnet manager")
                )
            elif str(p.get("model", "")).endswith("VF"):
                out.append(Unconfigured(host, netdev, "virtual function: the physical port carries the switch link"))
            elif not p.get("netdev"):
                continue
            elif "lldp" not in p:
                out.append(Unconfigured(host, netdev, "the discovery facts carry no LLDP data for this port"))
            elif not p.get("lldp") or not switch_port_name(p["lldp"] or {}):
                out.append(Unconfigured(host, netdev, _no_neighbour(disc.get("lldp_status"))))
    return out


def _no_neighbour(status: str | None) -> str:
    """Why a port has no neighbour, from whether LLDP could be read on the host at all."""
    if status == "ok":
        return "no LLDP neighbour: the link is down, or the switch port does not send LLDP"
    if status:
        return (
            f"LLDP could not be read on the host (lldpctl: {status}): install and start lldpd "
            "(apt install lldpd; systemctl enable --now lldpd), then run switch-config again"
        )
    return "the discovery facts carry no LLDP data for this host (discovery ran without LLDP)"


def _natural(name: str) -> list[Any]:
    """swp2 before swp10, Ethernet4 before Ethernet16, Ethernet1/2 before Ethernet1/10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
