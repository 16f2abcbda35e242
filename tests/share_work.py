"""A pytest plugin that lets two pytest processes share one set of tests, so both CPU cores stay busy to the end.

Both processes collect the same tests. Before running a unit (a test file, or a folder whose files must stay in one
process) a process claims it by creating ``<claims dir>/<unit hash>`` with O_EXCL; a unit the other process claimed
first is left out here (not run, not reported). One process walks the units from the front, the other from the back,
so they meet once, near the end. tests/tiers.py starts the second one when the qemu tier is done.

    ROCE_WIZARD_TEST_CLAIMS=DIR ROCE_WIZARD_TEST_CLAIM_ORDER=forward|reverse pytest -p tests.share_work ...

Without ``ROCE_WIZARD_TEST_CLAIMS`` the plugin does nothing and pytest runs every test as usual.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

CLAIMS_ENV = "ROCE_WIZARD_TEST_CLAIMS"
ORDER_ENV = "ROCE_WIZARD_TEST_CLAIM_ORDER"

# Folders whose files share something outside a temporary directory, so two of them must not run at once.
# (A folder whose conftest.py holds a session-scoped fixture is kept together too: see unit_of.)
TOGETHER = {
    "tests/nslab": "one set of network namespaces and sshds (rw-*, /tmp/roce-wizard-nslab)",
    "tests/tui": "one snapshot folder (/tmp/roce-wizard-tui-snapshots)",
}


@cache
def _has_session_fixture(directory: Path) -> bool:
    """A session fixture would be built twice if the folder's files were split over two processes."""
    conftest = directory / "conftest.py"
    return conftest.is_file() and 'scope="session"' in conftest.read_text()


# Files that share a per-process cache worth minutes of CPU: one process runs them all, so it is built once.
SHARED_CACHE = {
    "tests/validate/test_incast.py": "tests/validate/rails5",  # tests/validate/rails5.py: five hosts brought up
    "tests/validate/test_switch_os_fabric.py": "tests/validate/rails5",
}


def unit_of(path: Path, root: Path) -> str:
    """The unit a test file is claimed with: its outermost folder that must stay together, its shared-cache group,
    else the file."""
    rel = path.resolve().relative_to(root)
    if rel.as_posix() in SHARED_CACHE:
        return SHARED_CACHE[rel.as_posix()]
    for parent in reversed(rel.parents):  # outermost first: ".", "tests", "tests/x", ...
        if parent == Path("."):
            continue
        if parent.as_posix() in TOGETHER or _has_session_fixture(root / parent):
            return parent.as_posix()
    return rel.as_posix()


def unit_hash(unit: str) -> str:
    return hashlib.sha1(unit.encode()).hexdigest()[:16]


def claim(claims: Path, unit: str) -> bool:
    """True if this process is the first to take the unit (atomic: O_CREAT | O_EXCL)."""
    try:
        fd = os.open(claims / unit_hash(unit), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(f"{os.getpid()} {unit}\n")
    return True


# The longest units (minutes each; `python tests/tiers.py` prints every lane's slowest tests), claimed first by the
# lanes that walk from the front: a long unit left for the end would keep one lane busy while the others are done
# (longest first is the classic greedy schedule). The qemu lane joins late from the back and finds the short ones.
LONGEST_FIRST = (
    "tests/validate/rails5",
    "tests/tui",
    "tests/chaos/test_chaos_sample.py",
    "tests/handoff/ansible",
    "tests/handoff/report",
    "tests/security/test_no_secret_leaks.py",
    "tests/nslab",
    "tests/engine/test_plan_ahead.py",
    "tests/engine/test_headless_demo.py",
)


def units_in_order(items: list[pytest.Item], root: Path, reverse: bool) -> list[tuple[str, list[pytest.Item]]]:
    """The items grouped by unit, the longest units first and the rest in collection order (or all reversed);
    tests inside a unit keep their order."""
    grouped: dict[str, list[pytest.Item]] = {}
    for item in items:
        grouped.setdefault(unit_of(Path(str(item.path)), root), []).append(item)
    rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
    units = sorted(grouped.items(), key=lambda u: rank.get(u[0], len(rank)))  # stable: collection order otherwise
    return units[::-1] if reverse else units


class ShareWork:
    def __init__(self, claims: Path, root: Path, reverse: bool) -> None:
        self.claims = claims
        self.root = root.resolve()
        self.reverse = reverse
        self.ran: list[str] = []
        self.all_units = 0
        self.tests_run = 0
        self.tests_all = 0

    def _mine(self, items: list[pytest.Item]) -> Iterator[pytest.Item]:
        units = units_in_order(items, self.root, self.reverse)
        self.all_units, self.tests_all = len(units), len(items)
        # the whole list, so that tests/tiers.py can check that every unit was claimed by one of the processes
        (self.claims / f"units-{os.getpid()}").write_text("".join(f"{unit_hash(u)} {u}\n" for u, _ in units))
        for unit, unit_items in units:
            if claim(self.claims, unit):  # claimed lazily: the other process may have taken it meanwhile
                self.ran.append(unit)
                self.tests_run += len(unit_items)
                yield from unit_items

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        # pytest's own loop (_pytest/main.py), except that the items come from the claimed units; the next item,
        # which decides what fixtures to tear down, is looked ahead in the same stream.
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            raise session.Interrupted(f"{session.testsfailed} errors during collection")
        if session.config.option.collectonly:
            return True
        stream = self._mine(session.items)
        item = next(stream, None)
        while item is not None:
            nextitem = next(stream, None)
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
            item = nextitem
        return True

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        terminalreporter.write_line(
            f"share: this process ran {self.tests_run} of {self.tests_all} tests ({len(self.ran)} of "
            f"{self.all_units} files or folders, {'last' if self.reverse else 'first'} first); "
            "the other lanes ran the rest"
        )


def pytest_configure(config: pytest.Config) -> None:
    claims = os.environ.get(CLAIMS_ENV)
    if claims:
        Path(claims).mkdir(parents=True, exist_ok=True)
        config.pluginmanager.register(
            ShareWork(Path(claims), config.rootpath, os.environ.get(ORDER_ENV) == "reverse"), "share-work"
        )
