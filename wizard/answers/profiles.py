"""The simulated clusters of ``--demo`` and the ``--profile`` option.

Kept apart from wizard.engine.session, which pulls in asyncssh, pydantic and the runner: building a parser for
``--help`` or a usage error must not pay for them (see bench/startup.py).
"""

from __future__ import annotations

import re

from wizard.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: --help must not pay for it
if TYPE_CHECKING:
    from pathlib import Path

# simulated clusters of --demo; reference (the seed-000 pair) by default. rails-N: N HGX H100 hosts (16 to 1024) on
# a rail-optimized leaf-spine fabric (wizard/lab/rails_plan.py); rails-16 is the one whose answers ship in assets/.
DEMO_PROFILES = ("reference", "rails-N", "ib-seed003")
RAILS_MIN, RAILS_MAX = 16, 1024
PROFILE_CHOICES = "{reference,rails-N,ib-seed003}"  # the --profile metavar (rails-N: N from 16 to 1024)
_RAILS = re.compile(r"rails-([1-9]\d*)")


def rails_hosts(profile: str | None) -> int | None:
    """N of a ``rails-N`` profile (16 <= N <= 1024); None for any other name."""
    m = _RAILS.fullmatch(profile or "")
    n = int(m[1]) if m else 0
    return n if RAILS_MIN <= n <= RAILS_MAX else None


def is_switched(profile: str | None) -> bool:
    """Whether the profile's lab models leaf and spine switches (every rails-N)."""
    return rails_hosts(profile) is not None


def profile_arg(text: str) -> str:
    """argparse's type for ``--profile``: a listed profile or rails-N with N from 16 to 1024."""
    if text in DEMO_PROFILES[::2] or rails_hosts(text) is not None:
        return text
    import argparse

    raise argparse.ArgumentTypeError(
        f"unknown profile {text!r} (reference, rails-N with N from {RAILS_MIN} to {RAILS_MAX}, or ib-seed003)"
    )


def demo_answers(profile: str | None) -> Path:
    """The answers file a demo profile uses when ``--answers`` is not given (rails-N other than rails-16: made from
    the rails-16 file, wizard/answers/rails_answers.py)."""
    from wizard.paths import assets_dir, example_answers

    if profile in (None, "reference"):
        return example_answers()
    n = rails_hosts(profile)
    if n is not None and n != 16:
        from wizard.answers.rails_answers import rails_answers_file

        return rails_answers_file(n)
    return assets_dir() / f"answers.{profile}.yaml"


def check_profile(profile: str | None, demo: bool) -> str:
    """The lab profile of a command; ``--profile`` without ``--demo`` is a usage error."""
    if profile is not None and not demo:
        raise UsageError("--profile only applies to the simulated cluster (--demo)")
    return profile or "reference"
