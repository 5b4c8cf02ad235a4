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
from django.db import transaction
from django.db.models import Q

from apps.core.clock import now_ms
from apps.core.errors import NotFound
from apps.engine import executor, notify
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.engine.queue import queue_name_for
from apps.engine.status import ACTIVE_WORKFLOW, TERMINAL_TASK

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


def requeue_sweep(workflow_id: str) -> bool:
    """``POST /api/admin/sweep/requeue/{workflowId}``: make the sweeper decide a RUNNING or
    PAUSED execution on its next tick (``next_decide_at`` set to now, unless already due
    sooner). Returns whether such an execution exists (Conductor answers whether it pushed
    the id to its decider queue, ``pushIfNotExists``)."""
    now = now_ms()
    active = WorkflowExecution.objects.filter(pk=workflow_id, status__in=ACTIVE_WORKFLOW)
    active.filter(Q(next_decide_at__isnull=True) | Q(next_decide_at__gt=now)).update(next_decide_at=now)
    return active.exists()


def verify_and_repair(workflow_id: str) -> bool:
    """``POST /api/admin/consistency/verifyAndRepair/{workflowId}``: put right what the
    engine can find wrong with one execution, in one transaction; returns whether anything
    was repaired (Conductor's ``WorkflowRepairService.verifyAndRepairWorkflow``):

    * a RUNNING execution with no task left to finish and no decide due
      (``next_decide_at`` NULL) is stuck: its decide is made due now, for the sweeper;
    * a SCHEDULED worker task (SIMPLE) never polled and on no queue (``queue_name`` empty)
      is put on ``[domain:]taskDefName`` and made pollable now. A polled one is left
      alone, as Conductor does, so no worker runs it twice.

    Errors: NotFound (404) for an unknown workflow id.
    """
    now = now_ms()
    with transaction.atomic():
        row = (WorkflowExecution.objects.select_for_update().filter(pk=workflow_id)
               .values("status", "next_decide_at").first())
        if row is None:
            raise NotFound(f"No such workflow found by id: {workflow_id}")
        repaired = False
        tasks = TaskExecution.objects.filter(workflow_id=workflow_id)
        if row["status"] == "RUNNING" and row["next_decide_at"] is None \
                and not tasks.exclude(status__in=TERMINAL_TASK).exists():
            WorkflowExecution.objects.filter(pk=workflow_id).update(next_decide_at=now)
            repaired = True
        lost = list(tasks.filter(status="SCHEDULED", task_type="SIMPLE", queue_name="", poll_count=0)
                    .values_list("task_id", "task_def_name", "domain"))
        for task_id, name, domain in lost:
            TaskExecution.objects.filter(pk=task_id).update(queue_name=queue_name_for(name, domain), visible_at=now)
        if lost:
            names = {queue_name_for(name, domain) for _, name, domain in lost}
            notify.publish_queued(names)
            transaction.on_commit(lambda: notify.tasks_queued(names), robust=True)
        return repaired or bool(lost)
