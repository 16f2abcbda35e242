"""Which CUDA build of the engine a host's NVIDIA driver can run, and the pip arguments that install exactly it.

Facts this rests on:
- CUDA 13.0 needs driver >= 580.65.06 (CUDA Toolkit release notes, Table 3); CUDA 12.x builds run on any driver
  >= 525.60.13 through minor version compatibility (NVIDIA "CUDA Compatibility", minor version compatibility).
- vLLM's PyPI wheels moved to CUDA 13 (vllm-project/vllm PR #39878; 0.24.0 on PyPI is built for CUDA 13); each
  release's CUDA 12.9 build is `vllm==X+cu129` on https://wheels.vllm.ai/X/cu129, with PyTorch's matching build
  on https://download.pytorch.org/whl/cu129 (vLLM installation docs, "Install specific CUDA variants").
- SGLang 0.5.19 was the last release with CUDA 12 wheels.
A driver that old wheels cannot use dies at CUDA init ("The NVIDIA driver on your system is too old"), which the
health check would only report after ready_timeout_s; the plan refuses or picks the right build up front instead.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from wizard.answers.sections import InferenceSection

CUDA13_DRIVER = 580
CUDA12_COMPAT_DRIVER = 525
CUDA12_BUILD = "cu129"
SGLANG_LAST_CUDA12 = (0, 5, 19)
VLLM_PYPI_CUDA13_SINCE = (0, 24)  # older vLLM releases' default wheels are CUDA 12 builds
PYPI_JSON = "https://pypi.org/pypi/{name}/json"
VLLM_WHEELS = "https://wheels.vllm.ai/{version}/{cuda}"
TORCH_WHEELS = "https://download.pytorch.org/whl/{cuda}"
_LOCAL_CUDA = re.compile(r"\+cu(\d{3})$")


@dataclass
class Build:
    """The engine release and build for one host, with why, or the reason none fits."""

    spec: str | None  # pip requirement, e.g. "vllm==0.33.0+cu129"; None: refused
    index_args: list[str] = field(default_factory=list)  # --index-url / --extra-index-url arguments
    why: str = ""
    blocker: str | None = None


def _major(driver: str | None) -> int | None:
    match = re.match(r"(\d+)", driver or "")
    return int(match.group(1)) if match else None


def _tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0])[:3])


def choose_build(
    cfg: InferenceSection, host: str, driver: str | None, latest: str | None, installed: str | None = None
) -> Build:
    """The build of ``cfg.engine`` this host runs. ``latest`` is the newest release the host's index lists
    (`pip index versions`, or PyPI's JSON API before the venv exists), needed only when a CUDA 12 build must be
    pinned and neither the answers nor the venv name a release."""
    mirror = ["--index-url", cfg.index_url] if cfg.index_url else []
    major = _major(driver)
    pin = cfg.engine_version
    if major is None:
        spec = f"{cfg.engine}=={pin}" if pin else cfg.engine
        return Build(spec, mirror, f"{host}: NVIDIA driver version unknown; installing {spec} as the index has it")
    if major < CUDA12_COMPAT_DRIVER:
        return Build(None, blocker=f"{host}: NVIDIA driver {driver} is older than {CUDA12_COMPAT_DRIVER}: no current"
                     f" {cfg.engine} build (CUDA 12 or 13) runs on it. Fix: install driver >= 580 (stage ofed lists"
                     " the DOCA/CUDA repositories) and re-run")  # fmt: skip
    if cfg.engine == "sglang":
        if major < CUDA13_DRIVER and (pin is None or _tuple(pin) > SGLANG_LAST_CUDA12):
            return Build(None, blocker=f"{host}: SGLang after 0.5.19 ships only CUDA 13 wheels, which need NVIDIA"
                         f" driver >= {CUDA13_DRIVER}; this host runs {driver}. Fix: set inference.engine_version:"
                         " 0.5.19, or upgrade the driver")  # fmt: skip
        return Build(f"sglang=={pin}" if pin else "sglang", mirror, f"{host}: driver {driver} runs SGLang's wheels")
    local = _LOCAL_CUDA.search(pin or "")
    if local:
        cuda = f"cu{local.group(1)}"
        if int(local.group(1)) >= 130 and major < CUDA13_DRIVER:
            wanted = f"{pin.split('+')[0]}+{CUDA12_BUILD}"
            return Build(None, blocker=f"{host}: inference.engine_version {pin} is a CUDA 13 build; driver {driver}"
                         f" needs a CUDA 12 build ({wanted}) or driver >= {CUDA13_DRIVER}")  # fmt: skip
        base = pin.split("+")[0]
        return Build(f"vllm=={pin}", mirror + _variant_indexes(base, cuda), f"{host}: {pin} as the answers pin it")
    version = pin or (installed.split("+")[0] if installed else None) or latest
    if major >= CUDA13_DRIVER or (version and _tuple(version) < VLLM_PYPI_CUDA13_SINCE):
        spec = f"vllm=={pin}" if pin else "vllm"
        runs = "CUDA 13 builds" if major >= CUDA13_DRIVER else f"vLLM {version}'s default CUDA 12 wheel"
        return Build(spec, mirror, f"{host}: driver {driver} runs {runs}, so the default wheel ({spec}) fits")
    if version is None:
        return Build(None, blocker=f"{host}: driver {driver} needs vLLM's CUDA 12 build (+{CUDA12_BUILD}), and the"
                     " newest release could not be read from the package index (pip index versions vllm). Fix: set"
                     " inference.engine_version, or upgrade the driver to >= 580")  # fmt: skip
    return Build(
        f"vllm=={version}+{CUDA12_BUILD}",
        mirror + _variant_indexes(version, CUDA12_BUILD),
        f"{host}: driver {driver} is older than {CUDA13_DRIVER} (CUDA 13), so vLLM {version} is installed as its"
        f" CUDA 12.9 build (+{CUDA12_BUILD}, with PyTorch's {CUDA12_BUILD} build), which runs on drivers >="
        f" {CUDA12_COMPAT_DRIVER}",
    )


def _variant_indexes(version: str, cuda: str) -> list[str]:
    return [
        "--extra-index-url",
        VLLM_WHEELS.format(version=version, cuda=cuda),
        "--extra-index-url",
        TORCH_WHEELS.format(cuda=cuda),
    ]


def parse_index_versions(text: str) -> str | None:
    """`pip index versions NAME` -> the newest version ("vllm (0.33.0)"), or PyPI's JSON API -> info.version."""
    if text.lstrip().startswith("{"):
        try:
            version = json.loads(text).get("info", {}).get("version")
        except (ValueError, AttributeError):
            return None
        return str(version) if version else None
    match = re.search(r"^\S+ \(([^)]+)\)", text, re.MULTILINE)
    return match.group(1) if match else None
