"""The engine build a host's driver runs: CUDA 13 wheels need driver >= 580, CUDA 12 builds run on >= 525 (minor
version compatibility); vLLM's CUDA 12.9 build of a release comes from wheels.vllm.ai with PyTorch's cu129 build."""

from __future__ import annotations

import pytest

from steps.inference.builds import choose_build, parse_index_versions
from tests.steps.facts_builder import answers
from wizard.answers.sections import InferenceSection


def cfg(yaml: str = "") -> InferenceSection:
    return answers("inference:\n  enabled: true\n" + yaml).inference


def test_a_driver_that_runs_cuda_13_gets_the_default_wheel() -> None:
    build = choose_build(cfg(), "gpu-001", "580.65.06", "0.33.0")
    assert build.spec == "vllm" and build.index_args == [] and "runs CUDA 13 builds" in build.why


def test_driver_550_gets_the_newest_release_as_its_cu129_build_from_the_variant_indexes() -> None:
    build = choose_build(cfg(), "gpu-001", "550.127.05", "0.33.0")
    assert build.spec == "vllm==0.33.0+cu129"
    assert build.index_args == [
        "--extra-index-url",
        "https://wheels.vllm.ai/0.33.0/cu129",
        "--extra-index-url",
        "https://download.pytorch.org/whl/cu129",
    ]


def test_an_installed_release_older_than_the_cuda_13_switch_is_kept_as_it_is() -> None:
    assert choose_build(cfg(), "gpu-001", "550.127.05", None, installed="0.11.0").spec == "vllm"


def test_a_pinned_cuda_13_build_on_driver_550_is_refused_with_the_build_that_fits() -> None:
    build = choose_build(cfg("  engine_version: 0.33.0+cu130\n"), "gpu-001", "550.127.05", None)
    assert build.spec is None and "needs a CUDA 12 build (0.33.0+cu129)" in (build.blocker or "")


def test_without_a_known_release_driver_550_is_refused_with_the_fix() -> None:
    build = choose_build(cfg(), "gpu-001", "550.127.05", None)
    assert build.spec is None and "set inference.engine_version" in (build.blocker or "")


def test_a_driver_older_than_525_runs_no_current_build() -> None:
    assert "older than 525" in (choose_build(cfg(), "gpu-001", "470.256.02", "0.33.0").blocker or "")


def test_sglang_after_0_5_19_is_refused_below_driver_580() -> None:
    assert "SGLang after 0.5.19" in (choose_build(cfg("  engine: sglang\n"), "h", "550.1", None).blocker or "")
    pinned = choose_build(cfg("  engine: sglang\n  engine_version: 0.5.19\n"), "h", "550.1", None)
    assert pinned.spec == "sglang==0.5.19"


def test_a_mirror_is_used_as_the_index() -> None:
    build = choose_build(cfg("  index_url: https://pypi.example.internal/simple\n"), "h", "580.1", None)
    assert build.index_args == ["--index-url", "https://pypi.example.internal/simple"]


def test_the_newest_release_is_read_from_pip_or_from_pypis_json() -> None:
    assert parse_index_versions("WARNING: pip index is experimental.\nvllm (0.33.0)\nAvailable versions: 0.33.0") == (
        "0.33.0"
    )
    assert parse_index_versions('{"info": {"name": "vllm", "version": "0.33.0"}}') == "0.33.0"
    assert parse_index_versions("ERROR: No matching distribution found for vllm") is None


@pytest.mark.parametrize("pin", ["0.11.0+cu129", "0.6.3.post1", "0.33.0"])
def test_pins_with_a_local_cuda_build_are_accepted(pin: str) -> None:
    assert cfg(f"  engine_version: {pin}\n").engine_version == pin
