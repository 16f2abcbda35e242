"""The shape of a ``rails-N`` lab (N from 16 to 1024): host names, scalable units, leaf and spine names, each rail's
subnet and gateway, and which spine a pair of host ports crosses. Plain data and arithmetic, no lab objects, so the
answers generator (wizard/answers/rails_answers.py) and the switches (wizard/lab/rail_fabric.py) agree by
construction.

Topology (NVIDIA DGX SuperPOD reference architecture, "Compute Fabric": a scalable unit (SU) is 32 nodes, and each
SU has one leaf switch per rail, rail i of every node of the SU cabled to the SU's rail-i leaf; the spine layer joins
the SUs' leaves):

- N <= 32 is one SU: one leaf per rail named ``leaf-r<i>`` and one spine ``spine-0`` (the rails-16 fabric, as it
  always was).
- N > 32 is ceil(N / 32) SUs: leaves ``leaf-su<NN>-r<i>`` (NN from 01) and SPINES spines ``spine-0..``, every leaf
  with one uplink to every spine, each uplink at the hosts' port rate (400G).

Addressing: every rail is ONE subnet whatever the number of leaves. On one SU the leaf owns it (10.10.<i>.0/24, the
leaf answering on .254, the addressing of assets/answers.rails-16.yaml). Across SUs the rail's subnet is an EVPN L2
VNI stretched over all of that rail's leaves, with a distributed anycast gateway: every leaf of rail i answers on the
same gateway address (RFC 9135, EVPN integrated routing and bridging: every PE attached to a subnet has the same IRB
IP and MAC; Cumulus Linux configures it as a VRR address on each leaf's SVI), so a host keeps one rail address and
one gateway wherever it sits.
Rail i is then 10.<16+i>.0.0/16 with the gateway 10.<16+i>.255.254: room for 65,533 hosts, and a host id (1..N,
wizard/answers/numbering.py) never meets the gateway's.
"""

from __future__ import annotations

import ipaddress
import zlib
from dataclasses import dataclass

from wizard.answers.profiles import RAILS_MAX, RAILS_MIN, rails_hosts

__all__ = ["RailPlan", "ecmp_spine", "host_names", "rails_hosts"]

HOSTS_PER_SU = 32  # DGX SuperPOD: 32 nodes per scalable unit, one leaf per rail per SU (the leaf radix here)
# Spines of a multi-SU fabric. A non-blocking SuperPOD compute fabric gives each leaf as many uplinks as host ports;
# the lab models no contention on healthy uplinks (every flow gets the slowest link on its path, not a share), so the
# spines only decide which uplink a flow crosses. Eight keeps that choice visible (a bad uplink slows about one
# cross-leaf pair in eight, the rest are a control group) and the fabric small: 256 leaves x 8 uplinks at 1,024 hosts.
SPINES = 8
MIN_HOSTS, MAX_HOSTS = RAILS_MIN, RAILS_MAX

PortRef = tuple[str, int]  # (host name, index into the host profile's ports)


def host_names(n: int) -> list[str]:
    """gpu-001.. (rails-16's style), four digits once N passes 999: gpu-0001..gpu-1024."""
    width = 4 if n > 999 else 3
    return [f"gpu-{i + 1:0{width}d}" for i in range(n)]


@dataclass(frozen=True)
class RailPlan:
    """The fabric of a rails-N profile sized for ``hosts`` (N), with ``rails`` rails per host."""

    hosts: int
    rails: int = 8

    @property
    def multi_su(self) -> bool:
        return self.hosts > HOSTS_PER_SU

    @property
    def su_count(self) -> int:
        return -(-self.hosts // HOSTS_PER_SU) if self.multi_su else 1

    @property
    def spine_count(self) -> int:
        return SPINES if self.multi_su else 1

    def su_of(self, host_index: int) -> int:
        """0-based SU of the host at ``host_index`` (answers order); one SU holds every host of a small fabric."""
        return host_index // HOSTS_PER_SU if self.multi_su else 0

    def leaf_port(self, host_index: int) -> int:
        """Front-panel port of the host on its leaves (the same on every rail): its place in its SU, from 1."""
        return host_index % HOSTS_PER_SU + 1 if self.multi_su else host_index + 1

    def leaf_name(self, su: int, rail: int) -> str:
        return f"leaf-su{su + 1:02d}-r{rail}" if self.multi_su else f"leaf-r{rail}"

    def spine_name(self, index: int) -> str:
        return f"spine-{index}"

    def subnet(self, rail: int) -> ipaddress.IPv4Network:
        if self.multi_su:
            return ipaddress.IPv4Network(f"10.{16 + rail}.0.0/16")
        return ipaddress.IPv4Network(f"10.10.{rail}.0/24")

    def gateway(self, rail: int) -> ipaddress.IPv4Interface:
        """The rail's gateway with its prefix: what every leaf of the rail answers on (anycast across SUs)."""
        net = self.subnet(rail)
        return ipaddress.IPv4Interface(f"{net.broadcast_address - 1}/{net.prefixlen}")

    def describe_leaves(self) -> str:
        """The leaf names in a few words (error messages; 256 names would be a wall)."""
        last = self.leaf_name(self.su_count - 1, self.rails - 1)
        if not self.multi_su:
            return f"{self.leaf_name(0, 0)} .. {last}"
        first = self.leaf_name(0, 0)
        return f"leaf-suNN-r<rail>, NN 01-{self.su_count:02d}, rail 0-{self.rails - 1} ({first} .. {last})"


def ecmp_spine(a: PortRef, b: PortRef, spines: int) -> int:
    """The spine (0-based) a flow between host ports ``a`` and ``b`` crosses.

    A real leaf hashes each packet's 5-tuple over its equal-cost uplinks (for RoCE v2 the UDP source port, which the
    NIC derives per QP, so a real pair's QPs may spread over spines). The lab hashes the two host ports instead:
    CRC-32 of both (host name, port index), taken in sorted order, modulo the spine count. Every flow of a pair then
    crosses one fixed spine in both directions, so the victims of a slow uplink are a fixed, testable set."""
    if spines <= 1:
        return 0
    low, high = sorted((a, b))
    return zlib.crc32(f"{low[0]}:{low[1]}|{high[0]}:{high[1]}".encode()) % spines
