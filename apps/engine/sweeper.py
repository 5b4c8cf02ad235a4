"""The sweeper: decide executions whose next action is due (timers, timeouts, retries of
async work, repairs after a crash).

``sweep_once`` claims each due execution by compare-and-set on ``next_decide_at`` (pushed
``CONDUCTOR["SWEEPER_DECIDE_LEASE_MS"]`` ahead), so several sweepers on several machines
never decide the same execution at once and a sweeper that dies mid-way only delays it
by the lease.
Source: Conductor's WorkflowSweeper + WorkflowReconciler.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings

from apps.core.clock import now_ms
from apps.engine import executor
from apps.engine.models import WorkflowExecution
from apps.engine.status import ACTIVE_WORKFLOW

log = logging.getLogger(__name__)

_tick_hooks: list[Callable[[], int]] = []


def add_tick_hook(fn: Callable[[], int]) -> None:
    """Register ``fn() -> int`` (work done) to run on every tick of the sweeper loop, in
    the cluster, under the sweeper's lease: how apps outside the engine (the workflow
    scheduler, status-listener deliveries) get a sub-second timer without a loop job of
    their own. ``fn`` must be quick and safe to run on several machines at once."""
    if fn not in _tick_hooks:
        _tick_hooks.append(fn)


def run_tick_hooks() -> int:
    """Run the registered tick hooks; returns the sum of their counts. A hook that raises
    is logged and skipped until the next tick."""
    done = 0
    for fn in list(_tick_hooks):
        try:
            done += fn() or 0
        except Exception:  # noqa: BLE001 - a hook must never stop the sweeper
            log.exception("sweeper tick hook %s failed", getattr(fn, "__qualname__", fn))
    return done


def sweep_once(now: int | None = None, limit: int = 200) -> int:
    """Decide every due execution once; return how many were decided."""
    now = now if now is not None else now_ms()
    decided = 0
    rows = list(WorkflowExecution.objects.filter(status__in=ACTIVE_WORKFLOW, next_decide_at__lte=now)
                .order_by("next_decide_at").values_list("workflow_id", "next_decide_at")[:limit])
    for workflow_id, due in rows:
        claimed = WorkflowExecution.objects.filter(pk=workflow_id, next_decide_at=due).update(
            next_decide_at=now_ms() + settings.CONDUCTOR["SWEEPER_DECIDE_LEASE_MS"])
        if not claimed:
            continue  # another sweeper (or a task update) got there first
        try:
            executor.workflow_decide(workflow_id)
            decided += 1
        except Exception:  # noqa: BLE001 - one broken execution must not stop the sweep
            log.exception("sweeper failed to decide %s", workflow_id)
    return decided
