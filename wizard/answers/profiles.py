"""The simulated clusters of ``--demo`` and the ``--profile`` option.

Kept apart from wizard.engine.session, which pulls in asyncssh, pydantic and the runner: building a parser for
``--help`` or a usage error must not pay for them (see bench/startup.py).
"""

from __future__ import annotations

from wizard.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: --help must not pay for it
if TYPE_CHECKING:
    from pathlib import Path

# simulated clusters of --demo; reference (the seed-000 pair) by default
DEMO_PROFILES = ("reference", "rails-16", "ib-seed003")


def demo_answers(profile: str | None) -> Path:
    """The answers file a demo profile uses when ``--answers`` is not given."""
    from wizard.paths import assets_dir, example_answers

    if profile in (None, "reference"):
        return example_answers()
    return assets_dir() / f"answers.{profile}.yaml"


def check_profile(profile: str | None, demo: bool) -> str:
    """The lab profile of a command; ``--profile`` without ``--demo`` is a usage error."""
    if profile is not None and not demo:
        raise UsageError("--profile only applies to the simulated cluster (--demo)")
    return profile or "reference"
