"""Who serves what: head and ranks, per-node fabric facts for the environment, and every refusal with numbers."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from steps.discovery_facts import DiscoveryFacts
from steps.inference_fabric import roce_ports
from steps.inference_models import fit, has_nvlink, resolve_spec
from wizard.answer_sections import InferenceSection
from wizard.step import ClusterView


@dataclass(frozen=True)
class Node:
    """One serving host with the facts its environment is built from."""

    host: str
    rank: int
    ip: str
    ifname: str
    hcas: tuple[str, ...]
    gpus: int
    gpu_driver: str | None
    rails: tuple[str, ...] = ()  # subnet of each HCA, same order


@dataclass
class Layout:
    """The serving group: nodes[0] is the head (first host of the answers), every other node joins it."""

    nodes: list[Node] = field(default_factory=list)
    per_node_gpus: int = 0
    idle: dict[str, str] = field(default_factory=dict)
    blockers: list[str] = field(default_factory=list)
    host_blockers: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    quantization: str | None = None

    @property
    def head(self) -> Node | None:
        return self.nodes[0] if self.nodes else None

    def node(self, host: str) -> Node | None:
        return next((n for n in self.nodes if n.host == host), None)

    def refusals(self, host: str) -> list[str]:
        """Blockers for ``host``: its own, then the group's (a group missing one member cannot serve)."""
        own = self.host_blockers.get(host, [])
        others = [
            f"{name} cannot join the serving group: {reason.removeprefix(f'{name}: ')}"
            for name, reasons in self.host_blockers.items()
            if name != host
            for reason in reasons
        ]
        return own + self.blockers + others


def _node(view: ClusterView, host: str, rank: int, layout: Layout) -> Node | None:
    raw = view.stage_facts(host, "discovery")
    problems = layout.host_blockers.setdefault(host, [])
    if not raw:
        problems.append(f"no discovery facts for {host}; run the discovery stage first")
        return None
    facts = DiscoveryFacts.model_validate(raw)
    if not facts.sudo_ok:
        problems.append(f"{host}: sudo is refused ({facts.sudo_error or 'no detail'}); units are installed as root")
        return None
    ifname = view.answers.nccl.socket_ifname or facts.ssh_interface
    if not ifname:
        problems.append(
            f"{host}: the management interface is unknown (SSH address {facts.ssh_server_address} is on no"
            " interface); set nccl.socket_ifname to the interface Ray, Gloo and NCCL bootstrap should use"
        )
        return None
    cidrs = facts.other_interfaces.get(ifname) or next((p.ipv4 for p in facts.ports if p.netdev == ifname), [])
    ip = facts.ssh_server_address if ifname == facts.ssh_interface else None
    ip = ip or (cidrs[0].split("/")[0] if cidrs else None)
    if not ip:
        problems.append(f"{host}: interface {ifname} has no IPv4 address for Ray/Gloo/NCCL bootstrap")
        return None
    ports = roce_ports(facts, (view.stage_facts(host, "inference") or {}).get("rdma") or {})
    hcas = [p for p in ports if p.usable]
    if not hcas:
        listed = ", ".join(p.describe() for p in ports) or "none"
        problems.append(
            f"{host}: no RDMA port is ACTIVE with an IPv4 RoCE v2 GID (ports: {listed}); NCCL would fall back to"
            " TCP sockets. Run the network and roce stages first: roce-wizard --answers FILE --from network"
        )
        return None
    if not facts.gpus:
        problems.append(f"{host}: no GPUs found by nvidia-smi; install the NVIDIA driver first")
        return None
    names = tuple(p.hca for p in hcas)
    return Node(host, rank, ip, ifname, names, len(facts.gpus), facts.gpu_driver, tuple(p.rail for p in hcas))


def _common_rails(layout: Layout) -> None:
    """Give NCCL only rails usable on every serving host: a rail down on one side cannot carry traffic."""
    if len(layout.nodes) < 2:
        return
    common = set.intersection(*(set(n.rails) for n in layout.nodes))
    if not common:
        layout.blockers.append(
            "no rail subnet is usable on every serving host: "
            + "; ".join(f"{n.host} has {', '.join(n.rails)}" for n in layout.nodes)
        )
        return
    for i, node in enumerate(layout.nodes):
        dropped = [f"{hca} ({rail})" for hca, rail in zip(node.hcas, node.rails, strict=True) if rail not in common]
        if dropped:
            layout.notes.append(
                f"{node.host}: leaving {', '.join(dropped)} out of NCCL_IB_HCA because the rail is not usable on"
                " every serving host; fix its link and re-run to get all rails back"
            )
        keep = [(h, r) for h, r in zip(node.hcas, node.rails, strict=True) if r in common]
        layout.nodes[i] = replace(node, hcas=tuple(h for h, _ in keep), rails=tuple(r for _, r in keep))


def _gpus(view: ClusterView, hosts: list[str]) -> tuple[int, str]:
    """Smallest GPU memory and its board name across ``hosts`` (the group is as strong as its weakest GPU)."""
    sizes: list[tuple[int, str]] = []
    for host in hosts:
        raw = view.stage_facts(host, "discovery") or {}
        for gpu in DiscoveryFacts.model_validate(raw).gpus if raw else []:
            if gpu.memory_mib:
                sizes.append((gpu.memory_mib, gpu.name))
    return min(sizes) if sizes else (0, "GPU")


def build_layout(view: ClusterView) -> Layout:
    """Pure: the serving group for the answers and facts, with blockers that carry the numbers."""
    cfg: InferenceSection = view.answers.inference
    layout = Layout()
    hosts = [h.name for h in view.answers.hosts]
    tp, pp = cfg.tensor_parallel_size, cfg.pipeline_parallel_size
    world = tp * pp
    counts = []
    for host in hosts:
        raw = view.stage_facts(host, "discovery")
        counts.append(len(DiscoveryFacts.model_validate(raw).gpus) if raw else 0)
    per_node = min((c for c in counts if c), default=0)
    if per_node == 0:
        layout.blockers.append("no GPUs were discovered on any host; run discovery on hosts with NVIDIA GPUs")
        return layout
    layout.per_node_gpus = per_node
    if tp <= per_node and per_node % tp:
        layout.blockers.append(
            f"tensor_parallel_size {tp} does not divide the {per_node} GPUs per node; use one of "
            + ", ".join(str(d) for d in range(1, per_node + 1) if per_node % d == 0)
        )
    elif tp > per_node and tp % per_node:
        layout.blockers.append(
            f"tensor_parallel_size {tp} spans nodes but is not a multiple of the {per_node} GPUs per node"
        )
    if world > per_node and world % per_node:
        layout.blockers.append(
            f"TP {tp} x PP {pp} = {world} GPUs is not a whole number of {per_node}-GPU nodes; vLLM and SGLang"
            " split ranks evenly across nodes"
        )
    nodes_needed = max(1, -(-world // per_node))
    if nodes_needed > len(hosts):
        layout.blockers.append(
            f"TP {tp} x PP {pp} = {world} GPUs needs {nodes_needed} nodes of {per_node} GPUs, the answers list"
            f" {len(hosts)} host(s) ({len(hosts) * per_node} GPUs)"
        )
        nodes_needed = len(hosts)
    serving = hosts[:nodes_needed]
    for host in hosts[nodes_needed:]:
        layout.idle[host] = (
            f"not part of the serving group: TP {tp} x PP {pp} = {world} GPUs fit on {', '.join(serving)}"
        )
    for rank, host in enumerate(serving):
        node = _node(view, host, rank, layout)
        if node is not None:
            layout.nodes.append(node)
    layout.host_blockers = {h: r for h, r in layout.host_blockers.items() if r}
    _common_rails(layout)
    _size_rules(view, serving, layout)
    _operator_notes(view, layout)
    return layout


def _operator_notes(view: ClusterView, layout: Layout) -> None:
    cfg = view.answers.inference
    layout.notes.append(
        f"every serving host downloads {cfg.model} from Hugging Face on its first start"
        + (
            " (a gated repository: accept its licence and run `hf auth login` as root on every host first)"
            if cfg.model.startswith("meta-llama/")
            else ""
        )
        + "; set inference.hf_home to a pre-filled cache on air-gapped hosts"
    )
    if len(layout.nodes) > 1 and layout.head is not None:
        ports = (
            f"Ray {cfg.ray_port} and its worker ports"
            if cfg.engine == "vllm" and cfg.executor_backend == "ray"
            else (f"torch.distributed {cfg.dist_port}")
        )
        layout.notes.append(
            f"TCP between the hosts' management addresses must be open ({ports}, NCCL/Gloo bootstrap on ephemeral"
            f" ports); the API on {cfg.api_host}:{cfg.port} has no authentication, keep it on a trusted network"
        )


def _size_rules(view: ClusterView, serving: list[str], layout: Layout) -> None:
    cfg = view.answers.inference
    tp, pp = cfg.tensor_parallel_size, cfg.pipeline_parallel_size
    memory, name = _gpus(view, serving)
    spec, unknown = resolve_spec(cfg.model, cfg.params_billion, cfg.dtype)
    if spec is None:
        layout.blockers.append(unknown or "unknown model size")
        return
    if memory == 0:
        layout.blockers.append("GPU memory size unknown (nvidia-smi memory.total missing); cannot check the fit")
        return
    published = resolve_spec(cfg.model, None, None)[0]
    if published is not None and spec.dtype != published.dtype:
        if spec.dtype == "fp8" and published.dtype in ("bf16", "fp16"):
            layout.quantization = "fp8"
            layout.notes.append(
                f"{cfg.model} is published in {published.dtype}; serving it with online FP8 quantization"
                " (--quantization fp8, supported on Ada/Hopper GPUs)"
            )
        else:
            layout.blockers.append(
                f"{cfg.model} is published in {published.dtype}; dtype {spec.dtype} needs a checkpoint quantized"
                " that way (pick its quantized model id and set params_billion/dtype), or use fp8"
            )
            return
    result = fit(
        cfg.model,
        spec,
        tp=tp,
        pp=pp,
        gpu_memory_mib=memory,
        gpu_name=name,
        utilization=cfg.gpu_memory_utilization,
        max_model_len=cfg.max_model_len,
    )
    (layout.notes if result.ok else layout.blockers).append(("fits: " if result.ok else "refused: ") + result.message)
    if tp > 1 and not has_nvlink(name):
        layout.notes.append(
            f"{name} has no NVLink: TP {tp} all-reduces run over PCIe every layer; vLLM's docs prefer pipeline"
            " parallelism on such GPUs (e.g. tensor_parallel_size 1 with pipeline_parallel_size = GPUs) for throughput"
        )
    if tp > layout.per_node_gpus:
        layout.notes.append(
            f"TP {tp} spans nodes: every layer's all-reduce crosses the RoCE rails; TP = GPUs per node with PP ="
            " nodes is the documented layout"
        )
