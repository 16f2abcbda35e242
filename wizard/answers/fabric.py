"""The answers' `fabric` section: which link layer the RDMA ports run (RoCE on Ethernet, or InfiniBand) and the node
groups a cluster that mixes cards or fabrics is made of (seed 003: V100 nodes on 100G EDR, A100 nodes on 200G HDR).

InfiniBand needs none of RoCE's lossless Ethernet set-up: its links are lossless by credit-based flow control and the
subnet manager assigns every port its LID and path (IBTA Architecture Specification vol. 1, ch. 7.9 and 14). What it
needs instead is a running subnet manager, matching partition keys and, where the operator asks for one, a service
level that NCCL puts in its queue pairs (NCCL_IB_SL)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from wizard.answers.sections import Section
from wizard.answers.validators import Hostname

LinkLayer = Literal["ethernet", "infiniband", "auto"]
_GROUP = re.compile(r"^[a-z0-9]([a-z0-9_-]{0,30}[a-z0-9])?$")
_RESOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class NodeGroup(Section):
    """Hosts that share a card model and fabric: they are compared with each other, judged against their own link
    rate and get their own Kubernetes RDMA resource."""

    name: str = Field(pattern=_GROUP.pattern)
    """Group name (lower case), e.g. v100 or a100."""
    hosts: list[Hostname] = Field(min_length=1)
    """The group's hosts, by name."""
    link_layer: LinkLayer | None = None
    """This group's link layer. None: fabric.link_layer."""
    expect_link_speed_gbps: int | None = Field(default=None, ge=1, le=1600)
    """Rate every RDMA port of the group must run at, in Gb/s (EDR 100, HDR 200, NDR 400). None:
    discovery.expect_link_speed_gbps."""
    rdma_resource: str | None = Field(default=None, pattern=_RESOURCE.pattern)
    """Resource name the Kubernetes RDMA shared device plugin advertises for this group (rdma/<name>). None:
    rdma_<group name>."""

    @property
    def resource(self) -> str:
        return self.rdma_resource or f"rdma_{self.name.replace('-', '_')}"


class FabricSection(Section):
    link_layer: LinkLayer = "ethernet"
    """ethernet: the RDMA ports run RoCE (a VPI port left in InfiniBand mode fails discovery); infiniband: they run
    InfiniBand (IPoIB addresses on the rails, no DSCP/PFC/ECN, a subnet manager required; a VPI port left in
    Ethernet mode fails discovery); auto: each host's ports decide (use it only when you trust the cabling)."""
    ib_sl: int | None = Field(default=None, ge=0, le=15)
    """InfiniBand service level NCCL and perftest use (NCCL_IB_SL, perftest --sl); the subnet manager's SL-to-VL
    table decides which virtual lane carries it. None: SL 0, the default every SM maps."""
    ib_pkey: str | None = Field(default=None, pattern=r"^0x[0-9a-fA-F]{1,4}$")
    """The partition key (e.g. 0x8001, full membership) every InfiniBand port must hold. None: the default
    partition 0xffff, which every subnet manager assigns."""
    ipoib_mode: Literal["datagram", "connected"] = "datagram"
    """IPoIB mode of the rail interfaces. datagram is the default of the Linux ipoib driver and of enhanced IPoIB
    (ConnectX-4 and later, where connected mode is not supported); its MTU is the IB MTU minus 4 (4092)."""
    groups: list[NodeGroup] = Field(default_factory=list)
    """Node groups, where the cluster mixes cards or fabrics. Hosts in no group form the default group."""

    @model_validator(mode="after")
    def _groups_distinct(self) -> FabricSection:
        names: set[str] = set()
        resources: set[str] = set()
        owner: dict[str, str] = {}
        for group in self.groups:
            if group.name in names:
                raise ValueError(f"group {group.name!r} appears twice")
            names.add(group.name)
            if group.resource in resources:
                raise ValueError(f"group {group.name!r}: RDMA resource {group.resource!r} is used by another group")
            resources.add(group.resource)
            for host in group.hosts:
                if host in owner:
                    raise ValueError(f"host {host!r} is in both group {owner[host]!r} and group {group.name!r}")
                owner[host] = group.name
        return self

    def group_of(self, host: str) -> NodeGroup | None:
        return next((g for g in self.groups if host in g.hosts), None)

    def link_layer_of(self, host: str) -> LinkLayer:
        group = self.group_of(host)
        return group.link_layer if group is not None and group.link_layer is not None else self.link_layer

    def group_name(self, host: str) -> str:
        group = self.group_of(host)
        return group.name if group is not None else "default"
