"""The engine and the stages never import the UI: headless runs and CI never load Textual."""

from __future__ import annotations

import subprocess
import sys


def test_engine_and_steps_do_not_import_textual() -> None:
    code = (
        "import sys, wizard.cli, wizard.runner, wizard.session, wizard.commands, wizard.lab, steps\n"
        "from steps import all_steps\n"
        "all_steps()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'screens'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
