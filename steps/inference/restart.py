"""Rolling restart of the serving replicas: one replica at a time, the next only once the last answers again, and
never the last healthy one (the entry point keeps serving throughout)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from steps.inference import bench
from steps.inference.entry import FAIL_TIMEOUT_S, entry_host
from steps.inference.layout import Node, build_layout
from steps.inference.plan import serving_units
from steps.inference.units import ENGINE_UNIT, RAY_UNIT
from wizard.engine.step import ClusterView
from wizard.executors.base import Executor, ExecutorError


@dataclass
class Restarted:
    replica: int  # 1-based, as the plan numbers them
    head: str
    ok: bool
    detail: str


async def _healthy(executors: dict[str, Executor], view: ClusterView, head: Node) -> bool:
    executor = executors.get(head.host)
    try:
        return executor is not None and (await executor.run(bench.health_argv(view.answers.inference))).ok
    except ExecutorError:
        return False  # unreachable, refused: not serving as far as anyone can tell


async def rolling_restart(
    view: ClusterView,
    executors: dict[str, Executor],
    *,
    replica: int | None = None,
    force: bool = False,
    say: Callable[[str], None] = lambda _: None,
) -> list[Restarted]:
    """Restart ``replica`` (1-based) or every replica in turn; stop at the first that does not come back. A host
    that cannot be reached stops the run there, named, with the replicas restarted so far reported."""
    done: list[Restarted] = []
    try:
        await _restart(view, executors, replica, force, say, done)
    except ExecutorError as exc:
        detail = exc.detail if exc.detail.startswith(f"{exc.host}:") else f"{exc.host}: {exc.detail}"
        done.append(Restarted(len(done) + 1 if replica is None else replica, exc.host, False, detail))
    return done


async def _restart(
    view: ClusterView,
    executors: dict[str, Executor],
    replica: int | None,
    force: bool,
    say: Callable[[str], None],
    done: list[Restarted],
) -> None:
    layout = build_layout(view)
    view = layout.effective(view)
    groups = layout.groups()
    if not groups:
        raise ValueError("no serving replica in this state directory: run the inference stage first")
    if replica is not None and not 1 <= replica <= len(groups):
        raise ValueError(f"--replica {replica}: the layout has replicas 1 to {len(groups)}")
    chosen = [(replica, groups[replica - 1])] if replica else list(enumerate(groups, 1))
    for number, group in chosen:
        head = group[0]
        others = [g[0] for g in groups if g is not group]
        serving = [n for n in others if await _healthy(executors, view, n)]
        if others and not serving and not force:
            done.append(Restarted(number, head.host, False, "no other replica answers /health: restarting this one"
                                  " would take the service down (--force to do it anyway)"))  # fmt: skip
            return
        say(f"replica {number} ({', '.join(n.host for n in group)}): restarting; {len(serving)} other replica(s)"
            " keep serving")  # fmt: skip
        # Engines stopped first (a blocking Ray restart would restart each bound engine in its transaction and wait
        # on its ExecStartPre for GPUs still on their way), Ray head before workers, then the engines.
        steps = [(n, ["systemctl", "stop", ENGINE_UNIT]) for n in group
                 if ENGINE_UNIT in serving_units(view, layout, n.host)]  # fmt: skip
        steps += [
            (n, ["systemctl", "restart", RAY_UNIT]) for n in group if RAY_UNIT in serving_units(view, layout, n.host)
        ]
        steps += [(n, ["systemctl", "restart", "--no-block", ENGINE_UNIT]) for n in group
                  if ENGINE_UNIT in serving_units(view, layout, n.host)]  # fmt: skip
        for node, argv in steps:
            result = await executors[node.host].run(argv, sudo=True)
            if not result.ok:
                done.append(Restarted(number, head.host, False, f"{' '.join(argv)} failed on {node.host}:"
                                      f" {result.first_error_line()}"))  # fmt: skip
                return
        engine = ENGINE_UNIT if ENGINE_UNIT in serving_units(view, layout, head.host) else RAY_UNIT
        health = await bench.wait_healthy(executors[head.host], view.answers.inference, engine,
                                          view.answers.inference.ready_timeout_s)  # fmt: skip
        if not health["healthy"]:
            tail = " | ".join(health.get("journal") or [])
            done.append(Restarted(number, head.host, False, f"did not answer /health after {health['waited_s']} s"
                                  f" (unit {health.get('unit_state')}); journal: {tail}"))  # fmt: skip
            return
        entry = entry_host(view, layout)
        detail = f"answers /health again after {health['waited_s']} s"
        if entry is not None and entry in executors:
            cfg = view.answers.inference
            # Before the next replica goes down, this one must be back in the entry point's rotation.
            routed = await bench.until_routed(executors[entry], cfg, f"{head.ip}:{cfg.port}", 3 * FAIL_TIMEOUT_S + 30)
            if not routed:
                done.append(Restarted(number, head.host, False, f"{detail}, but the entry point on {entry} sends it"
                                      " no request; the next replica is left alone"))  # fmt: skip
                return
            detail += f" and takes requests through the entry point on {entry} again"
        done.append(Restarted(number, head.host, True, detail))
        say(f"replica {number}: {done[-1].detail}")
