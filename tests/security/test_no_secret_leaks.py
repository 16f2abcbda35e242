"""No secret anywhere: a run with a sudo password, the Ray token and the inference API key, then every output the
wizard makes (state, logs, JSON events, plans, reports, exports, metrics, stdout, stderr) holds none of them."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from steps.inference.units import KEY_ENV, TOKEN_PATH
from tests.security.scan import disk_file, files_under, forms, hits

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"
HOSTS = ("server1", "server2")
# Every simulated host asks for a password (sudo -S), so the password really travels on every sudo command.
FAULTS = [arg for h in HOSTS for arg in ("--fault", f"{h}:sudo_password")]
HEX64 = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")


class Outputs:
    """The secrets and everything the wizard wrote or printed while using them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state"
        self.password = "rw-sudo-" + secrets.token_urlsafe(24)
        self.printed: dict[str, str] = {}
        self.codes: dict[str, int] = {}

    def cli(self, name: str, *args: str) -> None:
        env = {**os.environ, "ROCE_WIZARD_LAB_TIME_SCALE": "0.01", "ROCE_WIZARD_SUDO_PASSWORD": self.password}
        done = subprocess.run(
            [sys.executable, "-m", "wizard", *args], capture_output=True, text=True, timeout=300, env=env
        )
        self.printed[f"{name} stdout"], self.printed[f"{name} stderr"] = done.stdout, done.stderr
        self.codes[name] = done.returncode

    def host_secret(self, host: str, path: str) -> str:
        """A secret as the simulated host holds it (its saved disk: the one place it belongs)."""
        data, _ = disk_file(self.state / "lab" / f"{host}.json", path)
        return data.decode().splitlines()[0].rpartition("=")[2].strip()

    def written(self) -> dict[str, str]:
        """Every file the wizard wrote: the state directory (but the simulated hosts' own disks) and all exports."""
        return files_under(self.state, self.root / "out", skip=[self.state / "lab"])


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    root = tmp_path_factory.mktemp("secrets")
    answers = root / "answers.yaml"
    text = EXAMPLE.read_text()
    # Password sudo, and one serving group over Ray so the Ray token is generated and distributed too.
    text = text.replace("\n  sudo: nopasswd ", "\n  sudo: password ").replace("\n  layout: auto ", "\n  layout: span ")
    assert "sudo: password" in text and "layout: span" in text
    answers.write_text(text)
    out, run = root / "out", ["--answers", str(answers), "--state-dir", str(root / "state")]
    o = Outputs(root)
    # Plans of bare hosts: the token is in them as a change, never as a value.
    o.cli("plan --json (bare)", "plan", "--demo", *run, "--json", *FAULTS)
    o.cli("plan --out (bare)", "plan", "--demo", *run, "--out", str(out / "plan-bare"), *FAULTS)
    o.cli("run", "--demo", *run, "--yes", "--json", *FAULTS)
    o.cli("plan --json", "plan", "--demo", *run, "--json", *FAULTS)
    o.cli("plan --out", "plan", "--demo", *run, "--out", str(out / "plan"), *FAULTS)
    o.cli("report --json", "report", "--state-dir", str(o.state), "--json")
    o.cli("report --html", "report", "--state-dir", str(o.state), "--html", str(out / "report.html"))
    o.cli("export ansible", "export", "ansible", "--demo", *run, "-o", str(out / "ansible"))
    o.cli("export k8s", "export", "k8s", "--demo", *run, "-o", str(out / "k8s"), *FAULTS)
    o.cli("metrics --once", "metrics", "--demo", *run, "--once", *FAULTS)
    return o


def test_every_command_succeeds_and_sudo_really_asked_for_the_password(outputs: Outputs) -> None:
    assert outputs.codes == dict.fromkeys(outputs.codes, 0), {
        n: outputs.printed[f"{n} stderr"][-1500:] for n, c in outputs.codes.items() if c
    }
    log = (outputs.state / "logs" / "server1.log").read_text()
    assert "sudo: a password is required" in log  # sudo -n was refused, so every sudo afterwards sent it (-S)
    assert (outputs.root / "out" / "report.html").stat().st_size > 0
    assert any((outputs.root / "out" / "ansible").rglob("*.yml")) and any((outputs.root / "out" / "k8s").rglob("*"))


def test_the_hosts_hold_the_ray_token_and_api_key_0600_and_the_scanner_finds_them_there(outputs: Outputs) -> None:
    """The scan is proven able to fail: the simulated hosts' own disks do hold each secret."""
    disks = files_under(outputs.state / "lab")
    for host in HOSTS:
        token = outputs.host_secret(host, TOKEN_PATH)
        assert len(token) == 64 and disk_file(outputs.state / "lab" / f"{host}.json", TOKEN_PATH)[1] == 0o600
        assert hits(token, disks) != []
    key = outputs.host_secret("server1", KEY_ENV)
    assert len(key) == 64 and disk_file(outputs.state / "lab" / "server1.json", KEY_ENV)[1] == 0o600
    assert hits(key, disks) == [str(outputs.state / "lab" / "server1.json")]
    assert hits("x" + outputs.password, {"t": f"a x{outputs.password}"}) == ["t"]
    assert len(forms(outputs.password)) == 4


@pytest.mark.parametrize("secret", ["sudo password", "ray token", "api key"])
def test_no_output_of_any_command_holds_the_secret(outputs: Outputs, secret: str) -> None:
    value = {
        "sudo password": outputs.password,
        "ray token": outputs.host_secret("server1", TOKEN_PATH),
        "api key": outputs.host_secret("server1", KEY_ENV),
    }[secret]
    found = hits(value, {**outputs.written(), **outputs.printed})
    assert found == [], f"the {secret} leaked into {found}"


def test_plans_of_bare_hosts_name_the_token_file_but_never_a_token(outputs: Outputs) -> None:
    bare = {
        **files_under(outputs.root / "out" / "plan-bare"),
        "plan --json": outputs.printed["plan --json (bare) stdout"],
    }
    assert any(TOKEN_PATH in text for text in bare.values())
    assert {name: HEX64.findall(text) for name, text in bare.items() if HEX64.search(text)} == {}
