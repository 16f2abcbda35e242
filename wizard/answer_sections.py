"""Answers-file sections, one per stage. Every field's docstring is what `roce-wizard schema` shows."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from wizard.validators import InterfaceName, ModelId, Subnet, TcpPort


class Section(BaseModel):
    """Base of every answers section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class DiscoverySection(Section):
    expect_rdma_ports: int | None = Field(default=None, ge=0, le=64)
    """RDMA-capable ports each host must have; a host with another count fails discovery. None: no check."""
    expect_gpus: int | None = Field(default=None, ge=0, le=64)
    """GPUs each host must have. None: no check."""
    expect_link_speed_gbps: int | None = Field(default=None, ge=1, le=1600)
    """Link speed every RDMA port must run at, in Gb/s. None: only differences between ports are flagged."""


class OfedSection(Section):
    stack: Literal["doca", "mlnx_ofed", "inbox"] = "doca"
    """Driver stack: DOCA-OFED (default, current), MLNX_OFED LTS (legacy) or the distribution's inbox rdma-core."""
    doca_version: str = Field(default="2.9.1", pattern=r"^\d+\.\d+(\.\d+)?$")
    """DOCA-Host release. 2.9 LTS is the last with ConnectX-4 (non-Lx) support; ConnectX-4 Lx is in later ones."""
    mlnx_ofed_version: str = Field(default="24.10-3.2.5.0", pattern=r"^\d+\.\d+-[\d.]+$")
    """MLNX_OFED release, used only with stack: mlnx_ofed."""
    source: Literal["vendor", "local"] = "vendor"
    """Where packages come from: NVIDIA's repository, or a local repository already on each host (air-gapped)."""
    local_repo: str | None = Field(default=None, pattern=r"^/[^\s]*$")
    """Absolute path on each host of an extracted DOCA-Host / MLNX_OFED local repository (source: local)."""
    time_sync: Literal["chrony", "none"] = "chrony"
    """Install and enable chrony: NCCL, Ray and logs across hosts need clocks in step."""

    @model_validator(mode="after")
    def _local_needs_path(self) -> OfedSection:
        if self.source == "local" and not self.local_repo:
            raise ValueError("source: local needs local_repo (absolute path of the repository on each host)")
        return self


class RailSection(Section):
    subnet: Subnet
    """IP subnet of this rail. Rail i uses the i-th RDMA port of every host (PCI order) unless netdev is set."""
    netdev: InterfaceName | None = None
    """Interface to use for this rail on every host, when the automatic PCI order is not what you cabled."""


class BondSection(Section):
    name: InterfaceName = "bond0"
    """Bond device name."""
    mode: Literal["802.3ad", "active-backup", "balance-xor"] = "802.3ad"
    """Bonding mode. RoCE LAG needs the two ports of one card and one of these three modes."""
    members: list[InterfaceName] = Field(default_factory=list, min_length=2)
    """Member interfaces. RDMA works over a bond only as RoCE LAG: exactly the two ports of one card."""
    subnet: Subnet
    """Subnet for the bond's address; host i gets the host id of that host in it."""
    transmit_hash_policy: Literal["layer2", "layer2+3", "layer3+4", "encap2+3", "encap3+4"] = "layer3+4"
    """Hash policy for balance-xor / 802.3ad."""
    lacp_rate: Literal["slow", "fast"] = "fast"
    """LACP rate; only meaningful with 802.3ad."""


class NetworkSection(Section):
    topology: Literal["rails", "roce_lag", "bond"] = "rails"
    """rails: one subnet per port pair (the right default for RDMA); roce_lag: per-card LAG (mlx5_bond_N);
    bond: a Linux bond for IP traffic (the wizard refuses bonds RDMA cannot use)."""
    mtu: int = Field(default=9000, ge=1500, le=9978)
    """Ethernet MTU of the RDMA ports. 9000 gives RoCE active MTU 4096."""
    rails: list[RailSection] = Field(default_factory=list)
    """One entry per rail, in port order."""
    bonds: list[BondSection] = Field(default_factory=list)
    """Bonds for topology roce_lag (one per card) or bond."""
    allow_management_changes: bool = False
    """Allow changing the interface that carries the SSH session. Keep false unless you have console access."""


class RoceSection(Section):
    tos: int = Field(default=106, ge=0, le=255)
    """IP ToS byte of RDMA traffic: DSCP << 2 | ECN bits. 106 = DSCP 26 + ECT(0). Single source of truth for the
    DSCP, the PFC priority, the RDMA-CM ToS, NCCL_IB_TC and perftest's --tclass."""
    pfc_priority: int | None = Field(default=None, ge=0, le=7)
    """Priority with PFC enabled. Derived from the ToS with the default DSCP map (DSCP >> 3) when omitted."""
    ecn: bool = True
    """Enable ECN / DCQCN on the lossless priority where the driver exposes it."""
    rdma_cm_roce_version: Literal[1, 2] = 2
    """RoCE version RDMA-CM uses (v2 is routable and the default on ConnectX-4 and later)."""

    @property
    def dscp(self) -> int:
        """DSCP value carried in the ToS byte."""
        return self.tos >> 2

    @property
    def priority(self) -> int:
        """The lossless priority: explicit, or what the default dscp2prio map gives the DSCP."""
        return self.pfc_priority if self.pfc_priority is not None else self.dscp >> 3

    @model_validator(mode="after")
    def _priority_matches_dscp(self) -> RoceSection:
        mapped = self.dscp >> 3
        if self.pfc_priority is not None and self.pfc_priority != mapped:
            raise ValueError(
                f"pfc_priority {self.pfc_priority} does not match tos {self.tos} (DSCP {self.dscp} maps to priority"
                f" {mapped} with the default DSCP map); set tos to {(self.pfc_priority << 5) | 2} or pfc_priority"
                f" to {mapped}"
            )
        return self


class GpuDirectSection(Section):
    mode: Literal["auto", "dmabuf", "peermem", "off"] = "auto"
    """auto: DMA-BUF where driver and kernel support it, nvidia-peermem otherwise."""


class NcclSection(Section):
    conf_path: str = Field(default="/etc/nccl.conf", pattern=r"^/[^\s]*$")
    """Where to write NCCL's KEY=VALUE configuration."""
    socket_ifname: InterfaceName | None = None
    """Interface for NCCL's bootstrap sockets; default: the management interface found by discovery."""
    test: Literal["nccl-tests", "torch", "none"] = "nccl-tests"
    """Cross-host test: nccl-tests all_reduce_perf, a PyTorch torch.distributed all_reduce, or none."""
    min_busbw_gbytes: float = Field(default=9.0, gt=0)
    """Pass mark for inter-node all_reduce bus bandwidth at >= 1 GiB messages, in GB/s."""


class InferenceSection(Section):
    enabled: bool = True
    """Deploy an inference service across the hosts."""
    engine: Literal["vllm", "sglang"] = "vllm"
    """Serving engine."""
    model: ModelId = "meta-llama/Llama-3.1-70B-Instruct"
    """Hugging Face model id, e.g. meta-llama/Llama-3.1-70B-Instruct."""
    tensor_parallel_size: int = Field(default=8, ge=1, le=64)
    """GPUs per node used by tensor parallelism."""
    pipeline_parallel_size: int = Field(default=2, ge=1, le=64)
    """Pipeline stages (normally one per node)."""
    executor_backend: Literal["ray", "mp"] = "ray"
    """vLLM distributed executor backend across nodes."""
    port: TcpPort = 8000
    """OpenAI-compatible API port on the head node."""
    ray_port: TcpPort = 6379
    """Ray GCS port on the head node."""
    max_model_len: int = Field(default=8192, ge=256, le=1_048_576)
    """Maximum context length to serve."""
