"""tests/share_work.py: two pytest processes share one set of tests; every test runs exactly once, in one of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TEST_FILE = """
import os, time
from pathlib import Path

def test_{n}_a():
    time.sleep(0.05)  # long enough for the other process to be claiming at the same time
    Path(os.environ["RAN"]).joinpath("{folder}_{n}_a").write_text(str(os.getpid()))

def test_{n}_b():
    Path(os.environ["RAN"]).joinpath("{folder}_{n}_b").write_text(str(os.getpid()))
"""

SESSION_CONFTEST = """
import pytest

@pytest.fixture(scope="session")
def built_once():
    return 1
"""


def make_suite(base: Path) -> list[str]:
    """Twelve test files in two folders; "together" has a session fixture, so its files must share a process."""
    names = []
    for folder in ("apart", "together"):
        (base / folder).mkdir(parents=True)
        (base / folder / "__init__.py").write_text("")
        for n in range(6):
            (base / folder / f"test_{n}.py").write_text(TEST_FILE.format(n=n, folder=folder))
            names += [f"{folder}_{n}_a", f"{folder}_{n}_b"]
    (base / "together" / "conftest.py").write_text(SESSION_CONFTEST)
    return names


def run_two(base: Path, claims: Path, ran: Path) -> list[subprocess.CompletedProcess[str]]:
    env = {**os.environ, "RAN": str(ran), "ROCE_WIZARD_TEST_CLAIMS": str(claims), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "tests.share_work", "-p", "no:cacheprovider",
               "--rootdir", str(base), str(base)]  # fmt: skip
    procs = [
        subprocess.Popen(
            command,
            cwd=base,
            env={**env, "ROCE_WIZARD_TEST_CLAIM_ORDER": order},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for order in ("forward", "reverse")
    ]
    return [subprocess.CompletedProcess(p.args, p.wait(), p.communicate()[0]) for p in procs]


def test_two_processes_run_every_test_exactly_once_and_keep_a_session_fixture_folder_together(
    tmp_path: Path,
) -> None:
    base, claims, ran = tmp_path / "suite", tmp_path / "claims", tmp_path / "ran"
    ran.mkdir()
    names = make_suite(base)
    results = run_two(base, claims, ran)
    assert [r.returncode for r in results] == [0, 0], [r.stdout[-2000:] for r in results]
    assert sorted(p.name for p in ran.iterdir()) == sorted(names)  # none lost; a second run would overwrite, so:
    counts = [int(r.stdout.split("this process ran ")[1].split(" ")[0]) for r in results]
    assert sum(counts) == len(names), [r.stdout for r in results]
    assert len({(ran / f"together_{n}_{x}").read_text() for n in range(6) for x in "ab"}) == 1
    # every unit the lanes listed has its claim: what tests/tiers.py checks after a run
    listed = {line.split()[0] for f in claims.glob("units-*") for line in f.read_text().splitlines()}
    assert listed and all((claims / digest).exists() for digest in listed)


def test_without_a_claims_folder_the_plugin_leaves_pytest_alone(tmp_path: Path) -> None:
    base, ran = tmp_path / "suite", tmp_path / "ran"
    ran.mkdir()
    names = make_suite(base)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCE_WIZARD_TEST_CLAIM")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.share_work", "-p", "no:cacheprovider", str(base)],
        cwd=base, env={**env, "RAN": str(ran), "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:]
    assert sorted(p.name for p in ran.iterdir()) == sorted(names) and "share:" not in result.stdout


def test_every_unit_named_longest_first_exists_and_is_claimed_as_one() -> None:
    """A renamed or split file must not drop out of the longest-first list unnoticed."""
    from tests.share_work import LONGEST_FIRST, SHARED_CACHE, unit_of

    root = Path(__file__).resolve().parent.parent
    for unit in LONGEST_FIRST:
        path = root / unit
        grouped = [root / f for f, group in SHARED_CACHE.items() if group == unit]
        first = grouped[0] if grouped else path if path.is_file() else next(iter(sorted(path.rglob("test_*.py"))), None)
        assert first is not None and first.is_file() and unit_of(first, root) == unit, unit
    for file, group in SHARED_CACHE.items():
        assert (root / file).is_file() and unit_of(root / file, root) == group, file
