"""What a stage or a stopped run came to: shared by the runner, its plan-ahead half and the command line."""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.engine.step import HostPlan

# A run stopped by a signal exits as a shell reports a process killed by it (128 + signal number).
INTERRUPT_EXIT = {"SIGINT": 130, "SIGTERM": 143}


@dataclass(slots=True)
class Interruption:
    """Where a stopped run was: the stage, the hosts it was running on, and the commands then in flight."""

    why: str  # "SIGTERM", "SIGINT", "quit"
    stage: str | None = None
    hosts: list[str] = field(default_factory=list)
    in_flight: dict[str, str] = field(default_factory=dict)  # host -> command

    def summary(self) -> str:
        """'SIGTERM during stage ofed on 2 host(s) (`cmd` on server1)'; the CLI's message and run.json's note."""
        where = f" during stage {self.stage} on {len(self.hosts)} host(s)" if self.stage else ""
        first = next(iter(self.in_flight.items()), None)
        return self.why + where + (f" (`{first[1]}` on {first[0]})" if first else "")


@dataclass(slots=True)
class StageOutcome:
    stage: str
    statuses: dict[str, str] = field(default_factory=dict)
    plans: dict[str, HostPlan] = field(default_factory=dict)
