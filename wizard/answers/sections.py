"""Answers-file sections, one per stage. Every field's docstring is what `roce-wizard schema` shows."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from wizard.answers.validators import HostAddress, Hostname, InterfaceName, ModelId, Subnet, TcpPort


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
    """Driver stack: doca = DOCA-OFED (NVIDIA's current host stack, doca-ofed profile); mlnx_ofed = MLNX_OFED, the
    legacy stack whose last standalone release is 24.10 LTS; inbox = the distribution's kernel drivers and rdma-core
    (rdma-core, ibverbs-utils, infiniband-diags, perftest; iproute2 rdma/dcb instead of mlnx_qos)."""
    doca_version: str = Field(default="2.9.1", pattern=r"^\d+\.\d+\.\d+$")
    """DOCA-Host release (x.y.z), used with stack: doca. 2.9.x LTS is the last with ConnectX-4 (15b3:1013)
    support; ConnectX-4 Lx (15b3:1015) is also supported by later releases."""
    mlnx_ofed_version: str = Field(default="24.10-3.2.5.0", pattern=r"^\d+\.\d+-\d+\.\d+\.\d+\.\d+$")
    """MLNX_OFED release (e.g. 24.10-3.2.5.0), used only with stack: mlnx_ofed."""
    source: Literal["vendor", "local"] = "vendor"
    """vendor: NVIDIA's online apt repository for the host's OS and architecture (linux.mellanox.com, signed with
    NVIDIA's GPG key); local: a repository already present on each host (air-gapped), see local_repo."""
    local_repo: str | None = Field(default=None, pattern=r"^/\S+$")
    """Absolute path on each host, used only with source: local. Either a DOCA local-repo package
    (doca-host_<version>_<arch>.deb; dpkg -i adds the file: repository it carries) or a directory that is a flat
    Debian repository (Packages or Packages.gz at its top: an extracted doca-host repo, or the DEBS directory of an
    MLNX_OFED_LINUX tarball). A directory with Release.gpg and GPG-KEY-Mellanox.pub is verified with that key;
    without them it is added as [trusted=yes], so keep it root-owned."""
    time_sync: Literal["chrony", "none"] = "chrony"
    """chrony: make sure clocks are synchronised (NCCL, Ray and logs across hosts need them in step): install and
    enable chrony, unless systemd-timesyncd already runs (kept: it is fine). none: leave time sync alone."""
    driver_reload: Literal["auto", "reboot"] = "auto"
    """How the new driver is loaded after installing: auto restarts it with /etc/init.d/openibd restart, or
    reboots when SSH arrives over a ConnectX port (a restart would cut the session); reboot always reboots."""

    @field_validator("local_repo")
    @classmethod
    def _no_trailing_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") or "/" if value else value

    @model_validator(mode="after")
    def _source_matches_stack(self) -> OfedSection:
        if self.source == "local" and not self.local_repo:
            raise ValueError("source: local needs local_repo (absolute path of the repository on each host)")
        if self.source == "vendor" and self.local_repo:
            raise ValueError("local_repo is only used with source: local (set source: local, or remove local_repo)")
        if self.stack == "inbox" and self.source == "local":
            raise ValueError(
                "stack: inbox installs rdma-core from the distribution's own repositories; source: local applies to"
                " stack doca or mlnx_ofed"
            )
        if self.stack == "mlnx_ofed" and self.local_repo and self.local_repo.endswith(".deb"):
            raise ValueError(
                "stack: mlnx_ofed with source: local needs local_repo to be a directory (the DEBS directory of an"
                " extracted MLNX_OFED_LINUX tarball); a .deb local repo is DOCA's (stack: doca)"
            )
        return self


class RailSection(Section):
    subnet: Subnet
    """IP subnet of this rail. Rail i uses the i-th RDMA port of every host (PCI order) unless netdev is set."""
    netdev: InterfaceName | None = None
    """Interface to use for this rail on every host, when the automatic PCI order is not what you cabled."""
    gateway: str | None = None
    """Switched fabrics: the leaf switch's address on this rail. Traffic from this rail's address to the other
    rails' subnets is routed through it (per-rail routing table); never a default route."""

    @model_validator(mode="after")
    def _gateway_in_subnet(self) -> RailSection:
        if self.gateway is None:
            return self
        try:
            gateway = ipaddress.ip_address(self.gateway)
        except ValueError:
            raise ValueError(f"gateway {self.gateway!r} is not an IP address") from None
        net = ipaddress.ip_network(self.subnet)
        if gateway not in net or gateway in (net.network_address, net.broadcast_address):
            raise ValueError(f"gateway {gateway} is not a host address inside the rail subnet {net}")
        self.gateway = str(gateway)
        return self


class BondSection(Section):
    name: InterfaceName = "bond0"
    """Bond device name."""
    mode: Literal[
        "802.3ad", "active-backup", "balance-xor", "balance-rr", "broadcast", "balance-tlb", "balance-alb"
    ] = "802.3ad"
    """Bonding mode. RoCE LAG (RDMA over the bond) needs 802.3ad, active-backup or balance-xor; the other modes
    are accepted only for bonds of non-RDMA interfaces (IP traffic)."""
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
    allow_management_changes: bool | list[Hostname] = False
    """Allow changing the interface that carries the SSH session: false (never), a list of host names (only on
    those hosts), or true (every host). Keep it off unless you have console access; a change that cuts SSH is
    rolled back by the host itself (see safe_apply)."""
    fabric: Literal["auto", "back_to_back", "switched"] = "auto"
    """back_to_back: each rail is a cable between two hosts (no routing needed); switched: rails go through leaf
    switches (per-rail routing tables and source rules). auto: switched when there are more than two hosts or a
    rail has a gateway, back_to_back otherwise."""
    route_table_base: int = Field(default=100, ge=1, le=60000)
    """Switched fabrics: rail i uses routing table route_table_base + i (and rule priority of the same number)."""
    multi_nic_sysctls: bool = True
    """On hosts with several rails, set arp_ignore=1, arp_announce=2 and rp_filter=2 (loose) on each rail
    interface in /etc/sysctl.d/60-roce-wizard.conf, so ARP and replies stay on the port that owns the address."""

    def management_changes_allowed(self, host: str) -> bool:
        allowed = self.allow_management_changes
        return allowed if isinstance(allowed, bool) else host in allowed

    @model_validator(mode="after")
    def _tables_clear_of_reserved(self) -> NetworkSection:
        last = self.route_table_base + max(len(self.rails) + len(self.bonds), 1) - 1
        if self.route_table_base <= 255 and last >= 253:
            raise ValueError(
                f"route_table_base {self.route_table_base} gives tables up to {last}, which collides with the "
                "kernel's default/main/local tables (253-255); use 100 or 1000"
            )
        return self


class SafeApplySection(Section):
    """How a disruptive network or driver change is guarded ("commit confirmed")."""

    revert_after_s: float = Field(default=120.0, ge=30, le=3600)
    """Before a disruptive change the host arms a timer that restores the old files and network configuration
    after this many seconds, unless the wizard reached it over a new SSH connection and disarmed it first."""
    confirm_within_s: float = Field(default=45.0, ge=5, le=3000)
    """How long the wizard keeps trying a new SSH connection after the change (an 802.3ad bond can take tens of
    seconds to negotiate). Must be shorter than revert_after_s."""

    @model_validator(mode="after")
    def _confirm_before_revert(self) -> SafeApplySection:
        if self.confirm_within_s + 10 > self.revert_after_s:
            raise ValueError(
                f"confirm_within_s ({self.confirm_within_s:g}) must end at least 10 s before revert_after_s "
                f"({self.revert_after_s:g}): the wizard must be able to disarm the revert in time"
            )
        return self


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
    cnp_dscp: int = Field(default=48, ge=0, le=63)
    """DSCP of the congestion notification packets ECN/DCQCN sends (ecn/roce_np/cnp_dscp); 48 -> priority 6."""
    cnp_priority: int = Field(default=6, ge=0, le=7)
    """802.1p priority of the CNPs (ecn/roce_np/cnp_802p_prio); must be the priority cnp_dscp maps to."""
    cable_length_m: int | None = Field(default=None, ge=1, le=999)
    """Length in metres of the longest cable from a RoCE port to its switch (or back-to-back peer). A lossless
    priority's buffer keeps headroom for what is still on the wire when a pause is sent, and ConnectX sizes it for a
    cable length: 7 m unless told (mlx5 MLX5E_DEFAULT_CABLE_LEN; `mlnx_qos --cable_len`, DCB PFC `delay`). A longer
    cable with less headroom drops packets a pause should have saved. Set on every port and kept across driver
    reloads; the SONiC and NVUE switch files use it too. Omitted: the adapter's value is left as it is."""
    stop_lldpad: bool = False
    """Stop and disable lldpad where it runs (its DCBX rewrites the PFC set by mlnx_qos). False: a host running
    lldpad fails the stage with the fix, so a site that relies on lldpad decides for itself."""

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
        if self.cnp_dscp >> 3 != self.cnp_priority:
            raise ValueError(
                f"cnp_priority {self.cnp_priority} does not match cnp_dscp {self.cnp_dscp} (DSCP {self.cnp_dscp} maps"
                f" to priority {self.cnp_dscp >> 3} with the default DSCP map)"
            )
        return self


class GpuDirectSection(Section):
    mode: Literal["auto", "dmabuf", "peermem", "off"] = "auto"
    """auto: DMA-BUF where driver and kernel support it, nvidia-peermem otherwise."""
    cuda_perftest: bool = True
    """Run one ib_write_bw --use_cuda pair between two hosts on one rail where perftest is built with CUDA."""


class NcclSection(Section):
    conf_path: str = Field(default="/etc/nccl.conf", pattern=r"^/[^\s]*$")
    """Where to write NCCL's KEY=VALUE configuration."""
    socket_ifname: InterfaceName | None = None
    """Interface for NCCL's bootstrap sockets; default: the management interface found by discovery."""
    test: Literal["nccl-tests", "torch", "none"] = "nccl-tests"
    """Cross-host test: nccl-tests all_reduce_perf, a PyTorch torch.distributed all_reduce, or none."""
    min_busbw_gbytes: float = Field(default=9.0, gt=0)
    """Pass mark for inter-node all_reduce bus bandwidth at >= 1 GiB messages, in GB/s."""
    tests_path: str = Field(default="/opt/nccl-tests/build", pattern=r"^/[^\s]*$")
    """Directory holding all_reduce_perf (an MPI=1 build), at the same path on every host."""
    tests_source: str = Field(default="/opt/nccl-tests", pattern=r"^/[^\s]*$")
    """nccl-tests source tree on every host, used when all_reduce_perf must be built."""
    tests_git_ref: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")
    """Tag of github.com/NVIDIA/nccl-tests the wizard may clone into tests_source when that is empty, e.g.
    v2.17.9. None: never download; the operator provides the source tree."""
    cuda_home: str | None = Field(default=None, pattern=r"^/[^\s]*$")
    """CUDA toolkit with nvcc for the build. None: /usr/local/cuda, else the CUDA release libnccl2 was built for
    (its compiler and runtime headers are installed from the CUDA repository)."""
    mpi_home: str | None = Field(default=None, pattern=r"^/[^\s]*$")
    """Open MPI prefix for the build. None: the distribution's, /usr/lib/<multiarch>/openmpi."""
    nccl_home: str = Field(default="/usr", pattern=r"^/[^\s]*$")
    """NCCL prefix for the build; /usr means the libnccl2/libnccl-dev packages (installed when missing)."""
    mpirun: str = Field(default="mpirun", pattern=r"^[^\s]+$")
    """mpirun command or absolute path, run as the SSH user on the first host; it reaches the others over ssh."""
    torchrun: str = Field(default="torchrun", pattern=r"^[^\s]+$")
    """torchrun command or absolute path (e.g. in a venv) for nccl.test: torch, on every host."""
    master_port: TcpPort = 29500
    """TCP port of torchrun's rendezvous on the first host's management address (nccl.test: torch)."""
    test_timeout_s: float = Field(default=900.0, ge=30, le=7200)
    """Stop the cross-host run after this many seconds (a hang usually means blocked TCP or a broken path)."""


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
    layout: Literal["auto", "replicas", "span"] = "auto"
    """auto: one replica per node (TP = GPUs per node) when the model fits one node with KV-cache room, else span;
    replicas: always one independent engine per node; span: one TP x PP group across nodes, as the two sizes say."""
    executor_backend: Literal["ray", "mp"] = "ray"
    """vLLM distributed executor backend across nodes."""
    port: TcpPort = 8000
    """OpenAI-compatible API port on the head node."""
    entry_port: TcpPort | None = 8080
    """Port of the one OpenAI-compatible entry point (nginx) that spreads requests over the replicas, with passive
    health checks and retries; installed when there are two replicas or more. None: no entry point."""
    entry_host: str | None = None
    """Host that runs the entry point. None: the head of the first replica."""
    ray_port: TcpPort = 6379
    """Ray GCS port on the head node."""
    max_model_len: int = Field(default=8192, ge=256, le=1_048_576)
    """Maximum context length to serve."""
    venv: str = Field(default="/opt/roce-wizard/venv", pattern=r"^/[^\s]*$")
    """Python venv on every host that vLLM/SGLang (and Ray) are pip-installed into; created when missing."""
    engine_version: str | None = Field(default=None, pattern=r"^\d+\.\d+(\.\d+)?(\.post\d+)?(\+[a-z0-9]+)?$")
    """Pin the engine release (e.g. 0.11.0, or a CUDA build such as 0.11.0+cu129) so every host runs the same one.
    None: the newest release, as the build the host's NVIDIA driver runs (CUDA 12.9 below driver 580)."""
    index_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    """A package index (mirror) pip uses instead of PyPI, e.g. an air-gapped devpi or Artifactory."""
    params_billion: float | None = Field(default=None, gt=0, le=10_000)
    """Parameter count in billions, for a model not in the wizard's size table (used to check that it fits)."""
    dtype: Literal["bf16", "fp16", "fp8", "int4"] | None = None
    """Weight dtype to size the model with; fp8 on a 16-bit model serves it with online FP8 quantization."""
    gpu_memory_utilization: float = Field(default=0.9, ge=0.1, le=0.98)
    """Share of each GPU's memory the engine may use (vLLM --gpu-memory-utilization); also the fit budget."""
    api_host: str = "0.0.0.0"
    """Address the OpenAI-compatible API binds to on the head node."""
    dist_port: TcpPort = 29501
    """torch.distributed rendezvous port on the head (vLLM mp --master-port, SGLang --dist-init-addr)."""
    ray_auth: Literal["token", "off"] = "token"
    """Ray token authentication (Ray >= 2.52, CVE-2025-62593): a shared token generated once and copied to
    every host, mode 0600. off: anyone reaching the Ray port can run code on the cluster."""
    hf_home: str | None = Field(default=None, pattern=r"^/[^\s]*$")
    """Hugging Face cache directory for the weights (HF_HOME). None: root's ~/.cache/huggingface."""
    offline: bool = False
    """The hosts cannot reach Hugging Face: serve from the cache in hf_home (HF_HUB_OFFLINE=1), download nothing."""
    ready_timeout_s: float = Field(default=1800, ge=10, le=86_400)
    """How long the health check waits for the API after a (re)start: loading 140 GB of weights takes minutes."""
    probe_requests: int = Field(default=16, ge=1, le=1024)
    """Completion requests of the latency/throughput probe."""
    probe_concurrency: int = Field(default=4, ge=1, le=256)
    """Requests in flight at once during the probe."""
    probe_max_tokens: int = Field(default=128, ge=1, le=8192)
    """max_tokens of each probe request."""

    @field_validator("api_host")
    @classmethod
    def _api_host_is_an_address(cls, value: str) -> str:
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address to bind to (e.g. 0.0.0.0 or 127.0.0.1)") from None


def split_jump(text: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` (ssh -J and ProxyJump syntax; an IPv6 address with a port is written ``[addr]:port``)
    as (user, host, port); ValueError with the reason when it is not one."""
    user, at, rest = text.strip().rpartition("@")
    port: str | None = None
    if rest.startswith("["):
        host, bracket, tail = rest[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise ValueError(f"{text!r}: write an IPv6 address with a port as [address]:port")
        port = tail[1:] or None
    elif rest.count(":") == 1:
        host, _, port = rest.partition(":")
    else:
        host = rest  # a bare IPv6 address has several colons and no port
    if not host or (at and not user) or any(c.isspace() for c in text.strip()):
        raise ValueError(f"{text!r} is not [user@]host[:port]")
    if port is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(f"{text!r}: port {port!r} is not a number from 1 to 65535")
    return user or None, host, int(port) if port is not None else None


class JumpHost(Section):
    """A bastion (jump host): the wizard keeps one SSH connection to it and opens each host's SSH connection as a
    channel tunnelled inside it, as ``ssh -J`` does. Written ``[user@]address[:port]`` (``ops@10.0.0.1:2222``) or
    as a mapping of the keys below. What is not given comes from ~/.ssh/config's entry for the address (HostName,
    Port, User, IdentityFile, and its own ProxyJump), then from ssh.user and ssh.identity_file, then port 22. Its host
    key is checked against the same known_hosts as the hosts' (ssh.known_hosts), under ssh.accept_new_host_keys."""

    address: HostAddress
    """Bastion address or DNS name, or a Host alias of ~/.ssh/config."""
    port: TcpPort | None = None
    """SSH port of the bastion. Default: ~/.ssh/config's Port for it, else 22."""
    user: str | None = Field(default=None, pattern=r"^[a-z_][a-z0-9_.-]{0,31}$")
    """Login user on the bastion. Default: ~/.ssh/config's User for it, else ssh.user."""
    identity_file: str | None = None
    """Private key for the bastion (path only; never the key). Default: ~/.ssh/config's IdentityFile for it, else
    ssh.identity_file, else the agent and the usual key files."""

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: object) -> object:
        if not isinstance(data, str):
            return data
        if "," in data:
            raise ValueError(f"{data!r}: one bastion here; a chain of bastions goes in ~/.ssh/config (ProxyJump a,b)")
        user, host, port = split_jump(data)
        return {"address": host, **({"port": port} if port else {}), **({"user": user} if user else {})}
