"""Stages whose content is not in this version yet: they are listed, and every run says they were skipped."""

from __future__ import annotations

from typing import Any, ClassVar

from wizard.step import CheckItem, ClusterView, HostPlan, ProbeContext, Step


class NotYetAvailable(Step):
    """A stage the runner reports as skipped, with the reason, instead of pretending it verified anything."""

    available: ClassVar[bool] = False
    tracking: ClassVar[str] = "issue #3"

    async def probe(self, ctx: ProbeContext) -> dict[str, Any]:
        return {}

    def plan(self, view: ClusterView, host: str) -> HostPlan:
        return HostPlan(stage=self.id, host=host, noop_reason=self.skip_reason())

    def checks(self, view: ClusterView, host: str) -> list[CheckItem]:
        return [CheckItem(id="available", title=self.title, status="skip", evidence=self.skip_reason())]

    def skip_reason(self) -> str:
        return f"not available in this version of roce-wizard ({self.tracking}); nothing was checked or changed"
