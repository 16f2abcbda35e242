"""Ways to run commands on hosts. Production and the simulated lab both go through the SSH executor."""

from wizard.executors.base import (
    AuthenticationFailed,
    CommandResult,
    CommandTimeout,
    ConnectionLost,
    Executor,
    ExecutorError,
    HostKeyRejected,
    HostUnreachable,
    LineCallback,
    SudoRefused,
)

__all__ = [
    "AuthenticationFailed",
    "CommandResult",
    "CommandTimeout",
    "ConnectionLost",
    "Executor",
    "ExecutorError",
    "HostKeyRejected",
    "HostUnreachable",
    "LineCallback",
    "SudoRefused",
]
