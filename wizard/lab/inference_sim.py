"""Simulated serving world of the lab: venv packages, Ray clusters, engine groups, their fabric checks, endpoints."""

from __future__ import annotations

import ipaddress
import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wizard.lab import rdma
from wizard.lab import services as sd
from wizard.lab.gids import ROCE_V2
from wizard.lab.vfs import FsError

if TYPE_CHECKING:
    from wizard.lab.host import SimHost
    from wizard.lab.streams import Ctx

SIM = "(roce-wizard simulated)"
LATEST = {"vllm": "0.33.0", "ray": "2.60.0", "sglang": "0.5.23", "torch": "2.9.1", "uv": "0.9.7", "pip": "22.0.2",
          "huggingface-hub": "0.36.0"}  # fmt: skip
DEFAULT_MEMLOCK = "8388608"  # bytes; Ubuntu's default RLIMIT_MEMLOCK for services
# Size of the models the simulation knows, for its out-of-memory check: (billions of parameters, bytes each).
MODEL_SIZES = {
    "meta-llama/Llama-3.1-8B-Instruct": (8.03, 2),
    "meta-llama/Llama-3.1-70B-Instruct": (70.6, 2),
    "meta-llama/Llama-3.3-70B-Instruct": (70.6, 2),
    "Qwen/Qwen2.5-72B-Instruct": (72.7, 2),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-70B": (70.6, 2),
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": (32.8, 2),
    "deepseek-ai/DeepSeek-V3": (671.0, 1),
    "deepseek-ai/DeepSeek-R1": (671.0, 1),
}


@dataclass
class Proc:
    """A long-running simulated program; alive while the unit run that started it is."""

    host: SimHost
    unit: str | None
    pid: int
    env: dict[str, str]
    memlock: str
    stopped: bool = False

    def alive(self) -> bool:
        if self.stopped or self.host.state != "running":
            return False
        if self.unit is None:
            return True
        rt = self.host.units.get(self.unit)
        return rt is not None and rt.state == "active" and rt.pid == self.pid


@dataclass
class RayHead:
    proc: Proc
    ip: str
    version: str
    token: str | None  # None: token authentication off
    nodes: dict[str, tuple[Proc, str, int]] = field(default_factory=dict)  # host -> (raylet, ip, gpus)

    def live_nodes(self) -> dict[str, tuple[Proc, str, int]]:
        return {h: n for h, n in self.nodes.items() if n[0].alive()} if self.proc.alive() else {}


@dataclass
class Group:
    """torch.distributed rendezvous of one multi-node engine (vLLM mp or SGLang): rank -> (process, host)."""

    ranks: dict[int, Proc] = field(default_factory=dict)

    def live(self) -> dict[int, Proc]:
        return {r: p for r, p in self.ranks.items() if p.alive()}


@dataclass
class Endpoint:
    proc: Proc
    engine: str
    model: str
    params_billion: float
    tp: int
    pp: int
    ready: bool = False
    in_flight: int = 0
    served: int = 0
    api_key: str | None = None  # None: the API is open to anyone who reaches the port


@dataclass
class World:
    ray: dict[str, RayHead] = field(default_factory=dict)  # "ip:port" -> head
    groups: dict[str, Group] = field(default_factory=dict)  # "ip:port" -> group
    endpoints: dict[tuple[str, int], Endpoint] = field(default_factory=dict)  # (host, port)
    nginx: dict[str, Any] = field(default_factory=dict)  # host -> its running nginx (wizard/lab/nginx_sim.py)


def version_tuple(text: str) -> tuple[int, ...]:
    """'2.52.0' -> (2, 52, 0); a local build suffix (+cu129) is ignored."""
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3])


# The NCCL each PyTorch release bundles (its nvidia-nccl-cu12 pin on PyPI): torch 2.4 -> 2.20.5 ... 2.9 -> 2.27.5.
TORCH_NCCL = {
    (2, 4): "2.20.5",
    (2, 5): "2.21.5",
    (2, 6): "2.21.5",
    (2, 7): "2.26.2",
    (2, 8): "2.27.3",
    (2, 9): "2.27.5",
}
# vLLM 0.6.0-0.6.3 pinned torch==2.4.0; 0.6.4 moved to 2.5.1 (vLLM requirements-cuda.txt of those tags).
OLD_VLLM_TORCH = ((0, 6, 4), "2.4.0")


def torch_for(engine: str, version: str) -> str:
    """The torch release pip brings in with this engine release."""
    if engine == "vllm" and version_tuple(version) < OLD_VLLM_TORCH[0]:
        return OLD_VLLM_TORCH[1]
    return LATEST["torch"]


def nccl_init_lines(host: SimHost, env: dict[str, str], torch: str, pid: int) -> list[str]:
    """What the engine's NCCL prints at communicator init under NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET
    (formats of NCCL 2.21+ init.cc, net_ib.cc, net_socket.cc; empty when NCCL_DEBUG is not INFO)."""
    if env.get("NCCL_DEBUG", "").upper() != "INFO":
        return []
    version = TORCH_NCCL.get(version_tuple(torch)[:2], "2.27.5")
    prefix = f"{host.hostname}:{pid}:{pid + 3} [0] NCCL INFO"
    ifname = _ifnames(env.get("NCCL_SOCKET_IFNAME", "eno1"))[0]
    dev = host.netdevs.get(ifname)
    oob = f"{ifname}:{dev.ipv4[0].ip if dev and dev.ipv4 else '0.0.0.0'}<0>"
    lines = [
        f"{prefix} Bootstrap : Using {oob}",
        f"{prefix} cudaDriverVersion 12040",
        f"NCCL version {version}+cuda12.4",
    ]
    lines[-1] = f"{prefix} {lines[-1]}"
    lines += [f"{prefix} {k} set by environment to {v}" for k, v in sorted(env.items()) if k == "NCCL_IB_GID_INDEX"]
    if host.fault("engine_socket"):
        lines += [
            f"{prefix} NET/IB : No device found.",
            f"{prefix} NET/Socket : Using [0]{oob}",
            f"{prefix} Using network Socket",
        ]
        return lines
    hcas = _ifnames(env.get("NCCL_IB_HCA", ""))
    using = " ".join(f"[{i}]{h if ':' in h else h + ':1'}/{_layer(host, h)}" for i, h in enumerate(hcas))
    return lines + [f"{prefix} NET/IB : Using {using} [RO]; OOB {oob}", f"{prefix} Using network IB"]


def bf16_error(host: SimHost, model: str, dtype: str | None) -> str | None:
    """vLLM and SGLang load a bf16 checkpoint as bf16 unless told --dtype half; a GPU below compute capability 8.0
    has no bf16 and the engine stops at start (vllm/platforms/cuda.py check_if_supports_dtype)."""
    gpu = min(host.profile.gpus, key=lambda g: float(g.compute_cap), default=None)
    if gpu is None or float(gpu.compute_cap) >= 8.0 or dtype in ("half", "float16", "fp16", "float32", "float"):
        return None
    if model not in MODEL_SIZES or MODEL_SIZES[model][1] != 2:
        return None
    return (
        f"ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {gpu.name} GPU"
        f" has compute capability {gpu.compute_cap}. You can use float16 instead by explicitly setting the `dtype`"
        " flag in CLI, for example: --dtype=half."
    )


def _layer(host: SimHost, hca: str) -> str:
    """NCCL's net_ib prints each device's link layer after its name: "IB" or "RoCE"."""
    dev = rdma.find(host, hca.split(":")[0])
    return "IB" if dev is not None and rdma.is_ib(host, dev) else "RoCE"


# vLLM's PyPI wheels are CUDA 13 builds from 0.24 on (vllm-project/vllm PR #39878), SGLang's after 0.5.19; a torch
# with a +cu12x local version came from PyTorch's CUDA 12 index.
CUDA13_SINCE = {"vllm": (0, 24), "sglang": (0, 5, 20)}


def cuda_init_error(host: SimHost, engine: str, packages: dict[str, str]) -> str | None:
    """torch's error at CUDA init when its build needs a newer driver than the host has (CUDA 13: >= 580)."""
    torch, version = packages.get("torch", ""), packages.get(engine, "0")
    cuda13 = "+cu13" in torch or ("+cu" not in torch and version_tuple(version) >= CUDA13_SINCE[engine])
    driver = int(host.profile.nvidia_driver.split(".")[0])
    if not cuda13 or driver >= 580:
        return None
    return (
        f"RuntimeError: The NVIDIA driver on your system is too old (found version {12040 if driver < 560 else 12080})."
        " Please update your GPU driver by downloading and installing a new version from the URL:"
        " http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch"
        f" version that has been compiled with your version of the CUDA driver. {SIM}"
    )


def world(host: SimHost) -> World:
    owner = host.lab if host.lab is not None else host
    return owner.__dict__.setdefault("_inference_world", World())


def wait_s(host: SimHost) -> float:
    """How long a simulated peer wait lasts before it gives up (real engines wait minutes)."""
    return 8.0 * host.time_scale


# -- venvs -----------------------------------------------------------------------------------------------------


def venv_of(ctx: Ctx) -> str:
    """The venv a binary such as /opt/x/venv/bin/ray belongs to."""
    exe = ctx.argv[0] if "/" in ctx.argv[0] else ctx.shell.find_executable(ctx.argv[0], ctx.env.get("PATH")) or ""
    return posixpath.dirname(posixpath.dirname(ctx.fs.abspath(exe, ctx.cwd)))


def site_packages(venv: str) -> str:
    return f"{venv}/lib/python3.10/site-packages"


def installed(host: SimHost, venv: str) -> dict[str, str]:
    """name -> version from the venv's *.dist-info directories."""
    out = {}
    try:
        names = host.fs.listdir(site_packages(venv))
    except FsError:
        return {}
    for name in names:
        if name.endswith(".dist-info"):
            pkg, _, version = name.removesuffix(".dist-info").rpartition("-")
            out[pkg.replace("_", "-").lower()] = version
    return out


# -- what a process started by a unit sees -----------------------------------------------------------------------


def unit_context(ctx: Ctx) -> tuple[str | None, int, dict[str, str], str]:
    """(unit, pid, environment, LimitMEMLOCK) of the active unit whose ExecStart is this argv, else the shell's."""
    host = ctx.host
    for name, rt in host.units.items():
        unit = sd.find_unit(host, name) if rt.state in ("active", "activating") else None
        lines = unit.all("Service", "ExecStartPre") + [unit.get("Service", "ExecStart")] if unit else []
        try:
            argvs = [shlex.split(sd.expand(host, unit, x.lstrip("-@+!")).replace("%%", "%")) for x in lines]
        except ValueError:
            continue
        if unit is None or ctx.argv not in argvs:
            continue
        env = dict(ctx.env)
        for path in unit.all("Service", "EnvironmentFile"):
            optional = path.startswith("-")
            try:
                env.update(parse_env(host.fs.read_text(path.lstrip("-"))))
            except FsError:
                if not optional:
                    return name, rt.pid, {"__error__": f"Failed to load environment files: {path}"}, ""
        for assignment in unit.all("Service", "Environment"):
            env.update(parse_env("\n".join(shlex.split(assignment))))
        return name, rt.pid, env, unit.get("Service", "LimitMEMLOCK", DEFAULT_MEMLOCK)
    return None, host.pid_hint, dict(ctx.env), DEFAULT_MEMLOCK


def parse_env(text: str) -> dict[str, str]:
    out = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip().strip('"')
    return out


# -- the fabric checks NCCL, Gloo and vLLM would fail on --------------------------------------------------------


# vLLM's Ray executor hands its workers the driver's variables with these prefixes (vllm/ray/ray_env.py,
# get_env_vars_to_copy), never the worker-specific ones, and never those listed in
# $VLLM_CONFIG_ROOT/ray_non_carry_over_env_vars.json (VLLM_CONFIG_ROOT defaults to ~/.config/vllm).
COPIED_PREFIXES = ("VLLM_", "LMCACHE_", "NCCL_", "UCX_", "HF_", "HUGGING_FACE_")
WORKER_SPECIFIC = {"VLLM_HOST_IP", "VLLM_HOST_PORT", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES"}


def carried_over(head: SimHost, env: dict[str, str]) -> dict[str, str]:
    """The head's variables vLLM copies onto every Ray worker, overriding the worker's own."""
    root = env.get("VLLM_CONFIG_ROOT") or posixpath.join(env.get("XDG_CONFIG_HOME") or "/root/.config", "vllm")
    try:
        kept = set(json.loads(head.fs.read_text(f"{root}/ray_non_carry_over_env_vars.json")))
    except (FsError, ValueError, TypeError):
        kept = set()  # no file, or not a JSON list: vLLM excludes nothing (it logs a warning for bad JSON)
    return {
        k: v
        for k, v in env.items()
        if k.startswith(COPIED_PREFIXES) and k not in WORKER_SPECIFIC and k not in kept and k != "__error__"
    }


def host_has_ip(host: SimHost, ip: str) -> bool:
    return any(dev.admin_up and dev.has_addr(ip) for dev in host.netdevs.values())


def _ifnames(value: str) -> list[str]:
    return [n for n in value.lstrip("=^").split(",") if n]


def fabric_errors(host: SimHost, env: dict[str, str], memlock: str, *, vllm: bool) -> list[str]:
    """What would break NCCL/Gloo/vLLM on ``host`` with this environment (empty: the fabric facts are right)."""
    errors = []
    if "__error__" in env:
        return [env["__error__"]]
    for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        value = env.get(var)
        if not value:
            errors.append(f"{var} is not set: bootstrap traffic would pick an arbitrary interface {SIM}")
            continue
        for name in _ifnames(value):
            dev = host.netdevs.get(name)
            if dev is None or not dev.admin_up or not dev.ipv4:
                errors.append(f"NCCL WARN Bootstrap : no socket interface found ({var}={value}) {SIM}")
    if vllm and not host_has_ip(host, env.get("VLLM_HOST_IP", "")):
        errors.append(f"VLLM_HOST_IP={env.get('VLLM_HOST_IP', '')!r} is not an address of {host.name} {SIM}")
    hcas = [h.split(":") for h in _ifnames(env.get("NCCL_IB_HCA", ""))]
    if not hcas:
        errors.append(f"NCCL_IB_HCA is not set: NCCL would use every RDMA port, the management one too {SIM}")
    for parts in hcas:
        dev = rdma.find(host, parts[0])
        port_ok = len(parts) == 1 or parts[1] == "1"
        if dev is None or not port_ok:
            errors.append(f"NCCL WARN NET/IB : No device found for {':'.join(parts)} {SIM}")
            continue
        v2 = [e for _, e in rdma.gid_table(host, dev).entries() if e.type == ROCE_V2 and _is_ipv4_gid(e.gid)]
        ib = rdma.is_ib(host, dev)  # InfiniBand connects by LID: only the port state matters
        if not rdma.port_active(host, dev) or not (ib or v2):
            why = "port DOWN" if not rdma.port_active(host, dev) else "no IPv4 RoCE v2 GID"
            errors.append(f"NCCL WARN NET/IB : {dev.name}:1 unusable ({why}) {SIM}")
    if memlock not in ("infinity", "unlimited"):
        errors.append(
            f"NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory (memlock {memlock}; the unit"
            f" needs LimitMEMLOCK=infinity) {SIM}"
        )
    return errors


def _is_ipv4_gid(gid: str) -> bool:
    return ipaddress.IPv6Address(gid).ipv4_mapped is not None


def out_of_memory(host: SimHost, model: str, gpus: int, utilization: float) -> str | None:
    params, width = MODEL_SIZES.get(model, (0.0, 2))
    per_gpu_gib = params * 1e9 * width / max(gpus, 1) / 2**30
    budget = min((g.memory_mib for g in host.profile.gpus), default=0) * utilization / 1024
    if per_gpu_gib + 1.0 > budget:
        return (
            f"torch.OutOfMemoryError: CUDA out of memory. Model weights take {per_gpu_gib:.2f} GiB per GPU; the"
            f" budget is {budget:.2f} GiB {SIM}"
        )
    return None


# Mixture-of-experts models compute with their active parameters per token (model cards: DeepSeek-V3/R1 37B of
# 671B, Mixtral 8x7B 12.9B of 46.7B); the decode-time estimate below uses those.
ACTIVE_BILLION = {"deepseek-ai/DeepSeek-V3": 37.0, "deepseek-ai/DeepSeek-R1": 37.0}


def completion(ep: Endpoint, body: dict[str, Any]) -> tuple[int, dict[str, Any], float]:
    """(status, response, simulated seconds) for a /v1/completions request."""
    if body.get("model") != ep.model:
        message = f"The model `{body.get('model')}` does not exist."
        return 404, {"object": "error", "message": message, "type": "NotFoundError", "param": None, "code": 404}, 0.004
    tokens = int(body.get("max_tokens") or 16)
    prompt = max(1, round(len(str(body.get("prompt", "")).split()) * 1.3))
    active = ACTIVE_BILLION.get(ep.model, ep.params_billion)
    per_token = 0.004 + 0.00045 * active / ep.tp * ep.pp + 0.0015 * (ep.pp - 1)
    jitter = 1.0 + ((ep.served * 7919) % 11 - 5) / 200
    seconds = (0.04 + prompt * 0.0004 + tokens * per_token * (1 + 0.08 * (ep.in_flight - 1))) * jitter
    ep.served += 1
    doc = {
        "id": f"cmpl-sim-{ep.served}",
        "object": "text_completion",
        "created": 1_700_000_000 + ep.served,
        "model": ep.model,
        "system_fingerprint": "roce-wizard-simulated",
        "choices": [{"index": 0, "text": " [simulated completion]", "logprobs": None, "finish_reason": "length"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": tokens, "total_tokens": prompt + tokens},
    }
    doc["_first_token_s"] = round((0.04 + prompt * 0.0004 + per_token) * jitter, 6)  # prefill plus one decode step
    return 200, doc, round(seconds, 6)
