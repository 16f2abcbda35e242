"""Who serves what: head and ranks, per-node fabric facts for the environment, and every refusal with numbers."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from steps.discovery.facts import DiscoveryFacts
from steps.inference.choice import choose, endpoint, numa_notes, qos_in_use, size_rules
from steps.inference.fabric import roce_ports
from wizard.engine.step import ClusterView


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
    qos: bool = False  # the roce stage's QoS unit is in use here: the serving units Require= and start After= it
    group: int = 0  # the serving group (replica) this node belongs to; rank is its place inside that group


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
    cast_dtype: str | None = None
    """"half": bf16 weights cast to fp16 at load (GPUs before compute capability 8.0 have no bf16: V100, T4)."""
    mode: str = "span"  # "replicas": independent serving groups of ``nodes_per_group`` nodes; "span": one group
    tp: int = 1
    pp: int = 1
    nodes_per_group: int = 1  # for span: every serving node
    assigned: dict[str, int] = field(default_factory=dict)  # serving host -> its group, whether or not it can serve

    @property
    def replicas(self) -> bool:
        return self.mode == "replicas"

    @property
    def head(self) -> Node | None:
        """Head of the first group (the only one with layout span)."""
        return self.nodes[0] if self.nodes else None

    @property
    def group_size(self) -> int:
        """Nodes in one serving group."""
        return self.nodes_per_group if self.replicas else len(self.nodes)

    @property
    def single_node(self) -> bool:
        """Every group is one node: no Ray, no rendezvous, nothing crosses the fabric while serving."""
        return self.replicas and self.nodes_per_group == 1

    def groups(self) -> list[list[Node]]:
        """The serving groups in order, each with its head (rank 0) first."""
        found: dict[int, list[Node]] = {}
        for node in self.nodes:
            found.setdefault(node.group, []).append(node)
        return [sorted(members, key=lambda n: n.rank) for _, members in sorted(found.items())]

    def members(self, node: Node) -> list[Node]:
        """The nodes of ``node``'s serving group, head first."""
        return next((g for g in self.groups() if node in g), [node])

    def head_of(self, node: Node) -> Node:
        return self.members(node)[0]

    def api_nodes(self) -> list[Node]:
        """Nodes that serve the OpenAI API: the head of every group."""
        return [group[0] for group in self.groups()]

    def effective(self, view: ClusterView) -> ClusterView:
        """The view with the layout's TP/PP (and, for one-node replicas, no Ray: vLLM's mp backend is enough)."""
        cfg = view.answers.inference
        update: dict[str, object] = {"tensor_parallel_size": self.tp, "pipeline_parallel_size": self.pp}
        if self.single_node:
            update["executor_backend"] = "mp"
        answers = view.answers.model_copy(update={"inference": cfg.model_copy(update=update)})
        return ClusterView(answers, view.facts)

    def node(self, host: str) -> Node | None:
        return next((n for n in self.nodes if n.host == host), None)

    def refusals(self, host: str) -> list[str]:
        """Blockers for ``host``: its own, then the group's (a group missing one member cannot serve)."""
        own = self.host_blockers.get(host, [])
        # A replica serves without the others: only trouble inside its own group stops it.
        mine = self.assigned.get(host)
        others = [
            f"{name} cannot join the serving group: {reason.removeprefix(f'{name}: ')}"
            for name, reasons in self.host_blockers.items()
            if name != host and (not self.replicas or self.assigned.get(name) == mine)
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
    layer = view.answers.fabric.link_layer_of(host)
    ports = roce_ports(facts, (view.stage_facts(host, "inference") or {}).get("rdma") or {}, layer)
    hcas = [p for p in ports if p.usable]
    if not hcas:
        listed = ", ".join(p.describe() for p in ports) or "none"
        wanted = "ACTIVE (the SM swept it)" if layer == "infiniband" else "ACTIVE with an IPv4 RoCE v2 GID"
        problems.append(
            f"{host}: no RDMA port is {wanted} (ports: {listed}); NCCL would fall back to"
            " TCP sockets. Run the network and roce stages first: roce-wizard --answers FILE --from network"
        )
        return None
    if not facts.gpus:
        problems.append(f"{host}: no GPUs found by nvidia-smi; install the NVIDIA driver first")
        return None
    names = tuple(p.hca for p in hcas)
    qos, why = qos_in_use(view, host)
    if (view.stage_facts(host, "inference") or {}).get("qos_unit", {}).get("active") == "failed":
        problems.append(
            f"{host}: roce-wizard-qos.service failed, so DSCP trust/PFC may be missing and NCCL would run on a lossy"
            f" class. Fix: journalctl -u roce-wizard-qos.service on {host}, then roce-wizard --answers FILE --from roce"
        )
        return None
    if why:
        layout.notes.append(why)
    rails = tuple(p.rail for p in hcas)
    return Node(host, rank, ip, ifname, names, len(facts.gpus), facts.gpu_driver, rails, qos)


def _common_rails(layout: Layout) -> None:
    """Give NCCL only rails usable on every host of a group: a rail down on one side cannot carry traffic."""
    for group in layout.groups():
        if len(group) < 2:
            continue
        common = set.intersection(*(set(n.rails) for n in group))
        if not common:
            layout.host_blockers.setdefault(group[0].host, []).append(
                "no rail subnet is usable on every host of its serving group: "
                + "; ".join(f"{n.host} has {', '.join(n.rails)}" for n in group)
            )
            continue
        for node in group:
            dropped = [f"{hca} ({rail})" for hca, rail in zip(node.hcas, node.rails, strict=True) if rail not in common]
            if dropped:
                layout.notes.append(
                    f"{node.host}: leaving {', '.join(dropped)} out of NCCL_IB_HCA because the rail is not usable on"
                    " every host of its serving group; fix its link and re-run to get all rails back"
                )
            keep = [(h, r) for h, r in zip(node.hcas, node.rails, strict=True) if r in common]
            i = layout.nodes.index(node)
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
    layout = Layout()
    hosts = [h.name for h in view.answers.hosts]
    counts = []
    for host in hosts:
        raw = view.stage_facts(host, "discovery")
        counts.append(len(DiscoveryFacts.model_validate(raw).gpus) if raw else 0)
    per_node = min((c for c in counts if c), default=0)
    if per_node == 0:
        layout.blockers.append("no GPUs were discovered on any host; run discovery on hosts with NVIDIA GPUs")
        return layout
    layout.per_node_gpus = per_node
    choice = choose(view, hosts, per_node, *_gpus(view, hosts))
    layout.mode, layout.tp, layout.pp = choice.mode, choice.tp, choice.pp
    layout.notes += choice.notes
    layout.blockers += choice.blockers
    if layout.replicas and layout.tp * layout.pp <= per_node:
        return _replicas(view, hosts, layout)
    tp, pp = layout.tp, layout.pp
    world = tp * pp
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
    count = max(1, len(hosts) // nodes_needed) if layout.replicas else 1
    layout.nodes_per_group = nodes_needed
    serving = hosts[: nodes_needed * count]
    for host in hosts[len(serving) :]:
        layout.idle[host] = (
            f"not part of a serving group: {count} replicas of {nodes_needed} nodes (TP {tp} x PP {pp}) use"
            f" {len(serving)} of the {len(hosts)} hosts"
            if layout.replicas
            else f"not part of the serving group: TP {tp} x PP {pp} = {world} GPUs fit on {', '.join(serving)}"
        )
    for i, host in enumerate(serving):
        layout.assigned[host] = i // nodes_needed
        node = _node(view, host, i % nodes_needed, layout)
        if node is not None:
            layout.nodes.append(replace(node, group=i // nodes_needed))
    layout.host_blockers = {h: r for h, r in layout.host_blockers.items() if r}
    _common_rails(layout)
    size_rules(view, serving, layout, _gpus(view, serving))
    if layout.replicas:
        layout.notes.append(
            f"{count} replicas of {nodes_needed} nodes each (TP {tp} x PP {pp}): "
            + "; ".join(f"replica {g + 1}: {', '.join(n.host for n in grp)}" for g, grp in enumerate(layout.groups()))
        )
    _operator_notes(view, layout)
    return layout


def _replicas(view: ClusterView, hosts: list[str], layout: Layout) -> Layout:
    """One engine per node, each rank 0 of its own group: no Ray, no rendezvous, no rail shared between replicas."""
    cfg = view.answers.inference
    for i, host in enumerate(hosts):
        layout.assigned[host] = i
        node = _node(view, host, 0, layout)
        if node is not None:
            layout.nodes.append(replace(node, group=i))
            layout.notes += numa_notes(view, host, layout.tp)
    layout.host_blockers = {h: r for h, r in layout.host_blockers.items() if r}
    size_rules(view, hosts, layout, _gpus(view, hosts))
    if cfg.engine == "vllm" and cfg.executor_backend == "ray":
        layout.notes.append(
            "no Ray units with replicas: a single-node vLLM runs its TP workers with the multiprocessing backend"
            " (--distributed-executor-backend mp), so roce-wizard-ray.service is not installed (an existing one is"
            " stopped and disabled) and Ray is not pip-installed; layout span brings Ray back"
        )
    if cfg.api_host not in ("0.0.0.0", "::", "127.0.0.1", "::1") and len(hosts) > 1:
        layout.blockers.append(
            f"inference.api_host {cfg.api_host} is one address, but every replica binds the API on its own host."
            " Fix: api_host 0.0.0.0 (the API key guards it) or 127.0.0.1 behind a local proxy"
        )
    listed = ", ".join(f"{endpoint(cfg, n.ip)} ({n.host})" for n in layout.nodes)
    if listed:
        layout.notes.append(
            f"endpoints: {listed}; each replica checks the API key in its host's {API_KEY_NOTE}"
            + (
                f". Clients use the entry point on port {cfg.entry_port} (nginx on the first replica's head), which"
                " spreads them over the replicas; every replica then holds the same key"
                if cfg.entry_port is not None and len(layout.nodes) > 1
                else ""
            )
        )
    _operator_notes(view, layout)
    return layout


API_KEY_NOTE = "/etc/roce-wizard/inference-api-key.env (0600, generated on the host, never leaves it)"


def _operator_notes(view: ClusterView, layout: Layout) -> None:
    cfg = view.answers.inference
    layout.notes.append(
        f"every serving host downloads {cfg.model} once, before its engine starts (`hf download`, resumable)"
        + (
            " (a gated repository: accept its licence and run `hf auth login` as root on every host first)"
            if cfg.model.startswith("meta-llama/")
            else ""
        )
        + "; air-gapped hosts: inference.offline with a pre-filled cache in inference.hf_home"
    )
    if len(layout.nodes) > 1 and layout.head is not None and not layout.single_node:
        ports = (
            f"Ray {cfg.ray_port} and its worker ports"
            if cfg.engine == "vllm" and cfg.executor_backend == "ray"
            else (f"torch.distributed {cfg.dist_port}")
        )
        layout.notes.append(
            f"TCP between the hosts' management addresses must be open ({ports}, NCCL/Gloo bootstrap on ephemeral"
            f" ports); the API on {cfg.api_host}:{cfg.port} of {', '.join(n.host for n in layout.api_nodes())}"
            " requires the key in"
            f" {API_KEY_NOTE}; vLLM leaves routes outside /v1 open, so keep the port on a trusted network"
        )
