"""The model's weights, downloaded once per host before the engine starts instead of inside its readiness wait.

Hugging Face's cache layout (huggingface_hub "Manage the cache"): ``$HF_HOME/hub/models--ORG--NAME`` holds
``refs/main`` (the commit), ``snapshots/<commit>/`` (links to the files) and ``blobs/`` (the content; a file still
downloading is ``<hash>.incomplete``, which ``hf download`` resumes). A gated repository (Llama, ...) needs the
licence accepted on the Hub and a token on the host (``hf auth login`` as root writes ``$HF_HOME/token``); the
wizard only checks that the token file exists and is never shown its content.
"""

from __future__ import annotations

import shlex
from typing import Any

from steps.inference.units import venv_bin
from wizard.answers.sections import InferenceSection
from wizard.engine.step import Change, RemoteCommand
from wizard.executors.base import Executor

DEFAULT_HF_HOME = "/root/.cache/huggingface"
GATED = ("meta-llama/",)  # repositories whose licence must be accepted before a download
DOWNLOAD_TIMEOUT_S = 6 * 3600


def hf_home(cfg: InferenceSection) -> str:
    return (cfg.hf_home or DEFAULT_HF_HOME).rstrip("/")


def repo_dir(cfg: InferenceSection) -> str:
    return f"{hf_home(cfg)}/hub/models--{cfg.model.replace('/', '--')}"


def gated(cfg: InferenceSection) -> bool:
    return cfg.model.startswith(GATED)


def reads(cfg: InferenceSection) -> list[list[str]]:
    """Read-only commands (run with sudo: the cache is root's): the cached commit, the blobs, the token's size."""
    repo = repo_dir(cfg)
    return [["cat", f"{repo}/refs/main"], ["ls", "-A", f"{repo}/blobs"], ["stat", "-c", "%s", f"{hf_home(cfg)}/token"]]


async def probe(executor: Executor, cfg: InferenceSection) -> dict[str, Any]:
    ref, blobs, token = [await executor.run(argv, sudo=True) for argv in reads(cfg)]
    names = blobs.stdout.split() if blobs.ok else []
    return {
        "revision": ref.stdout.strip() or None if ref.ok else None,
        "blobs": len(names),
        "incomplete": sum(1 for n in names if n.endswith(".incomplete")),
        "token": token.ok and token.stdout.strip() not in ("", "0"),
    }


def cached(facts: dict[str, Any]) -> bool:
    return bool(facts.get("revision")) and facts.get("blobs", 0) > 0 and not facts.get("incomplete")


def plan_weights(
    cfg: InferenceSection, host: str, facts: dict[str, Any], size_gb: float | None
) -> tuple[Change | None, str | None]:
    """(the download, a blocker): nothing when the cache holds the model, a refusal when it cannot be fetched."""
    if cached(facts):
        return None, None
    where = repo_dir(cfg)
    if cfg.offline:
        return None, (
            f"{host}: inference.offline is set and {where} holds no complete copy of {cfg.model}. Fix: copy a"
            f" Hugging Face cache with the model into {hf_home(cfg)} (e.g. rsync from a host that has it), then re-run"
        )
    if gated(cfg) and not facts.get("token"):
        return None, (
            f"{host}: {cfg.model} is a gated repository and root on {host} has no Hugging Face token"
            f" ({hf_home(cfg)}/token). Fix: accept the licence on huggingface.co, then run `sudo HF_HOME={hf_home(cfg)}"
            f" {venv_bin(cfg, 'hf')} auth login` on {host} (the token stays on the host), and re-run"
        )
    size = f" (~{size_gb:.0f} GB)" if size_gb else ""
    resume = f"; resumes the {facts['incomplete']} partial file(s) already there" if facts.get("incomplete") else ""
    command = ["env", f"HF_HOME={hf_home(cfg)}", venv_bin(cfg, "hf"), "download", cfg.model]
    return (
        Change(
            summary=f"download the weights of {cfg.model}{size} into {hf_home(cfg)}",
            why="once per host, before the engine starts: a first start would otherwise spend its readiness wait"
            f" downloading{resume}; progress is in the host's log ({shlex.join(command)})",
            commands=[RemoteCommand(argv=command, timeout_s=DOWNLOAD_TIMEOUT_S)],
        ),
        None,
    )
