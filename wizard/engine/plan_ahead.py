"""Planning every stage ahead without changing anything (``roce-wizard plan`` and the exports): the Runner's
read-only half, kept apart from its apply path."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING

from wizard.engine.outcomes import StageOutcome
from wizard.engine.predict import Prediction, predicted_facts
from wizard.engine.step import CheckItem, ClusterView, HostPlan

if TYPE_CHECKING:
    from wizard.engine.runner import Runner


class PlanAhead:
    """Mixed into Runner: probes and plans each stage, later stages from the predicted effect of earlier ones."""

    async def plan_all(self: Runner, stages: Sequence[str]) -> list[StageOutcome]:
        """Probe and plan every stage without changing anything.

        A stage whose plan changes what later stages plan from (device names, addresses, GIDs) predicts its effect;
        the later stages are planned from facts with those predictions applied, and each such plan lists the
        predicted values in ``HostPlan.predicted``. The saved facts stay what the hosts really showed.
        """
        outcomes = []
        predictions: dict[str, list[Prediction]] = {}
        if "discovery" not in stages:
            await self._refresh_discovery()
        for stage in stages:
            outcome = StageOutcome(stage)
            await self._probe_hosts(stage, self._hosts_in_run(), outcome)
            if stage == "discovery":
                self._discovery_verdict(outcome)
            view = self._predicted_view(predictions)
            for host in self._hosts_in_run():
                if host in outcome.statuses:
                    continue
                plan = self._plan(stage, view, host)
                plan.predicted = [value for p in predictions.get(host, []) for value in p.values]
                plan.predicted_checks = [line for p in predictions.get(host, []) for line in p.guards]
                outcome.plans[host] = plan
                prediction = self._predict(stage, view, host, plan)
                if prediction is not None:
                    predictions.setdefault(host, []).append(prediction)
            outcomes.append(outcome)
        return outcomes

    def _discovery_verdict(self: Runner, outcome: StageOutcome) -> None:
        """A plan stops where a run would: a host whose discovery fails (no ConnectX port, a cross-cabled rail, ...)
        or could not be read is planned no further, and its reason is recorded as the run records it. Without this,
        `plan` and the exports planned a DOCA install for a host the run refuses at discovery."""
        step, view = self.steps["discovery"], self.view()
        for host in self._hosts_in_run():
            if host not in outcome.statuses:
                try:
                    failed = [i for i in step.checks(view, host) if i.status == "fail"]
                except Exception as exc:  # noqa: BLE001 - as in _verify: one host's bug fails that host only
                    self.logs.write(host, traceback.format_exc())
                    failed = [CheckItem(id="internal", title="verification", status="fail", evidence=repr(exc))]
                if failed:
                    reason = "; ".join(f"{i.title}: {i.evidence}" for i in failed)
                    self._finish("discovery", host, "failed", reason, outcome)
            if outcome.statuses.get(host) == "failed":
                self._out_of_run[host] = f"discovery failed: {self.store.host(host).stage('discovery').reason}"

    def _predicted_view(self: Runner, predictions: dict[str, list[Prediction]]) -> ClusterView:
        if not predictions:
            return self.view()
        facts = {h: predicted_facts(f, predictions[h]) if h in predictions else f for h, f in self.facts.items()}
        return ClusterView(self.answers, facts)

    def _predict(self: Runner, stage: str, view: ClusterView, host: str, plan: HostPlan) -> Prediction | None:
        if plan.blockers or plan.empty:
            return None
        try:
            return self.steps[stage].predict(view, host, plan)
        except Exception:  # noqa: BLE001 - a prediction is advice; without it later stages plan from today's facts
            self.logs.write(host, traceback.format_exc())
            return None
