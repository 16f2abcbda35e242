"""Simulated Hugging Face CLI (`hf`, huggingface_hub >= 0.34) and the model cache the engines read.

The cache layout is huggingface_hub's ("Manage the huggingface_hub cache-system"): $HF_HOME/hub/models--ORG--NAME with
refs/main, snapshots/<commit>/ and blobs/. Gated repositories (meta-llama/*) answer 401 without a token in
$HF_HOME/token (written by `hf auth login`). Downloads take simulated time at 25 GB/s (a fast mirror) and print
progress; nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import hashlib

from wizard.lab import inference_sim as st
from wizard.lab.commands import command
from wizard.lab.streams import CommandFailed, Ctx
from wizard.lab.vfs import FsError

SIM = st.SIM
DEFAULT_HOME = "/root/.cache/huggingface"
GB_PER_S = 25.0
FILES = ("config.json", "generation_config.json", "tokenizer.json", "model-00001-of-00002.safetensors",
         "model-00002-of-00002.safetensors")  # fmt: skip


def home(env: dict[str, str]) -> str:
    return (env.get("HF_HOME") or DEFAULT_HOME).rstrip("/")


def repo(env: dict[str, str], model: str) -> str:
    return f"{home(env)}/hub/models--{model.replace('/', '--')}"


def commit(model: str) -> str:
    return hashlib.sha1(model.encode()).hexdigest()  # noqa: S324 - a stable fake commit id, not security


def cached(ctx: Ctx, env: dict[str, str], model: str) -> bool:
    try:
        return ctx.fs.read_text(f"{repo(env, model)}/refs/main").strip() == commit(model)
    except FsError:
        return False


def _logged_in(ctx: Ctx, env: dict[str, str]) -> bool:
    if env.get("HF_TOKEN"):
        return True
    try:
        return bool(ctx.fs.read_text(f"{home(env)}/token").strip())
    except FsError:
        return False


async def download(ctx: Ctx, env: dict[str, str], model: str) -> None:
    """Fetch ``model`` into the cache (resuming is free: a cached model returns at once)."""
    if cached(ctx, env, model):
        return
    if env.get("HF_HUB_OFFLINE") == "1":
        raise CommandFailed(
            f"OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the"
            f" cached files. Offline mode is enabled (HF_HUB_OFFLINE=1). {SIM}"
        )
    if model.startswith("meta-llama/") and not _logged_in(ctx, env):
        raise CommandFailed(
            f"huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url"
            f" https://huggingface.co/{model}/resolve/main/config.json. Access to model {model} is restricted. You"
            f" must have access to it and be authenticated to access it. Please log in. {SIM}"
        )
    params, width = st.MODEL_SIZES.get(model, (8.0, 2))
    size_gb = params * width
    base = repo(env, model)
    for i, name in enumerate(FILES):
        blob = hashlib.sha256(f"{model}/{name}".encode()).hexdigest()
        ctx.fs.install(f"{base}/blobs/{blob}", f"{SIM} {name}\n")
        ctx.fs.install(f"{base}/snapshots/{commit(model)}/{name}", f"{SIM} {name}\n")
        ctx.eprint(f"Fetching {len(FILES)} files: {100 * (i + 1) // len(FILES)}% ({name}) {SIM}")
        await asyncio.sleep(size_gb / GB_PER_S / len(FILES) * ctx.host.time_scale)
    ctx.fs.install(f"{base}/refs/main", commit(model))
    ctx.print(f"{base}/snapshots/{commit(model)}")


@command("sim-hf")
async def hf(ctx: Ctx) -> int:
    args = ctx.args
    if args[:2] == ["auth", "whoami"]:
        if not _logged_in(ctx, dict(ctx.env)):
            raise CommandFailed("Not logged in", 1)
        ctx.print(f"user: roce-wizard-operator {SIM}")
        return 0
    if args[:1] == ["download"] and len(args) >= 2:
        await download(ctx, dict(ctx.env), args[1])
        return 0
    raise CommandFailed(f"hf {' '.join(args[:2])}: only `hf download MODEL` and `hf auth whoami` are simulated {SIM}")
