"""The inference stage's verify checks that the API key and Ray token files on a host are 0600 and owned by root."""

from __future__ import annotations

from steps.inference.stage import Inference
from steps.inference.units import KEY_ENV, TOKEN_PATH
from tests.steps.test_inference import cluster, configured
from wizard.engine.step import CheckItem

STEP = Inference()


def secret_files(host: str = "server1", **facts: object) -> CheckItem:
    view = configured(cluster("inference:\n  layout: span\n"), **facts)
    return next(i for i in STEP.checks(view, host) if i.id == "secret_files")


def test_key_and_token_files_0600_root_pass() -> None:
    item = secret_files(token_file_mode="600 root")
    assert item.status == "pass" and f"{TOKEN_PATH} is 600 root" in item.evidence


def test_a_world_readable_api_key_file_fails_with_the_fix() -> None:
    item = secret_files(api_key={"env": "644 root", "header": "600 root"}, token_file_mode="600 root")
    assert item.status == "fail"
    assert item.evidence == f"{KEY_ENV} is 644 root, expected 600 root"
    assert item.fix is not None and f"chmod 600 {KEY_ENV}" in item.fix


def test_a_ray_token_owned_by_another_user_fails() -> None:
    item = secret_files("server2", token_file_mode="600 ubuntu")
    assert item.status == "fail" and item.evidence == f"{TOKEN_PATH} is 600 ubuntu, expected 600 root"
