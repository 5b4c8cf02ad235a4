"""Backfill: start a schedule's missed slots of a past time range (ours; Conductor and
Orkes have no backfill call, the Python SDK's ``SchedulerClient`` none either).

``POST /api/scheduler/schedules/{name}/backfill`` with ``{"startTime", "endTime",
"dryRun"}`` (epoch ms) lists, or starts, every slot of every cron entry of the schedule
(``cronSchedules``, else ``cronExpression``/``zoneId``) in ``[startTime, endTime]``.
A slot that already has an execution record (fired by the loop, or by an earlier
backfill) is not started again: each slot starts its workflow at most once, whatever
the number of backfills run, even two at the same time (the record's unique
``(schedule, cron, slot)`` constraint decides; the loser's start is rolled back with its
transaction). Started runs are recorded as the loop records them (``ScheduleExecution``
EXECUTED or FAILED with the start error) and their workflow gets the same ``_scheduledTime``
/ ``_startedByScheduler`` input, plus ``_backfill: true``.

Bounds: ``endTime`` may not be in the future (future slots are the loop's), the range
must hold at most ``SCHEDULER_BACKFILL_MAX_SLOTS`` slots (default 100; a larger range is
refused whole, nothing started, with the count in the message). The idempotence holds
while the records are kept (``SCHEDULER_EXECUTION_RECORDS_KEPT`` per schedule).
"""
from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction

from apps.core.clock import now_ms
from apps.core.errors import validation_failed
from apps.scheduler import cron, firing, services
from apps.scheduler.models import ScheduleExecution

MAX_SLOTS_DEFAULT = 100


def max_slots() -> int:
    """The most slots one backfill may start (``SCHEDULER_BACKFILL_MAX_SLOTS``)."""
    return int(settings.CONDUCTOR.get("SCHEDULER_BACKFILL_MAX_SLOTS", MAX_SLOTS_DEFAULT))


def _epoch(body: dict, key: str) -> int:
    value = body.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= services.MAX_EPOCH_MS:
        raise validation_failed([{"path": key, "message": "must be epoch milliseconds (an integer)",
                                  "invalidValue": value}])
    return value


def slots_in_range(data: dict, start: int, end: int, limit: int) -> list[tuple[int, str, int]]:
    """``[(slot epoch ms, "<cron> <zoneId>", index of the cron entry)]`` of every cron entry
    in ``[start, end]``, oldest first; at most ``limit + 1`` (one more than the bound, to
    tell it was passed)."""
    out: list[tuple[int, str, int]] = []
    for index, (expression, zone_id) in enumerate(services.effective_crons(data)):
        label = services.scheduler_cron(data, index)
        t = cron.next_after(expression, zone_id, start - 1)
        while t is not None and t <= end and len(out) <= limit:
            out.append((t, label, index))
            t = cron.next_after(expression, zone_id, t)
    out.sort()
    return out[:limit + 1]


def backfill(name: str, body) -> dict:
    """Run (or with ``dryRun`` list) the backfill of schedule ``name``.

    ``body``: ``{"startTime": ms, "endTime": ms, "dryRun": bool}``. Answers
    ``{"scheduleName", "startTime", "endTime", "dryRun", "slots": [{"scheduledTime",
    "cron", "state"}], "started": n, "skipped": n}`` where a slot's ``state`` is
    ``ALREADY_RUN`` (a record exists: not started), ``WOULD_START`` (dry run),
    ``EXECUTED`` (with ``workflowId``) or ``FAILED`` (with ``reason``).
    Errors: NotFound for an unknown schedule; InvalidInput (400) naming ``startTime`` /
    ``endTime`` (not epoch ms, end before start, end in the future) or ``endTime`` when
    the range holds more than ``max_slots()`` slots."""
    if not isinstance(body, dict):
        raise validation_failed([{"path": "body", "message": "must be {startTime, endTime, dryRun}"}])
    start, end = _epoch(body, "startTime"), _epoch(body, "endTime")
    dry_run = body.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise validation_failed([{"path": "dryRun", "message": "must be true or false", "invalidValue": dry_run}])
    if end < start:
        raise validation_failed([{"path": "endTime", "message": "must not be before startTime", "invalidValue": end}])
    now = now_ms()
    if end > now:
        raise validation_failed([{"path": "endTime", "message": "must not be in the future (future slots are "
                                                                "fired by the schedule itself)", "invalidValue": end}])
    row = services.schedule_row(name)
    data = dict(row.data, name=row.name, createTime=row.create_time)
    bound = max_slots()
    slots = slots_in_range(data, start, end, bound)
    if len(slots) > bound:
        raise validation_failed([{"path": "endTime", "message": f"the range holds more than {bound} slots (the most "
                                                                "one backfill starts): backfill a shorter range",
                                  "invalidValue": end}])
    done = set(ScheduleExecution.objects.filter(schedule_name=name, scheduled_time__gte=start,
                                                scheduled_time__lte=end).values_list("cron", "scheduled_time"))
    out = []
    started = 0
    for slot, label, index in slots:
        item = {"scheduledTime": slot, "cron": label}
        if (label, slot) in done:
            item["state"] = "ALREADY_RUN"
        elif dry_run:
            item["state"] = "WOULD_START"
        else:
            record = _start_slot(data, index, slot, now)
            if record is None:
                item["state"] = "ALREADY_RUN"
            else:
                started += 1
                item.update(state=record.state, workflowId=record.workflow_id, reason=record.reason)
        out.append({k: v for k, v in item.items() if v is not None})
    skipped = sum(1 for s in out if s["state"] == "ALREADY_RUN")
    return {"scheduleName": name, "startTime": start, "endTime": end, "dryRun": dry_run, "slots": out,
            "started": started, "skipped": skipped}


def _start_slot(data: dict, index: int, slot: int, now: int) -> ScheduleExecution | None:
    """Start one slot of cron entry ``index`` and record it in one transaction; None when
    another caller recorded it first."""
    zone_id = services.effective_crons(data)[index][1]
    backfilled = dict(data, startWorkflowRequest={**data["startWorkflowRequest"],
                                                  "input": {**(data["startWorkflowRequest"].get("input") or {}),
                                                            "_backfill": True}})
    try:
        with transaction.atomic():
            return firing.run_slot(backfilled, index, zone_id, slot, now)
    except IntegrityError:
        return None
