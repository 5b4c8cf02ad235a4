"""Firing due schedules (Conductor's ``SchedulerService.handleSchedules``).

``fire_due`` finds unpaused schedules whose ``next_run_time`` has come and, for each, in
one transaction: claims the due slots by compare-and-set on the row's ``version`` (a
concurrent claimer, in this or another cluster, updates nothing and moves on), advances
the schedule to its next slots, starts one workflow per due cron entry through the
engine's start service and records the run as a ``ScheduleExecution`` (EXECUTED with the
workflow id, or FAILED with the start error's message as ``reason``). The claim, the
started workflow and the record commit together or not at all, so each slot starts its
workflow exactly once: a crash before the commit leaves the slot due for the next loop.

The started workflow gets the schedule's ``startWorkflowRequest`` with ``createdBy`` of
the schedule and, added to its input, ``_startedByScheduler`` (schedule name),
``_scheduledTime`` (the slot, epoch ms), ``_executedTime`` (when it fired, epoch ms),
``_executionId`` (the record's id) and ``_schedulerCron`` (``"<cron> <zoneId>"``).
"""
from __future__ import annotations

import copy
import logging
import traceback

from django.conf import settings
from django.db import transaction

from apps.core.clock import now_ms
from apps.core.errors import ConductorError
from apps.core.ids import new_id
from apps.scheduler import services
from apps.scheduler.models import ScheduleExecution, WorkflowSchedule

log = logging.getLogger(__name__)

# Execution records kept per schedule (the oldest beyond are deleted when a run is recorded).
RECORDS_KEPT_DEFAULT = 100


def _records_kept() -> int:
    return int(settings.CONDUCTOR.get("SCHEDULER_EXECUTION_RECORDS_KEPT", RECORDS_KEPT_DEFAULT))


def due_schedule_names(now: int, limit: int = 50) -> list[str]:
    """Names of unpaused schedules whose next slot is at or before ``now`` (oldest first)."""
    return list(WorkflowSchedule.objects.filter(paused=False, next_run_time__isnull=False,
                                                next_run_time__lte=now)
                .order_by("next_run_time", "name").values_list("name", flat=True)[:limit])



def start_request(data: dict, *, execution_id: str, scheduled_time: int, executed_time: int, cron: str) -> dict:
    """The StartWorkflowRequest of one run (``swrFrom``): the schedule's request, input
    copied and extended with the five ``_`` fields, ``createdBy`` of the schedule."""
    req = copy.deepcopy(data["startWorkflowRequest"])
    req["input"] = dict(req.get("input") or {})
    req["input"].update({"_startedByScheduler": data["name"], "_scheduledTime": scheduled_time,
                         "_executedTime": executed_time, "_executionId": execution_id, "_schedulerCron": cron})
    req["createdBy"] = data.get("createdBy") or None
    return req


def _start(req: dict) -> str:
    from apps.engine import executor

    return executor.workflow_start(
        name=req.get("name"), version=req.get("version"), input=req["input"],
        correlation_id=req.get("correlationId"), priority=req.get("priority"),
        task_to_domain=req.get("taskToDomain"), workflow_def=req.get("workflowDef"),
        created_by=req.get("createdBy"), idempotency_key=req.get("idempotencyKey"),
        idempotency_strategy=req.get("idempotencyStrategy"))


def run_slot(data: dict, index: int, zone_id: str, slot: int, now: int) -> ScheduleExecution | None:
    """Start the workflow of one slot (epoch ms) of cron entry ``index`` and record it
    (EXECUTED, or FAILED with the start error); None when the slot already has a record.
    Call it inside a transaction: the record's unique constraint raises IntegrityError
    when a concurrent caller recorded the slot first."""
    cron = services.scheduler_cron(data, index)
    if ScheduleExecution.objects.filter(schedule_name=data["name"], cron=cron, scheduled_time=slot).exists():
        return None  # this slot already ran (a schedule deleted and saved again)
    execution_id = new_id()
    req = start_request(data, execution_id=execution_id, scheduled_time=slot, executed_time=now, cron=cron)
    record = ScheduleExecution(execution_id=execution_id, schedule_name=data["name"], workflow_name=req["name"],
                               state=ScheduleExecution.State.POLLED, scheduled_time=slot, execution_time=now,
                               start_workflow_request=data["startWorkflowRequest"], zone_id=zone_id, cron=cron)
    try:
        with transaction.atomic():  # a failed start rolls back to here and is recorded
            record.workflow_id = _start(req)
        record.state = ScheduleExecution.State.EXECUTED
    except ConductorError as exc:
        record.state, record.reason = ScheduleExecution.State.FAILED, exc.message[:999]
    except Exception as exc:  # noqa: BLE001 - recorded as Conductor does (reason + stack trace)
        log.exception("schedule %s: starting %s failed", data["name"], req["name"])
        record.state, record.reason = ScheduleExecution.State.FAILED, (str(exc) or type(exc).__name__)[:999]
        record.stack_trace = traceback.format_exc()[:2000]
    record.save(force_insert=True)
    _prune(data["name"])
    return record


def _prune(schedule_name: str) -> None:
    kept = _records_kept()
    qs = ScheduleExecution.objects.filter(schedule_name=schedule_name)
    if qs.count() <= kept + 10:
        return
    old = list(qs.order_by("-scheduled_time", "-execution_id").values_list("execution_id", flat=True)[kept:])
    ScheduleExecution.objects.filter(execution_id__in=old).delete()


def fire_schedule(name: str, now: int | None = None) -> list[ScheduleExecution]:
    """Fire the due slots of one schedule (see the module docstring); returns the
    execution records written (empty if nothing was due or another claimer won)."""
    now = now_ms() if now is None else now
    row = WorkflowSchedule.objects.filter(pk=name, paused=False).first()
    if row is None or row.next_run_time is None or row.next_run_time > now:
        return []
    data = dict(row.data, name=row.name, createTime=row.create_time)
    crons = services.effective_crons(data)
    cron_next = list(row.cron_next) + [None] * (len(crons) - len(row.cron_next))
    due = [i for i, t in enumerate(cron_next[:len(crons)]) if t is not None and t <= now]
    new_next = list(cron_next[:len(crons)])
    for i in due:
        expression, zone_id = crons[i]
        new_next[i] = services.next_slot(data, expression, zone_id, now, cron_next[i])
    upcoming = [t for t in new_next if t is not None]
    records = []
    with transaction.atomic():
        claimed = WorkflowSchedule.objects.filter(pk=name, version=row.version, paused=False).update(
            version=row.version + 1, cron_next=new_next, next_run_time=min(upcoming) if upcoming else None)
        if claimed != 1:
            return []
        for i in due:
            record = run_slot(data, i, crons[i][1], cron_next[i], now)
            if record is not None:
                records.append(record)
    return records


def fire_due(now: int | None = None, limit: int = 50) -> int:
    """Fire every schedule due at ``now`` (default: the engine clock), at most ``limit``
    schedules; returns the number of runs recorded. Safe to call from several processes
    at once. Nothing fires while the server-wide switch (``admin/pause``) is on."""
    now = now_ms() if now is None else now
    names = due_schedule_names(now, limit)
    if not names or services.scheduler_paused():
        return 0
    fired = 0
    for name in names:
        try:
            fired += len(fire_schedule(name, now))
        except Exception:  # noqa: BLE001 - one bad schedule must not stop the others
            log.exception("firing schedule %s failed; it is retried on the next tick", name)
    return fired
