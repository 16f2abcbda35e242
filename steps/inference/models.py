"""Inference model sizes and the fit rule: do the weights plus a KV-cache margin fit the GPUs discovery found?"""

from __future__ import annotations

import math
from dataclasses import dataclass

GIB = 1024**3
MIB = 1024**2
DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int4": 0.5}
# Sharding is never perfectly even (embeddings and the LM head sit on one pipeline stage), so weights get 5 % extra.
WEIGHT_IMBALANCE = 1.05
# Activations, CUDA graphs and NCCL buffers per GPU, inside the engine's memory budget (an estimate, not a promise).
RUNTIME_RESERVE_GIB = 2.0
# The KV cache must get at least this share of each GPU's budget, or the server admits almost no requests.
KV_MIN_FRACTION = 0.10


@dataclass(frozen=True)
class ModelSpec:
    """Size facts of one real checkpoint (from its Hugging Face config and model card)."""

    params_billion: float
    dtype: str  # dtype of the published weights
    layers: int | None = None
    kv_heads: int | None = None  # None for MLA models, whose latent KV cache is not split by heads
    head_dim: int | None = None

    def kv_bytes_per_token(self, kv_dtype_bytes: float = 2.0) -> float | None:
        """Bytes of K and V per token for the whole model (all layers, all KV heads)."""
        if self.layers is None or self.kv_heads is None or self.head_dim is None:
            return None
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_dtype_bytes


# Real Hugging Face ids. Parameter counts from the model cards; architecture from each config.json.
KNOWN_MODELS: dict[str, ModelSpec] = {
    "meta-llama/Llama-3.1-8B-Instruct": ModelSpec(8.03, "bf16", 32, 8, 128),
    "meta-llama/Llama-3.1-70B-Instruct": ModelSpec(70.6, "bf16", 80, 8, 128),
    "meta-llama/Llama-3.3-70B-Instruct": ModelSpec(70.6, "bf16", 80, 8, 128),
    "meta-llama/Llama-3.1-405B-Instruct": ModelSpec(405.9, "bf16", 126, 8, 128),
    "meta-llama/Llama-3.1-405B-Instruct-FP8": ModelSpec(405.9, "fp8", 126, 8, 128),
    "Qwen/Qwen2.5-7B-Instruct": ModelSpec(7.62, "bf16", 28, 4, 128),
    "Qwen/Qwen2.5-72B-Instruct": ModelSpec(72.7, "bf16", 80, 8, 128),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-70B": ModelSpec(70.6, "bf16", 80, 8, 128),
    # seed 003's model: a Qwen2.5-32B (64 layers, 8 KV heads of 128) distilled from R1
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": ModelSpec(32.8, "bf16", 64, 8, 128),
    "mistralai/Mixtral-8x7B-Instruct-v0.1": ModelSpec(46.7, "bf16", 32, 8, 128),
    # DeepSeek-V3 / R1: 671B total, 37B active MoE, weights published in FP8; MLA latent KV cache.
    "deepseek-ai/DeepSeek-V3": ModelSpec(671.0, "fp8", 61),
    "deepseek-ai/DeepSeek-R1": ModelSpec(671.0, "fp8", 61),
}
# Boards without NVLink: tensor parallelism all-reduces over PCIe, so vLLM's docs prefer pipeline parallelism there.
NO_NVLINK_GPUS = ("L20", "L40S", "L40", "L4", "A10", "A10G", "A16", "A2", "T4", "RTX")


@dataclass(frozen=True)
class Fit:
    """Outcome of the fit rule with every number the operator needs to judge it."""

    ok: bool
    gpus_used: int
    weights_gb: float
    weights_per_gpu_gib: float
    budget_per_gpu_gib: float
    kv_per_gpu_gib: float
    kv_needed_gib: float
    min_gpus: int
    message: str


def resolve_spec(model: str, params_billion: float | None, dtype: str | None) -> tuple[ModelSpec | None, str | None]:
    """The spec to size with: the table entry, the answers' override, or None with the reason."""
    known = KNOWN_MODELS.get(model)
    if params_billion is not None:
        base = known or ModelSpec(params_billion, dtype or "bf16")
        spec = ModelSpec(params_billion, dtype or base.dtype, base.layers, base.kv_heads, base.head_dim)
        return spec, None
    if known is None:
        return None, (
            f"model {model} is not in roce-wizard's size table; set inference.params_billion (and inference.dtype)"
            " from its model card so the wizard can check it fits"
        )
    if dtype is not None and dtype != known.dtype:
        return ModelSpec(known.params_billion, dtype, known.layers, known.kv_heads, known.head_dim), None
    return known, None


def fit(
    model: str,
    spec: ModelSpec,
    *,
    tp: int,
    pp: int,
    gpu_memory_mib: int,
    gpu_name: str,
    utilization: float,
    max_model_len: int,
) -> Fit:
    """Weights plus runtime reserve plus a KV-cache margin against the per-GPU budget."""
    gpus = tp * pp
    weights = spec.params_billion * 1e9 * DTYPE_BYTES[spec.dtype]
    per_gpu = weights * WEIGHT_IMBALANCE / gpus / GIB
    budget = gpu_memory_mib * MIB * utilization / GIB
    kv_free = budget - per_gpu - RUNTIME_RESERVE_GIB
    per_token = spec.kv_bytes_per_token()
    # KV heads are split across TP ranks (replicated beyond the head count) and layers across PP stages.
    one_sequence = (per_token / min(tp, spec.kv_heads or 1) / pp * max_model_len / GIB) if per_token else 0.0
    need = max(KV_MIN_FRACTION * budget, one_sequence)
    usable_per_gpu = budget - RUNTIME_RESERVE_GIB - need
    min_gpus = math.ceil(weights * WEIGHT_IMBALANCE / GIB / usable_per_gpu) if usable_per_gpu > 0 else 0
    ok = kv_free >= need
    numbers = (
        f"{model}: {spec.params_billion:g}B parameters x {DTYPE_BYTES[spec.dtype]:g} byte(s) ({spec.dtype}) ="
        f" {weights / 1e9:.0f} GB of weights, {per_gpu:.1f} GiB per GPU on {gpus} GPUs (TP {tp} x PP {pp});"
        f" each {gpu_name} ({gpu_memory_mib} MiB) gives {budget:.1f} GiB at gpu_memory_utilization {utilization:g},"
        f" minus {RUNTIME_RESERVE_GIB:g} GiB runtime reserve leaves {kv_free:.1f} GiB for the KV cache"
    )
    if ok:
        return Fit(True, gpus, weights / 1e9, per_gpu, budget, kv_free, need, min_gpus, numbers + f" (>= {need:.1f})")
    message = (
        f"{numbers}, but the KV cache needs at least {need:.1f} GiB per GPU"
        + (f" ({max_model_len} tokens of one sequence)" if one_sequence > KV_MIN_FRACTION * budget else "")
        + f"; it does not fit: at least {min_gpus} such GPUs are needed"
        if min_gpus
        else f"{numbers}; it does not fit"
    )
    return Fit(False, gpus, weights / 1e9, per_gpu, budget, kv_free, need, min_gpus, message)


def has_nvlink(gpu_name: str) -> bool:
    """False for PCIe boards known to have no NVLink bridge (L20, L40S, ...)."""
    words = gpu_name.replace("NVIDIA", "").split()
    return not any(word in NO_NVLINK_GPUS for word in words)
