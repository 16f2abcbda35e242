"""Error types shared by the engine and the exit codes the command line documents."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class WizardError(Exception):
    """Base of every error the wizard reports to the operator as one line, without a traceback."""


class AnswersError(WizardError):
    """The answers file is missing, unreadable or invalid. Each message names the key path (and line)."""

    def __init__(self, problems: list[str], source: str = "answers") -> None:
        self.problems = problems
        self.source = source
        super().__init__(f"{source}: " + "; ".join(problems))


class StateError(WizardError):
    """The saved state cannot be used (unknown schema version, unreadable file)."""


class UsageError(WizardError):
    """Bad command-line usage or options (exit 2)."""
