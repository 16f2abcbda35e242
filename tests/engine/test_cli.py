"""The command line as a subprocess: exit codes, one-line errors, JSON Schema, parse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fixture_files import real_outputs
from wizard.cli.export import EXPORTS

EXAMPLE = Path(__file__).resolve().parents[2] / "assets" / "answers.example.yaml"


def cli(*args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wizard", *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )


def test_schema_is_json_schema_of_the_answers() -> None:
    result = cli("schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert {"version", "hosts", "ssh", "network", "roce"} <= set(schema["properties"])
    assert "hosts" in schema["required"]


def test_invalid_answers_exit_2_with_key_and_line_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "answers.yaml"
    bad.write_text(EXAMPLE.read_text().replace("mtu: 9000", "mtu: 90000"))
    result = cli("--answers", str(bad))
    assert result.returncode == 2
    assert "network.mtu (line" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_missing_answers_file_exit_2(tmp_path: Path) -> None:
    result = cli("--answers", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2
    assert "nope.yaml: cannot read file" in result.stderr


def test_unknown_stage_exit_2() -> None:
    result = cli("--answers", str(EXAMPLE), "--only", "discovery,bogus")
    assert result.returncode == 2
    assert "unknown stage(s) bogus" in result.stderr


def test_fault_without_demo_is_a_usage_error() -> None:
    result = cli("--answers", str(EXAMPLE), "--fault", "server1:pfc_off")
    assert result.returncode == 2


def test_parse_prints_json_for_a_real_sample() -> None:
    sample = next(p for p in real_outputs("ibdev2netdev") if "mixed-cx4lx" in p.name)
    result = cli("parse", "ibdev2netdev", str(sample))
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["entries"]
    assert entries and all("device" in e and "netdev" in e for e in entries)


def test_parse_reads_stdin() -> None:
    result = cli(
        "parse", "rdma_link", "-", stdin="link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1f0np0\n"
    )
    assert result.returncode == 0
    link = json.loads(result.stdout)["links"][0]
    assert (link["device"], link["port"], link["netdev"]) == ("mlx5_0", 1, "ens1f0np0")


def test_parse_refuses_unrecognised_input_in_one_line() -> None:
    result = cli("parse", "ib_write_bw", "-", stdin="hello world\n")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "not ib_write_bw output" in result.stderr


def test_parse_unknown_tool_is_a_usage_error() -> None:
    assert cli("parse", "nosuchtool", "-", stdin="").returncode == 2


def test_the_open_file_limit_is_raised_for_large_clusters() -> None:
    """A socket and a log file per host: 1,000 hosts do not fit in the common soft limit of 1,024 descriptors."""
    script = (
        "import resource; hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1];"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard));"
        "from wizard.cli.main import raise_open_file_limit;"
        "got = raise_open_file_limit(); print(got, hard, resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    got, hard, soft = (int(x) for x in result.stdout.split())
    assert got == soft
    assert soft == min(65536, hard) if hard > 0 else soft == 65536


def test_export_names_its_kinds_and_refuses_an_unknown_one_in_one_line() -> None:
    listed = cli("export", "--help")
    assert listed.returncode == 0 and "roce-wizard export k8s --help" in listed.stdout
    unknown = cli("export", "terraform")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines() == [
        f"roce-wizard: export: unknown kind 'terraform'; one of {','.join(sorted(EXPORTS))} "
        "(roce-wizard export KIND --help)"
    ]
    for kind in EXPORTS:
        assert cli("export", kind, "--help").returncode == 0, kind
