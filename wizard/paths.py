"""Where things live: the shipped assets and the default state directory."""

from __future__ import annotations

from pathlib import Path

import platformdirs

_PACKAGE_DIR = Path(__file__).resolve().parent


def assets_dir() -> Path:
    """The assets folder: inside the installed wheel, or at the repository root in a checkout."""
    for candidate in (_PACKAGE_DIR / "_assets", _PACKAGE_DIR.parent / "assets"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("roce-wizard assets not found (broken installation?)")


def example_answers() -> Path:
    """The documented answers file for the reference scenario."""
    return assets_dir() / "answers.example.yaml"


def default_state_root() -> Path:
    """Base of per-cluster state directories (``$XDG_STATE_HOME/roce-wizard`` on Linux)."""
    return Path(platformdirs.user_state_dir("roce-wizard", appauthor=False))


def default_state_dir(cluster_name: str, *, demo: bool = False) -> Path:
    """State directory for one cluster; the demo keeps its own so it never mixes with a real cluster."""
    return default_state_root() / (f"demo-{cluster_name}" if demo else cluster_name)
