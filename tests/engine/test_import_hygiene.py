"""The engine and the stages never import the UI: headless runs and CI never load Textual."""

from __future__ import annotations

import subprocess
import sys


def test_engine_and_steps_do_not_import_textual() -> None:
    code = (
        "import sys, wizard.cli.main, wizard.engine.runner, wizard.engine.session, wizard.cli.plan\n"
        "import wizard.lab, steps\n"
        "from steps import all_steps\n"
        "all_steps()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'screens'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


HEAVY = ("asyncio", "asyncssh", "pydantic", "yaml", "textual", "rich", "steps", "shutil", "typing", "pathlib")
# shutil (argparse asks it for the terminal width; it tries zlib, bz2 and lzma), typing and pathlib are small, but
# together they were a sixth of what `--help` cost against the bare interpreter (bench/startup.py).


def _heavy_modules_loaded_by(argv: list[str]) -> list[str]:
    """Run ``roce-wizard ARGV`` (which exits with --help or a usage error) and list the heavy modules it loaded."""
    code = (
        "import sys\n"
        "from wizard.cli.main import main\n"
        f"try:\n    code = main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print('LOADED:' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = result.stdout.rsplit("LOADED:", 1)[1].strip()
    return [m for m in loaded.split(",") if m]


def test_help_and_usage_errors_load_no_heavy_module() -> None:
    # Start-up is the price of every mistyped flag; asyncio alone costs more than the interpreter (bench/startup.py).
    assert _heavy_modules_loaded_by(["--help"]) == []
    assert _heavy_modules_loaded_by(["--no-such-flag"]) == []
    assert _heavy_modules_loaded_by(["--only", "discovery", "--from", "roce", "--demo"]) == []


def test_a_subcommands_help_loads_no_engine() -> None:
    # (`lab --help` lists the simulated faults, so it loads the lab: a developer's command, not an operator's.)
    for command in (
        ["plan", "--help"], ["status", "--help"], ["rollback", "--help"], ["check", "--help"], ["report", "--help"],
        ["metrics", "--help"], ["export", "k8s", "--help"], ["export", "ansible", "--help"],
    ):  # fmt: skip
        loaded = _heavy_modules_loaded_by(command)
        assert not [m for m in loaded if m.split(".")[0] in ("asyncio", "asyncssh", "textual")], (command, loaded)
