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
from apps.engine import executor, store
from apps.engine.models import WorkflowExecution
from apps.engine.outcome import DeciderOutcome
from apps.engine.queue import queue_name_for
from apps.engine.state import active_tasks
from apps.engine.status import ACTIVE_WORKFLOW, TERMINAL_WORKFLOW

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
    """``POST /api/admin/sweep/requeue/{workflowId}``: have the sweeper decide this
    execution on its next tick. Returns whether the id was put on the sweeper's queue,
    Conductor's ``queueDAO.pushIfNotExists(DECIDER_QUEUE, workflowId)``:

    * a RUNNING or PAUSED execution whose decide is not due yet (``next_decide_at`` NULL
      or later than now) gets it due now: True;
    * one whose decide is already due is already queued: False, nothing changes;
    * an unknown or finished workflow id: True, as Conductor pushes any id it is given
      (its sweeper then finds nothing to decide and drops it); nothing is stored here.
    """
    now = now_ms()
    active = WorkflowExecution.objects.filter(pk=workflow_id, status__in=ACTIVE_WORKFLOW)
    if active.filter(Q(next_decide_at__isnull=True) | Q(next_decide_at__gt=now)).update(next_decide_at=now):
        return True
    return not active.exists()


def verify_and_repair(workflow_id: str) -> bool:
    """``POST /api/admin/consistency/verifyAndRepair/{workflowId}``: put right what the
    engine can find wrong with one execution; returns whether anything was repaired
    (Conductor's ``WorkflowRepairService.verifyAndRepairWorkflow``):

    * a RUNNING execution with no task left to finish and no decide due
      (``next_decide_at`` NULL) is stuck: its decide is made due now, for the sweeper;
    * a SCHEDULED worker task (SIMPLE) never polled and on no queue (``queue_name`` empty)
      is put on ``[domain:]taskDefName`` and made pollable now. A polled one is left
      alone, as Conductor does, so no worker runs it twice;
    * an IN_PROGRESS SUB_WORKFLOW task whose child workflow has ended (its "child ended"
      decide was lost) mirrors the child now: the execution is decided, which gives the
      task the child's status (TERMINATED -> CANCELED) and output, as Conductor's
      ``repairSubWorkflowTask`` does, and moves the execution on.

    The repair is one change saved by ``store.save`` under the workflow's lock, so it
    leaves an ``action`` event ``verifyAndRepair`` in the execution's history (its params
    name the tasks requeued and mirrored) and wakes the polls of the queues it filled
    through ``executor.after_commit``, like every other change.
    Errors: NotFound (404) for an unknown workflow id.
    """
    def run() -> bool:
        with transaction.atomic():
            loaded = executor.locked(workflow_id)
            wf = loaded.wf
            now = now_ms()
            pending = active_tasks(wf.tasks)
            lost = [t for t in pending if t.status == "SCHEDULED" and t.task_type == "SIMPLE"
                    and not t.queue_name and not t.poll_count]
            ended = [t for t in pending if not wf.terminal and t.task_type == "SUB_WORKFLOW"
                     and t.status == "IN_PROGRESS" and t.sub_workflow_id
                     and (wf.sub_workflows.get(t.sub_workflow_id) or {}).get("status") in TERMINAL_WORKFLOW]
            stuck = wf.status == "RUNNING" and wf.next_decide_at is None and all(t.terminal for t in pending)
            if not (lost or ended or stuck):
                return False
            loaded.note("verifyAndRepair", requeued=[t.reference_task_name for t in lost] or None,
                        subWorkflowTasks=[t.reference_task_name for t in ended] or None,
                        decideDue=True if stuck else None)
            for task in lost:
                task.queue_name = queue_name_for(task.task_def_name, task.domain)
                task.visible_at = now
            outcome = executor.decide(wf, now) if ended else DeciderOutcome()
            for task in lost:
                outcome.updated_tasks.setdefault(task.task_id, task)
            if stuck:
                wf.next_decide_at = now
            store.save(loaded, outcome, workflow_changed=True)
            executor.after_commit(wf, outcome)
            return True
    return executor.with_retries(run)
