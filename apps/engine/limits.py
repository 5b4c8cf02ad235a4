"""Task-definition limits applied when a poll hands tasks out (Conductor's
``ExecutionService.poll``: ``exceedsInProgressLimit`` and ``exceedsRateLimitPerFrequency``).

The limits a task obeys are those of the TaskDef it was scheduled with (the
``taskDefinition`` its WorkflowTask carries since the workflow started, as Conductor's
``TaskModel.getTaskDefinition()``), copied onto the task when it is scheduled
(``decider.task_limit_fields``):

* ``concurrentExecLimit`` > 0: at most that many tasks of the definition IN_PROGRESS at
  once (counted over every domain). A task ending in any way (COMPLETED, FAILED, TIMED_OUT,
  CANCELED by a terminate, ...) leaves the count, so its slot is free for the next poll.
* ``rateLimitPerFrequency`` > 0 and ``rateLimitFrequencyInSeconds`` > 0: at most
  ``rateLimitPerFrequency`` tasks of the definition handed out in any window of
  ``rateLimitFrequencyInSeconds`` seconds (Conductor's sliding window: a delivery at time
  ``t`` counts until ``t + window``).

A claimed task over a limit is not handed out: it goes back to SCHEDULED exactly as it was
and is postponed (Conductor's ``queueDAO.postpone``): until the oldest delivery of the
window ages out for a rate limit, ``TASK_LIMIT_POSTPONE_MS`` for the concurrency limit.

Several processes and pollers agree because every admission for one definition runs under
one lock taken inside the claiming transaction: a PostgreSQL transaction-level advisory
lock keyed on the definition name; on SQLite the IMMEDIATE transaction of the claim already
admits one writer at a time.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from apps.engine.state import TaskState



@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one task: 0 means none."""

    concurrent: int = 0
    rate: int = 0
    window_ms: int = 0

    @property
    def any(self) -> bool:
        return self.concurrent > 0 or (self.rate > 0 and self.window_ms > 0)


NO_LIMITS = Limits()


def limits_of(task: TaskState) -> Limits:
    """The limits ``task`` obeys (a rate limit needs both values above 0, as in Conductor)."""
    if not (task.concurrent_exec_limit or task.rate_limit_per_frequency):
        return NO_LIMITS
    return Limits(concurrent=task.concurrent_exec_limit, rate=task.rate_limit_per_frequency,
                  window_ms=task.rate_limit_frequency_in_seconds * 1000)


def _lock(task_def_name: str) -> None:
    """Serialise admissions of one definition until the transaction ends (PostgreSQL)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    digest = hashlib.blake2b(f"task-limit:{task_def_name}".encode(), digest_size=8).digest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest, "big", signed=True)])


def postpone_ms() -> int:
    from django.conf import settings

    return int(settings.CONDUCTOR["TASK_LIMIT_POSTPONE_MS"])


def admit(claimed: list[TaskState], now: int) -> tuple[list[TaskState], dict[str, int]]:
    """Split tasks a claim just moved to IN_PROGRESS (in delivery order, inside the claiming
    transaction) into those that may be handed out and ``{task_id: visible_at}`` of those
    that must go back to the queue. Records one TaskHandout per admitted rate-limited task.
    Must run inside the claiming transaction."""
    from apps.engine.models import TaskExecution, TaskHandout

    limited = [t for t in claimed if limits_of(t).any]
    if not limited:
        return claimed, {}
    batch_ids = [t.task_id for t in claimed]
    refused: dict[str, int] = {}
    for name in sorted({t.task_def_name for t in limited}):
        _lock(name)
        of_name = [t for t in limited if t.task_def_name == name]
        in_progress = None
        window_rows: dict[int, list[int]] = {}
        widest = max(limits_of(t).window_ms for t in of_name)
        if widest:
            TaskHandout.objects.filter(task_def_name=name, handed_at__lte=now - widest).delete()
        admitted = 0
        for task in of_name:
            lim = limits_of(task)
            if lim.concurrent:
                if in_progress is None:
                    in_progress = (TaskExecution.objects.filter(task_def_name=name, status="IN_PROGRESS")
                                   .exclude(task_id__in=batch_ids).count())
                if in_progress + admitted >= lim.concurrent:
                    refused[task.task_id] = now + postpone_ms()
                    continue
            if lim.rate and lim.window_ms:
                handed = window_rows.get(lim.window_ms)
                if handed is None:
                    handed = sorted(TaskHandout.objects.filter(task_def_name=name, handed_at__gt=now - lim.window_ms)
                                    .values_list("handed_at", flat=True))
                    window_rows[lim.window_ms] = handed
                if len(handed) >= lim.rate:
                    # free again when enough deliveries of the window have aged out
                    refused[task.task_id] = handed[len(handed) - lim.rate] + lim.window_ms
                    continue
                TaskHandout.objects.create(task_def_name=name, handed_at=now)
                for rows in window_rows.values():
                    rows.append(now)
            admitted += 1
    return [t for t in claimed if t.task_id not in refused], refused
