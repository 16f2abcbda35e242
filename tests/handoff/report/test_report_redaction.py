"""Secrets never reach the report: the sudo password of the environment and secret-shaped values are masked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from wizard.cli.report import to_json
from wizard.report.collect import collect
from wizard.report.redact import MASK, report_redactor
from wizard.report.render import render

PASSWORD = "Hunter2-sudo-pw"


@pytest.fixture
def leaky_state(failed_state: Path, tmp_path: Path) -> Path:
    """The failed run with secrets planted where text from the hosts lands: a check's evidence, a stage's reason,
    the log tail, and a bandwidth test's perftest output."""
    state = tmp_path / "state"
    shutil.copytree(failed_state, state)
    path = state / "hosts" / "server2.json"
    record = json.loads(path.read_text())
    discovery = record["stages"]["discovery"]
    discovery["checks"][0]["evidence"] += f" sudo said {PASSWORD}"
    discovery["reason"] += " (ray start --token=abcdef0123456789)"
    record["command_in_flight"] = "curl -H 'Authorization: Bearer sk-abcdefghijklmnop' http://127.0.0.1:8000"
    path.write_text(json.dumps(record))
    with (state / "logs" / "server2.log").open("a") as log:
        log.write(f"12:00:00   ! password={PASSWORD}x\n")
        log.write("12:00:01   ! -----BEGIN OPENSSH PRIVATE KEY-----\n12:00:01   ! b3BlbnNzaC1rZXktdjEAAAAA\n")
        log.write("12:00:01   ! -----END OPENSSH PRIVATE KEY-----\n")
    return state


def test_planted_secrets_appear_in_neither_html_nor_json(leaky_state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCE_WIZARD_SUDO_PASSWORD", PASSWORD)
    report = collect(leaky_state)
    outputs = {"html": render(report), "json": json.dumps(to_json(report))}
    for kind, text in outputs.items():
        for secret in (PASSWORD, "abcdef0123456789", "sk-abcdefghijklmnop", "b3BlbnNzaC1rZXktdjEAAAAA"):
            assert secret not in text, (kind, secret)
        assert MASK in text
    server2 = report.hosts[1]
    assert server2.stages[0].reason.endswith("(ray start --token=******)")
    assert server2.command_in_flight == "curl -H 'Authorization: Bearer ******' http://127.0.0.1:8000"
    assert "[private key ******]" in "\n".join(server2.log_tail)


def test_without_the_password_in_the_environment_the_patterns_still_hold(leaky_state: Path, monkeypatch) -> None:
    monkeypatch.delenv("ROCE_WIZARD_SUDO_PASSWORD", raising=False)
    page = render(collect(leaky_state))
    assert f"password={PASSWORD}" not in page and "password=******" in page
    assert PASSWORD in page  # a bare word is only known as a secret when the environment names it


def test_secrets_in_the_bandwidth_results_are_masked_too(demo_state: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ROCE_WIZARD_SUDO_PASSWORD", PASSWORD)
    state = tmp_path / "state"
    shutil.copytree(demo_state, state)
    latest = state / "validation" / "latest.json"
    data = json.loads(latest.read_text())
    data["rails"][0]["output"] += f"\nsudo: {PASSWORD}\n"
    latest.write_text(json.dumps(data))
    report = collect(state)
    assert PASSWORD not in render(report) and PASSWORD not in json.dumps(to_json(report))
    assert report.validation is not None and report.validation.rails[0].output.endswith("sudo: ******\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2 ok", "password=****** ok"),
        ("token: abc123", "token: ******"),
        ("password=setup123", "password=******"),  # a value that starts like a harmless word is still masked
        ("--api-key abcd next", "--api-key ****** next"),
        ("RAY_TOKEN=deadbeef", "RAY_TOKEN=******"),
        ('passphrase="two words"', "passphrase=******"),
        ("Authorization: Bearer abcdefghijkl", "Authorization: Bearer ******"),
        ("sudo s3cr3t", "sudo ******"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nok", "[private key ******]\nok"),
        ("MIIE\nb3Bl\n-----END RSA PRIVATE KEY-----\nok", "[private key ******]\nok"),  # a tail cut in a key
    ],
)
def test_secret_shapes_are_masked(text: str, expected: str) -> None:
    assert report_redactor(["s3cr3t"])(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Ray token digest matches on every host",
        "password: not set",
        "-H @/etc/roce-wizard/inference-api-key.header -d x",
        "ray_token_sha256=sha256:0f3a",
        "the token of server2 rotates",
    ],
)
def test_words_about_secrets_that_hold_none_are_kept(text: str) -> None:
    assert report_redactor()(text) == text
