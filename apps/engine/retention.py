"""Retention: terminal executions older than a configured age are removed with their
tasks (the task table is also the queue), task logs and leases, in bounded batches.

Policy: ``{status: age_ms}`` for the terminal statuses (COMPLETED, FAILED, TIMED_OUT,
TERMINATED), from ``settings.CONDUCTOR["RETENTION"]`` (environment
``CONDUCTOR_RETENTION``, e.g. ``COMPLETED=30d,FAILED=90d``; unset keeps everything).
An execution is due when its status has an age and ``end_time < now - age``.

Batches: ``purge_batch`` removes at most ``batch_size`` executions in one short
transaction (rows an operator action holds are skipped on PostgreSQL), oldest first. A
sub-workflow waits until its parent is gone, so a kept parent never points at a removed
child. Processed event messages (and their event executions) older than the
``EVENT_MESSAGES`` age go the same way.

Who runs it: the cluster, through the ``conductor-retention`` schedule (every
``RETENTION_EVERY_MINUTES``, ``retention_job``: batches until done or
``RETENTION_JOB_SECONDS`` passed, pausing between batches so the hot path is never
starved), and operators by hand: ``manage.py purge_executions --older-than 30d
--status COMPLETED [--dry-run]``. ``DELETE /api/workflow/{id}/remove`` removes one
execution the same way (Conductor's semantics: see ``executor.workflow_remove``).
"""
from __future__ import annotations

import logging
import re
import time

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef

from apps.core.clock import now_ms
from apps.core.errors import InvalidInput
from apps.engine.models import (EventExecution, EventMessage, ExecutionEvent, SweeperLease, TaskExecLog, TaskExecution,
                                WorkflowExecution)
from apps.engine.status import TERMINAL_WORKFLOW, WORKFLOW_STATUSES

log = logging.getLogger(__name__)

TERMINAL = tuple(s for s in WORKFLOW_STATUSES if s in TERMINAL_WORKFLOW)  # in Conductor's order
EVENT_MESSAGES = "EVENT_MESSAGES"
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_AGE = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")


def parse_age(text: str, field: str = "olderThan") -> int:
    """``"30d"`` -> milliseconds. Units: ms, s, m, h, d (default: days).
    Errors: InvalidInput naming ``field`` for anything else."""
    match = _AGE.match(str(text))
    if not match:
        raise InvalidInput(f"{field}: {text!r} is not an age such as 30d, 12h, 90m")
    return int(match.group(1)) * _UNITS_MS[match.group(2) or "d"]


def parse_policy(text: str) -> dict[str, int]:
    """``"COMPLETED=30d,FAILED=90d"`` -> ``{"COMPLETED": ms, "FAILED": ms}``; keys are the
    terminal statuses and ``EVENT_MESSAGES``. Errors: InvalidInput naming the entry."""
    policy: dict[str, int] = {}
    for entry in filter(None, (e.strip() for e in (text or "").split(","))):
        key, sep, age = entry.partition("=")
        key = key.strip().upper()
        if not sep or key not in (*TERMINAL, EVENT_MESSAGES):
            raise InvalidInput(f"CONDUCTOR_RETENTION: {entry!r} is not STATUS=AGE with STATUS one of "
                               f"{', '.join((*TERMINAL, EVENT_MESSAGES))}")
        policy[key] = parse_age(age, f"CONDUCTOR_RETENTION {key}")
    return policy


def configured_policy() -> dict[str, int]:
    """The policy of the settings (``{}``: keep everything)."""
    return parse_policy(settings.CONDUCTOR.get("RETENTION", ""))


def delete_executions(workflow_ids: list[str]) -> int:
    """Delete these executions with their tasks, task logs, task leases and history (inside the
    caller's transaction); returns how many executions were deleted."""
    if not workflow_ids:
        return 0
    task_ids = list(TaskExecution.objects.filter(workflow_id__in=workflow_ids).values_list("task_id", flat=True))
    for start in range(0, len(task_ids), 500):
        chunk = task_ids[start:start + 500]
        TaskExecLog.objects.filter(task_id__in=chunk).delete()
        SweeperLease.objects.filter(name__in=[f"task:{t}" for t in chunk]).delete()
    TaskExecution.objects.filter(workflow_id__in=workflow_ids).delete()
    ExecutionEvent.objects.filter(workflow_id__in=workflow_ids).delete()
    _, by_model = WorkflowExecution.objects.filter(pk__in=workflow_ids).delete()
    return by_model.get("engine.WorkflowExecution", 0)  # Django's "app_label.Model" key


def _due(status: str, age: int, now: int):
    """Executions of ``status`` that ended more than ``age`` ms before ``now`` and whose
    parent (if any) is gone already."""
    parent_kept = WorkflowExecution.objects.filter(pk=OuterRef("parent_workflow_id"))
    return (WorkflowExecution.objects.filter(status=status, end_time__gt=0, end_time__lt=now - age)
            .filter(~Exists(parent_kept)))


def due_ids(policy: dict[str, int], now: int, limit: int) -> list[tuple[str, str]]:
    """Up to ``limit`` (workflowId, status) due for removal, oldest end first."""
    rows: list[tuple[str, str, int]] = []
    for status, age in policy.items():
        if status in TERMINAL:
            rows += list(_due(status, age, now).order_by("end_time")
                         .values_list("workflow_id", "status", "end_time")[:limit])
    rows.sort(key=lambda r: r[2])
    return [(r[0], r[1]) for r in rows[:limit]]


def purge_batch(policy: dict[str, int], *, now: int | None = None, batch_size: int | None = None,
                dry_run: bool = False) -> dict[str, int]:
    """Remove one batch (at most ``batch_size`` executions, by default
    ``RETENTION_BATCH_EXECUTIONS``, and as many event messages)
    due under ``policy``; returns counts by status (and ``EVENT_MESSAGES``). With
    ``dry_run`` nothing is deleted and the counts say what would be."""
    now = now if now is not None else now_ms()
    counts: dict[str, int] = {}
    with transaction.atomic():
        batch_size = batch_size or settings.CONDUCTOR["RETENTION_BATCH_EXECUTIONS"]
        due = due_ids(policy, now, batch_size)
        ids = [wf_id for wf_id, _ in due]
        if ids and not dry_run:
            # re-check inside the transaction; on PostgreSQL skip rows an operator action holds
            rows = WorkflowExecution.objects.filter(pk__in=ids, status__in=TERMINAL)
            if connection.vendor == "postgresql":
                rows = rows.select_for_update(skip_locked=True)
            locked = set(rows.values_list("pk", flat=True))
            due = [(wf_id, status) for wf_id, status in due if wf_id in locked]
            delete_executions([wf_id for wf_id, _ in due])
        for _, status in due:
            counts[status] = counts.get(status, 0) + 1
        if EVENT_MESSAGES in policy:
            msgs = list(EventMessage.objects.filter(processed_time__isnull=False,
                                                    processed_time__lt=now - policy[EVENT_MESSAGES])
                        .order_by("processed_time").values_list("message_id", flat=True)[:batch_size])
            if msgs and not dry_run:
                EventExecution.objects.filter(message_id__in=msgs).delete()
                EventMessage.objects.filter(message_id__in=msgs).delete()
            if msgs:
                counts[EVENT_MESSAGES] = len(msgs)
    return counts


def purge(policy: dict[str, int], *, now: int | None = None, batch_size: int | None = None,
          dry_run: bool = False, budget_seconds: float | None = None) -> dict[str, int]:
    """Batches until nothing is due (or ``budget_seconds`` passed); total counts. A dry
    run counts everything due without deleting (batch by batch, ``now`` fixed)."""
    now = now if now is not None else now_ms()
    totals: dict[str, int] = {}
    if dry_run:
        for status, age in policy.items():
            if status in TERMINAL:
                n = WorkflowExecution.objects.filter(status=status, end_time__gt=0, end_time__lt=now - age).count()
            else:
                n = EventMessage.objects.filter(processed_time__isnull=False, processed_time__lt=now - age).count()
            if n:
                totals[status] = n
        return totals
    deadline = time.monotonic() + budget_seconds if budget_seconds else None
    while True:
        counts = purge_batch(policy, now=now, batch_size=batch_size)
        for key, n in counts.items():
            totals[key] = totals.get(key, 0) + n
        if not counts or (deadline and time.monotonic() >= deadline):
            return totals
        time.sleep(settings.CONDUCTOR["RETENTION_PAUSE_SECONDS"])


def retention_job() -> dict[str, int]:
    """The cluster's retention run (``conductor-retention`` schedule): purge under the
    configured policy for at most ``RETENTION_JOB_SECONDS``; nothing when none is set."""
    policy = configured_policy()
    if not policy:
        return {}
    totals = purge(policy, budget_seconds=settings.CONDUCTOR["RETENTION_JOB_SECONDS"])
    if totals:
        log.info("retention removed %s", totals)
    return totals
