"""Replicas or one serving group across nodes: the numbers that decide it, the endpoints and the NUMA warning."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from steps.discovery.facts import DiscoveryFacts
from steps.inference.models import fit, has_nvlink, resolve_spec
from wizard.answers.sections import InferenceSection
from wizard.engine.step import ClusterView
from wizard.parsers import ParseError, parse

if TYPE_CHECKING:
    from steps.inference.layout import Layout

# Per direction, x16 link: PCIe 4.0 moves ~32 GB/s (16 GT/s x 16 lanes, 128b/130b), PCIe 5.0 twice that (PCI-SIG).
PCIE4_X16_GBPS = 32.0


@dataclass
class Choice:
    """The layout the answers and the facts call for, with the operator notes that explain it."""

    mode: str  # "replicas": every node serves the model alone; "span": one TP x PP group over several nodes
    tp: int
    pp: int
    notes: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)


def fabric_gbps(view: ClusterView, host: str) -> float:
    """Sum of the link speeds of the host's RDMA rail ports (not the SSH one): its share of the fabric. An IB port
    counts at its trained rate; a RoCE port at its Ethernet speed."""
    raw = view.stage_facts(host, "discovery") or {}
    facts = DiscoveryFacts.model_validate(raw) if raw else DiscoveryFacts()
    layer = view.answers.fabric.link_layer_of(host)
    total = 0.0
    for p in facts.ports:
        if not p.netdev or p.netdev == facts.ssh_interface:
            continue
        if p.ib is not None and layer != "ethernet":
            total += p.ib.rate_gbps or 0
        elif (p.link_layer or "Ethernet") == "Ethernet" and layer != "infiniband":
            total += (p.speed_mbps or 0) / 1000
    return total


def gpu_topology(topo_text: str) -> dict[str, Any] | None:
    """``nvidia-smi topo -m`` -> {"nvlink": any NV# link between GPUs, "numa": {gpu index: NUMA node}}."""
    try:
        topo = parse("nvidia_smi_topo", topo_text)
    except ParseError:
        return None
    links = [code for a in topo.gpus for b, code in topo.matrix.get(a, {}).items() if b in topo.gpus and a != b]
    numa = {gpu.removeprefix("GPU"): topo.numa_affinity.get(gpu) for gpu in topo.gpus}
    return {"nvlink": any(code.startswith("NV") for code in links), "numa": numa}


def choose(view: ClusterView, hosts: list[str], per_node: int, memory_mib: int, gpu_name: str) -> Choice:
    """auto: replicas when one node holds the weights with KV-cache room, else the answers' TP x PP across nodes."""
    cfg: InferenceSection = view.answers.inference
    span = Choice("span", cfg.tensor_parallel_size, cfg.pipeline_parallel_size)
    if cfg.layout == "span":
        span.notes.append(
            f"layout span (inference.layout): one serving group, TP {span.tp} x PP {span.pp}, as the answers ask"
        )
        return span
    spec, _ = resolve_spec(cfg.model, cfg.params_billion, cfg.dtype)
    if spec is None or memory_mib == 0:
        if cfg.layout == "replicas":
            return Choice("replicas", per_node, 1)
        return span  # the size rules refuse with the reason
    one = fit(
        cfg.model,
        spec,
        tp=per_node,
        pp=1,
        gpu_memory_mib=memory_mib,
        gpu_name=gpu_name,
        utilization=cfg.gpu_memory_utilization,
        max_model_len=cfg.max_model_len,
    )
    fabric = min((fabric_gbps(view, h) for h in hosts), default=0.0)
    nvlink = has_nvlink(gpu_name)
    inside = "NVLink" if nvlink else f"PCIe (~{PCIE4_X16_GBPS:g} GB/s per direction at Gen4 x16)"
    numbers = (
        f"{spec.params_billion:g}B x {one.weights_gb / spec.params_billion:g} byte(s) = {one.weights_gb:.0f} GB of"
        f" weights; one node has {per_node} x {gpu_name} = {per_node * memory_mib / 1024:.0f} GiB, and with TP"
        f" {per_node} each GPU holds {one.weights_per_gpu_gib:.1f} GiB of weights and keeps {one.kv_per_gpu_gib:.1f}"
        f" GiB for the KV cache (>= {one.kv_needed_gib:.1f} GiB needed)"
    )
    if one.ok:
        choice = Choice("replicas", per_node, 1)
        choice.notes.append(
            f"layout replicas (inference.layout {cfg.layout}): {numbers}, so every node serves {cfg.model} alone:"
            f" {len(hosts)} replica(s) of TP {per_node}, no serving traffic between the nodes. Spanning TP"
            f" {cfg.tensor_parallel_size} x PP {cfg.pipeline_parallel_size} would push activations between nodes"
            f" over {fabric:g} Gb/s ({fabric / 8:g} GB/s) of RoCE rails per node, slower than the GPUs' own {inside},"
            " and leave one server instead of several; set inference.layout: span to force it"
        )
        return choice
    group = max(1, -(-span.tp * span.pp // per_node))
    if cfg.layout == "replicas" or (cfg.layout == "auto" and len(hosts) >= 2 * group):
        choice = Choice("replicas", span.tp, span.pp)
        choice.notes.append(
            f"layout replicas of {group} nodes (inference.layout {cfg.layout}): one node cannot hold {cfg.model}"
            f" ({numbers}), so each replica spans {group} nodes with TP {span.tp} x PP {span.pp} over {fabric:g}"
            f" Gb/s of RoCE rails per node; the {len(hosts)} hosts make {len(hosts) // group} independent replicas"
            " behind one entry point"
        )
        return choice
    span.notes.append(
        f"layout span (inference.layout auto): one node cannot hold {cfg.model} ({numbers}), so TP"
        f" {span.tp} x PP {span.pp} spans the nodes over {fabric:g} Gb/s of RoCE rails per node"
    )
    return span


def numa_notes(view: ClusterView, host: str, tp: int) -> list[str]:
    """TP over PCIe GPUs on both sockets crosses the inter-socket link: say so, from the host's own topology."""
    topo = (view.stage_facts(host, "inference") or {}).get("gpu_topology")
    if not topo or topo.get("nvlink") or tp < 2:
        return []
    numa: dict[str, str | None] = topo.get("numa") or {}
    used = [str(i) for i in range(tp) if str(i) in numa]
    nodes = sorted({numa[i] for i in used if numa[i] is not None})
    if len(nodes) < 2:
        return []
    spread = "; ".join(f"NUMA {n}: GPU{','.join(i for i in used if numa[i] == n)}" for n in nodes)
    return [
        f"{host}: TP {tp} spans both CPU sockets ({spread}) and the GPUs have no NVLink (nvidia-smi topo -m): every"
        " all-reduce crosses PCIe and the inter-socket link (UPI/xGMI). It works, but TP inside one socket (e.g."
        f" tensor_parallel_size {tp // len(nodes)} with pipeline_parallel_size {len(nodes)}) keeps it off that link"
    ]


def no_bf16(gpu_name: str) -> bool:
    """GPUs before Ampere (compute capability < 8.0) have no bf16: V100 (7.0), T4 (7.5), P100 (6.0)."""
    return any(tag in gpu_name for tag in ("V100", "T4", "P100", "P40", "Quadro RTX", "TITAN RTX"))


def endpoint(cfg: InferenceSection, ip: str) -> str:
    """The URL clients use for a node's API (the bind address when it is one address, else the node's)."""
    host = ip if cfg.api_host in ("0.0.0.0", "::") else cfg.api_host
    return f"http://{host}:{cfg.port}/v1"


def size_rules(view: ClusterView, serving: list[str], layout: Layout, gpu: tuple[int, str]) -> None:
    """Refuse a model that does not fit the layout's GPUs (with the numbers); FP8 online quantization; NVLink note."""
    cfg = view.answers.inference
    tp, pp = layout.tp, layout.pp
    memory, name = gpu
    dtype = cfg.dtype
    if dtype is None and no_bf16(name) and (known := resolve_spec(cfg.model, None, None)[0]) and known.dtype == "bf16":
        dtype = "fp16"  # the engines refuse bf16 on these GPUs; the seed served its model on V100 with --dtype=half
    spec, unknown = resolve_spec(cfg.model, cfg.params_billion, dtype)
    if spec is None:
        layout.blockers.append(unknown or "unknown model size")
        return
    if memory == 0:
        layout.blockers.append("GPU memory size unknown (nvidia-smi memory.total missing); cannot check the fit")
        return
    published = resolve_spec(cfg.model, None, None)[0]
    if published is not None and spec.dtype != published.dtype:
        if spec.dtype == "fp16" and published.dtype == "bf16":
            # a cast at load, not a quantization: same two bytes per weight (vLLM/SGLang --dtype half)
            layout.cast_dtype = "half"
            layout.notes.append(
                f"{cfg.model} is published in bf16; served as fp16 (--dtype half)"
                + (f": {name} has no bf16 (compute capability < 8.0)" if no_bf16(name) else "")
            )
        elif spec.dtype == "fp8" and published.dtype in ("bf16", "fp16"):
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


def qos_in_use(view: ClusterView, host: str) -> tuple[bool, str | None]:
    """Is the roce stage's QoS unit part of this host (its facts list RoCE ports, or the unit is installed)? The reason
    when it is not: RoCE-less and InfiniBand hosts have no lossless class to wait for."""
    roce = view.stage_facts(host, "roce") or {}
    unit = (view.stage_facts(host, "inference") or {}).get("qos_unit") or {}
    # systemctl is-enabled prints one of these for an installed unit; a missing one gives "not-found" or nothing.
    if roce.get("ports") or unit.get("enabled") in ("enabled", "enabled-runtime", "static", "disabled", "linked"):
        return True, None
    why = (
        "the roce stage found no RoCE port to configure there (InfiniBand or no ConnectX Ethernet port)"
        if roce
        else "the roce stage has not run there and roce-wizard-qos.service is not installed"
    )
    return False, f"{host}: the serving units are not ordered after roce-wizard-qos.service: {why}"
