"""Scheduler services: what ``/api/scheduler`` and the UI call (Conductor's
``SchedulerService`` and ``SchedulerBulkService``).

Shapes: schedules go in and out as Conductor's ``WorkflowSchedule`` JSON (camelCase dicts,
null fields omitted, ``cronSchedules`` always a list, ``nextRunTime`` the next slot of an
unpaused schedule); execution records as ``WorkflowScheduleExecutionModel``; searches as
``SearchResult`` ``{"totalHits", "results"}``. Times are epoch ms from
``apps.core.clock``. Errors: ``apps.core.errors`` (NotFound ``Schedule '<name>' not
found`` for a missing schedule, InvalidInput with the offending field named for bad input).

Next-slot rules (``SchedulerService.computeNextScheduleForSingleCron``): with
``runCatchupScheduleInstances`` the slot after the last one fired, however far in the past
(missed slots are replayed one after the other); otherwise the first slot after now (a slot
missed while the server was down fires once, the others are skipped); never before
``scheduleStartTime`` (less 500 ms, as Conductor) nor after ``scheduleEndTime``. Saving or
resuming a schedule counts from now.
"""
from __future__ import annotations

import copy
import re
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from apps.core.clock import now_ms
from apps.core.errors import ConductorError, InvalidInput, NotFound, validation_failed
from apps.core.fields import length_errors, name_errors
from apps.scheduler import cron
from apps.scheduler.models import ScheduleExecution, SchedulerSwitch, WorkflowSchedule

MAX_PREVIEW = 5
SWITCH = "scheduler"
# server fields: set here, never taken from the request
_SERVER_FIELDS = ("createTime", "updatedTime", "updatedBy", "nextRunTime")


def _conf(key: str, default):
    return settings.CONDUCTOR.get(key, default)


def not_found(name: str) -> NotFound:
    """Conductor's 404 for a schedule: ``Schedule '<name>' not found``."""
    return NotFound(f"Schedule '{name}' not found")


# --- validation ----------------------------------------------------------------------------

# the instants a schedule can name (epoch ms): 1970 up to the end of year 9999, what a
# datetime holds; later ones answered 500 ("year 33658 is out of range")
MAX_EPOCH_MS = 253_402_300_799_999


def _opt_int(data: dict, key: str) -> int | None:
    """``data[key]`` as epoch milliseconds in ``0..MAX_EPOCH_MS``, or None when absent.
    Errors: InvalidInput (400) naming ``key`` for another type or a value out of range."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise validation_failed([{"path": key, "message": "must be epoch milliseconds (an integer)",
                                  "invalidValue": value}])
    if not 0 <= value <= MAX_EPOCH_MS:
        raise validation_failed([{"path": key, "message": f"must be epoch milliseconds from 0 to {MAX_EPOCH_MS} "
                                                          "(the end of year 9999)", "invalidValue": str(value)}])
    return value


def _opt_bool(data: dict, key: str) -> bool:
    value = data.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise validation_failed([{"path": key, "message": "must be true or false", "invalidValue": value}])
    return value


def _start_request(value: Any) -> dict:
    path = "startWorkflowRequest"
    if value is None:
        raise validation_failed([{"path": path, "message": "startWorkflowRequest cannot be null"}])
    if not isinstance(value, dict):
        raise validation_failed([{"path": path, "message": "must be a StartWorkflowRequest object"}])
    req = copy.deepcopy(value)
    workflow_def = req.get("workflowDef")
    if workflow_def is not None and not isinstance(workflow_def, dict):
        raise validation_failed([{"path": f"{path}.workflowDef", "message": "must be a WorkflowDef object"}])
    name = req.get("name") or (workflow_def or {}).get("name")
    if not isinstance(name, str) or not name:
        raise validation_failed([{"path": f"{path}.name", "message": "Workflow name cannot be null or empty"}])
    req["name"] = name
    if req.get("input") is None:
        req["input"] = {}
    elif not isinstance(req["input"], dict):
        raise validation_failed([{"path": f"{path}.input", "message": "must be a JSON object"}])
    version = req.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise validation_failed([{"path": f"{path}.version", "message": "must be an integer", "invalidValue": version}])
    priority = req.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 99):
        raise validation_failed([{"path": f"{path}.priority", "message": "must be an integer from 0 to 99",
                                  "invalidValue": priority}])
    if req.get("taskToDomain") is not None and not isinstance(req["taskToDomain"], dict):
        raise validation_failed([{"path": f"{path}.taskToDomain", "message": "must be a JSON object"}])
    # checked now, as at a start: a value its column cannot hold failed every slot later
    errors = []
    for key, column in (("correlationId", "correlation_id"), ("idempotencyKey", "idempotency_key"),
                        ("createdBy", "created_by")):
        value = req.get(key)
        if value is not None and not isinstance(value, str):
            errors.append({"path": f"{path}.{key}", "message": "must be a string", "invalidValue": str(value)[:80]})
        errors += length_errors(value, f"engine.WorkflowExecution.{column}", f"{path}.{key}")
    for task_name, domain in (req.get("taskToDomain") or {}).items():
        errors += length_errors(domain, "engine.TaskExecution.domain", f"{path}.taskToDomain.{task_name}")
    if errors:
        raise validation_failed(errors)
    return req


def normalise(body: Any) -> dict:
    """A WorkflowSchedule body checked and completed (``zoneId`` UTC, ``cronSchedules``
    entries with their ``zoneId``, booleans false when absent); server fields dropped.
    Errors: InvalidInput naming the field (``name``, ``cronExpression``,
    ``cronSchedules[i].cronExpression``, ``zoneId``, ``startWorkflowRequest.name``, ...)."""
    if not isinstance(body, dict):
        raise InvalidInput("The request body must be a WorkflowSchedule JSON object")
    data = {k: copy.deepcopy(v) for k, v in body.items() if k not in _SERVER_FIELDS and v is not None}
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise validation_failed([{"path": "name", "message": "Schedule name cannot be null or empty"}])
    errors = name_errors(name, "scheduler.WorkflowSchedule.name", "name")
    if errors:
        raise validation_failed(errors)
    data["zoneId"] = cron.validate_zone(data.get("zoneId"))
    entries = data.get("cronSchedules")
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise validation_failed([{"path": "cronSchedules", "message": "must be a list of {cronExpression, zoneId}"}])
    checked = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise validation_failed([{"path": f"cronSchedules[{i}]", "message": "must be a {cronExpression, zoneId} object"}])
        checked.append({"cronExpression": cron.validate_cron(entry.get("cronExpression"), f"cronSchedules[{i}].cronExpression"),
                        "zoneId": cron.validate_zone(entry.get("zoneId"), f"cronSchedules[{i}].zoneId")})
    data["cronSchedules"] = checked
    if data.get("cronExpression") is not None or not checked:
        data["cronExpression"] = cron.validate_cron(data.get("cronExpression"), "cronExpression")
    for key in ("runCatchupScheduleInstances", "paused"):
        data[key] = _opt_bool(data, key)
    start, end = _opt_int(data, "scheduleStartTime"), _opt_int(data, "scheduleEndTime")
    if start is not None and end is not None and end < start:
        raise validation_failed([{"path": "scheduleEndTime", "message": "must not be before scheduleStartTime",
                                  "invalidValue": end}])
    data["startWorkflowRequest"] = _start_request(data.get("startWorkflowRequest"))
    if data.get("tags") is not None and not isinstance(data["tags"], list):
        raise validation_failed([{"path": "tags", "message": "must be a list of {key, value}"}])
    return data


# --- next slots -------------------------------------------------------------------------------

def effective_crons(data: dict) -> list[tuple[str, str]]:
    """``[(cronExpression, zoneId), ...]``: the ``cronSchedules`` entries when there are
    any (they take precedence), else the single ``cronExpression``/``zoneId``."""
    entries = data.get("cronSchedules") or []
    if entries:
        return [(e["cronExpression"], e.get("zoneId") or "UTC") for e in entries]
    if data.get("cronExpression"):
        return [(data["cronExpression"], data.get("zoneId") or "UTC")]
    return []


def scheduler_cron(data: dict, index: int) -> str:
    """The ``_schedulerCron`` input of a run: ``"<cronExpression> <zoneId>"``."""
    expression, zone_id = effective_crons(data)[index]
    return f"{expression} {zone_id}"


def next_slot(data: dict, expression: str, zone_id: str, current: int, last_expected: int) -> int | None:
    """The next slot (epoch ms) of one cron entry after the slot ``last_expected`` at time
    ``current`` (see the module docstring), or None when the schedule has no more runs."""
    start, end = data.get("scheduleStartTime"), data.get("scheduleEndTime")
    if data.get("runCatchupScheduleInstances"):
        nxt = cron.next_after(expression, zone_id, last_expected)
    elif start is not None and current < start - 500:
        nxt = cron.next_after(expression, zone_id, start - 500)
    else:
        nxt = cron.next_after(expression, zone_id, max(current, last_expected))
    if nxt is not None and end is not None and nxt > end:
        return None
    return nxt


def _min_next(cron_next: list) -> int | None:
    times = [t for t in cron_next if t is not None]
    return min(times) if times else None


# --- JSON --------------------------------------------------------------------------------------

def schedule_json(row: WorkflowSchedule) -> dict:
    """Conductor's ``WorkflowSchedule`` of a stored row (nulls omitted; ``nextRunTime``
    only while a next slot exists)."""
    out = dict(row.data)
    out["paused"] = row.paused
    out["createTime"] = row.create_time
    out["updatedTime"] = row.updated_time
    out.setdefault("cronSchedules", [])
    out.setdefault("runCatchupScheduleInstances", False)
    out.setdefault("zoneId", "UTC")
    if row.next_run_time is not None:
        out["nextRunTime"] = row.next_run_time
    return {k: v for k, v in out.items() if v is not None}


def execution_json(row: ScheduleExecution) -> dict:
    """Conductor's ``WorkflowScheduleExecutionModel`` (nulls omitted)."""
    out = {
        "executionId": row.execution_id,
        "scheduleName": row.schedule_name,
        "scheduledTime": row.scheduled_time,
        "executionTime": row.execution_time,
        "workflowName": row.workflow_name,
        "workflowId": row.workflow_id,
        "reason": row.reason,
        "stackTrace": row.stack_trace,
        "startWorkflowRequest": row.start_workflow_request,
        "state": row.state,
        "zoneId": row.zone_id,
    }
    return {k: v for k, v in out.items() if v is not None}


# --- CRUD --------------------------------------------------------------------------------------

def schedule_save(body: Any, *, user: str | None = None) -> dict:
    """``POST /api/scheduler/schedules``: create or update (by ``name``) and answer the
    stored schedule. Keeps ``createTime``/``createdBy`` of an existing schedule; the next
    slots are counted from now. A save with ``paused: true`` stops the schedule
    (``pausedReason`` kept); ``paused: false`` clears ``pausedReason``."""
    data = normalise(body)
    now = now_ms()
    name = data["name"]
    with transaction.atomic():
        existing = WorkflowSchedule.objects.select_for_update().filter(pk=name).first()
        if existing is not None:
            data["createdBy"] = existing.data.get("createdBy", "")
            if "tags" not in data and existing.data.get("tags") is not None:
                data["tags"] = existing.data["tags"]
        else:
            data["createdBy"] = data.get("createdBy") or user or ""
        data["updatedBy"] = user if user is not None else (data.get("updatedBy") or "")
        if not data["paused"]:
            data.pop("pausedReason", None)
        cron_next = [next_slot(data, e, z, now, now) for e, z in effective_crons(data)]
        fields = {"workflow_name": data["startWorkflowRequest"]["name"], "data": data, "paused": data["paused"],
                  "cron_next": cron_next, "next_run_time": _min_next(cron_next), "updated_time": now}
        if existing is None:
            row = WorkflowSchedule.objects.create(name=name, create_time=now, version=0, **fields)
        else:
            row = existing
            for key, value in fields.items():
                setattr(row, key, value)
            row.version += 1
            row.save()
    return schedule_json(row)


def schedule_row(name: str) -> WorkflowSchedule:
    """The stored row of a schedule. Errors: NotFound."""
    row = WorkflowSchedule.objects.filter(pk=name).first()
    if row is None:
        raise not_found(name)
    return row


def schedule_get(name: str) -> dict:
    """``GET /api/scheduler/schedules/{name}``. Errors: NotFound."""
    return schedule_json(schedule_row(name))


def schedule_list(workflow_name: str | None = None) -> list[dict]:
    """``GET /api/scheduler/schedules[?workflowName=]``: every schedule (of that
    workflow), by name."""
    qs = WorkflowSchedule.objects.all()
    if workflow_name:
        qs = qs.filter(workflow_name=workflow_name)
    return [schedule_json(r) for r in qs.order_by("name")]


_SCHEDULE_SORT = {"name": "name", "scheduleName": "name", "workflowName": "workflow_name",
                  "createTime": "create_time", "updatedTime": "updated_time", "nextRunTime": "next_run_time"}


def _order(sort: list[str] | None, columns: dict[str, str], default: list[str], tie: str) -> list[str]:
    order = []
    for option in sort or []:
        field, _, direction = option.partition(":")
        column = columns.get(field.strip())
        if column is None:
            raise InvalidInput(f"Invalid sort field: {field.strip()}")
        order.append(("" if direction.strip().upper() == "ASC" else "-") + column)
    order = order or list(default)
    if tie not in order and f"-{tie}" not in order:
        order.append(tie)
    return order


def _free_text(value: str | None) -> str | None:
    text = (value or "").strip()
    return None if text in ("", "*") else text


def schedule_search(*, workflow_name: str | None = None, schedule_name: str | None = None,
                    paused: bool | None = None, free_text: str | None = "*", start: int = 0, size: int = 100,
                    sort: list[str] | None = None) -> dict:
    """``GET /api/scheduler/schedules/search``: ``workflowName`` exact, ``scheduleName``
    a case-insensitive substring, ``paused``, ``freeText`` (other than ``*``) a substring
    of the name or description; sorted by name unless ``sort`` (``field[:ASC|DESC]``, of
    name, workflowName, createTime, updatedTime, nextRunTime). Answers
    ``{"totalHits", "results": [WorkflowSchedule]}``."""
    from apps.engine.search import check_paging

    start, size = check_paging(start, size, path="searchSchedules.size", what="schedules")
    qs = WorkflowSchedule.objects.all()
    if workflow_name:
        qs = qs.filter(workflow_name=workflow_name)
    if schedule_name:
        qs = qs.filter(name__icontains=schedule_name)
    if paused is not None:
        qs = qs.filter(paused=paused)
    text = _free_text(free_text)
    if text:
        qs = qs.filter(Q(name__icontains=text) | Q(workflow_name__icontains=text))
    total = qs.count()
    rows = qs.order_by(*_order(sort, _SCHEDULE_SORT, ["name"], "name"))[start:start + size] if size else []
    return {"totalHits": total, "results": [schedule_json(r) for r in rows]}


def schedule_delete(name: str) -> None:
    """``DELETE /api/scheduler/schedules/{name}``: removes the schedule (no error if it
    does not exist, as Conductor); its execution records stay searchable."""
    WorkflowSchedule.objects.filter(pk=name).delete()


def schedule_pause(name: str, reason: str | None = None, *, user: str | None = None) -> None:
    """Pause one schedule: no slot fires until it is resumed. Errors: NotFound."""
    now = now_ms()
    with transaction.atomic():
        row = WorkflowSchedule.objects.select_for_update().filter(pk=name).first()
        if row is None:
            raise not_found(name)
        data = dict(row.data)
        data["paused"] = True
        data["updatedBy"] = user if user is not None else data.get("updatedBy", "")
        if reason is not None:
            data["pausedReason"] = reason
        else:
            data.pop("pausedReason", None)
        row.data, row.paused, row.updated_time, row.version = data, True, now, row.version + 1
        row.save()


def schedule_resume(name: str, *, user: str | None = None) -> None:
    """Resume a paused schedule; its next slot counts from now (missed slots are not
    replayed). Errors: NotFound ``Schedule '<name>' not found`` also when the schedule is
    not paused (Conductor's ``resumeSchedule``)."""
    row = WorkflowSchedule.objects.filter(pk=name).first()
    if row is None or not row.paused:
        raise not_found(name)
    data = dict(row.data)
    data["paused"] = False
    data.pop("pausedReason", None)
    schedule_save(data, user=user)


def bulk(action: str, names: Any) -> dict:
    """``PUT /api/scheduler/bulk/pause|resume``: the action for each name; answers
    Conductor's ``BulkResponse`` ``{"bulkErrorResults": {name: message},
    "bulkSuccessfulResults": [name]}``. Errors: InvalidInput when the body is not a list
    of names."""
    if not isinstance(names, list) or any(not isinstance(n, str) for n in names):
        raise InvalidInput("The request body must be a JSON list of schedule names")
    out: dict = {"bulkErrorResults": {}, "bulkSuccessfulResults": []}
    for name in names:
        try:
            if action == "pause":
                schedule_pause(name)
            else:
                schedule_resume(name)
            out["bulkSuccessfulResults"].append(name)
        except ConductorError as exc:
            out["bulkErrorResults"][name] = exc.message
    return out


def set_tags(name: str, tags: Any) -> None:
    """``PUT /api/scheduler/schedules/{name}/tags``: add tags (``[{key, value}]``)."""
    if not isinstance(tags, list) or any(not isinstance(t, dict) for t in tags):
        raise InvalidInput("The request body must be a JSON list of {key, value} tags")
    with transaction.atomic():
        row = WorkflowSchedule.objects.select_for_update().filter(pk=name).first()
        if row is None:
            raise not_found(name)
        current = list(row.data.get("tags") or [])
        for tag in tags:
            entry = {"key": tag.get("key"), "value": tag.get("value")}
            if entry not in current:
                current.append(entry)
        row.data = {**row.data, "tags": current}
        row.save(update_fields=["data"])


def get_tags(name: str) -> list[dict]:
    """``GET /api/scheduler/schedules/{name}/tags``."""
    return list(schedule_row(name).data.get("tags") or [])


def delete_tags(name: str, tags: Any) -> None:
    """``DELETE /api/scheduler/schedules/{name}/tags``: remove the given tags."""
    if not isinstance(tags, list):
        raise InvalidInput("The request body must be a JSON list of {key, value} tags")
    with transaction.atomic():
        row = WorkflowSchedule.objects.select_for_update().filter(pk=name).first()
        if row is None:
            raise not_found(name)
        drop = [{"key": t.get("key"), "value": t.get("value")} for t in tags if isinstance(t, dict)]
        row.data = {**row.data, "tags": [t for t in (row.data.get("tags") or []) if t not in drop]}
        row.save(update_fields=["data"])


# --- preview and search -----------------------------------------------------------------------

def next_few(cron_expression: str | None, schedule_start_time: int | None = None,
             schedule_end_time: int | None = None, limit: int = 5) -> list[int]:
    """``GET /api/scheduler/nextFewSchedules``: up to ``min(limit, 5)`` next slots
    (epoch ms) of ``cronExpression`` in the server's scheduler zone
    (``SCHEDULER_TIME_ZONE``, UTC), within the optional bounds. Errors: InvalidInput for
    a missing or invalid expression."""
    if not cron_expression:
        raise InvalidInput("Required request parameter 'cronExpression' for method parameter type String is not present")
    expression = cron.validate_cron(cron_expression, "cronExpression", must_fire=False)  # [] if it never fires
    data = {"scheduleStartTime": schedule_start_time, "scheduleEndTime": schedule_end_time}
    for key in data:
        _opt_int(data, key)
    zone_id = _conf("SCHEDULER_TIME_ZONE", "UTC")
    now = last = now_ms()
    out: list[int] = []
    for _ in range(max(0, min(MAX_PREVIEW, limit))):
        nxt = next_slot(data, expression, zone_id, now, last)
        if nxt is None:
            break
        out.append(nxt)
        last, now = now, nxt
    return out


_EXECUTION_SORT = {"scheduledTime": "scheduled_time", "executionTime": "execution_time",
                   "scheduleName": "schedule_name", "workflowName": "workflow_name", "state": "state"}


def _split_and(query: str) -> list[str]:
    return [c.strip() for c in re.split(r"\s+AND\s+", query.strip()) if c.strip()]


_BARE_NAME = re.compile(r"^[^\s'\"()<>=!]+$")


def _csv(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def execution_filter(query: str | None) -> Q:
    """Conductor's scheduler search query (``SchedulerSearchQuery``) as a filter:
    clauses joined by ``AND``: ``scheduleName IN (a,b)``, ``state IN (EXECUTED,FAILED)``,
    ``scheduledTime>ms``, ``scheduledTime<ms``, ``workflowName=x`` (substring, any case),
    ``executionId=id``; any other clause that is a bare word (no blank, quote,
    parenthesis or comparison) is a schedule name. Errors: InvalidInput (400,
    ``Incorrectly formatted query string: <clause>``, the workflow search's message) for
    any other clause and for a time that is not an integer, rather than 0 hits."""
    names: list[str] = []
    q = Q()
    for clause in _split_and(query or ""):
        if clause.startswith("scheduleName IN (") and clause.endswith(")"):
            names += _csv(clause[len("scheduleName IN ("):-1])
        elif clause.startswith("state IN (") and clause.endswith(")"):
            q &= Q(state__in=_csv(clause[len("state IN ("):-1]))
        elif clause.startswith("scheduledTime>") or clause.startswith("scheduledTime<"):
            value = clause[len("scheduledTime>"):].strip()
            try:
                ms = int(value)
            except ValueError:
                raise InvalidInput(f"Invalid scheduledTime in query: {value}") from None
            q &= Q(scheduled_time__gt=ms) if clause[13] == ">" else Q(scheduled_time__lt=ms)
        elif clause.startswith("workflowName="):
            q &= Q(workflow_name__icontains=clause[len("workflowName="):].strip())
        elif clause.startswith("executionId="):
            q &= Q(execution_id=clause[len("executionId="):].strip())
        elif _BARE_NAME.match(clause):
            names.append(clause)
        else:
            raise InvalidInput(f"Incorrectly formatted query string: {clause}")
    if names:
        q &= Q(schedule_name__in=names)
    return q


def execution_search(*, query: str | None = None, free_text: str | None = "*", start: int = 0, size: int = 100,
                     sort: list[str] | None = None) -> dict:
    """``GET /api/scheduler/search/executions``: execution records matching ``query``
    (``execution_filter``) and ``freeText`` (other than ``*``: a substring of the schedule
    name, workflow name or workflow id), newest slot first unless ``sort``
    (``field[:ASC|DESC]`` of scheduledTime, executionTime, scheduleName, workflowName,
    state). Answers ``{"totalHits", "results": [WorkflowScheduleExecutionModel]}``."""
    from apps.engine.search import check_paging

    start, size = check_paging(start, size, path="searchScheduledExecutions.size", what="executions")
    qs = ScheduleExecution.objects.filter(execution_filter(query))
    text = _free_text(free_text)
    if text:
        qs = qs.filter(Q(schedule_name__icontains=text) | Q(workflow_name__icontains=text) | Q(workflow_id=text))
    total = qs.count()
    rows = qs.order_by(*_order(sort, _EXECUTION_SORT, ["-scheduled_time"], "execution_id"))[start:start + size] \
        if size else []
    return {"totalHits": total, "results": [execution_json(r) for r in rows]}


def upcoming_slots(row: WorkflowSchedule, count: int = MAX_PREVIEW) -> list[int]:
    """The next ``count`` slots (epoch ms) of an unpaused schedule, all cron entries
    merged, starting at its stored next run; empty when paused or without more slots."""
    if row.paused or row.next_run_time is None:
        return []
    data = row.data
    slots: list[int] = []
    for i, (expression, zone_id) in enumerate(effective_crons(data)):
        t = row.cron_next[i] if i < len(row.cron_next) else None
        while t is not None and len(slots) < count * 3:
            slots.append(t)
            t = next_slot({**data, "runCatchupScheduleInstances": True}, expression, zone_id, t, t)
    return sorted(set(slots))[:count]


def schedule_runs(name: str, *, size: int = 20, upcoming: int = MAX_PREVIEW) -> dict:
    """``GET /api/scheduler/schedules/{name}/runs`` (ours): ``{"scheduleName", "past":
    [WorkflowScheduleExecutionModel + "workflowStatus", "backfill"]}, "totalPast", "upcoming":
    [ms]}``; ``backfill`` true for a run started by a backfill;
    ``past`` newest slot first (at most ``size``, 1..100), ``workflowStatus`` the status now
    of the execution the run started (absent when it was removed or never started).
    Errors: NotFound; InvalidInput naming ``size``."""
    from apps.engine.models import WorkflowExecution

    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 100:
        raise validation_failed([{"path": "size", "message": "must be an integer from 1 to 100", "invalidValue": size}])
    row = schedule_row(name)
    qs = ScheduleExecution.objects.filter(schedule_name=name)
    past = [execution_json(r) for r in qs.order_by("-scheduled_time", "execution_id")[:size]]
    ids = [r["workflowId"] for r in past if r.get("workflowId")]
    status = dict(WorkflowExecution.objects.filter(pk__in=ids).values_list("workflow_id", "status"))
    for item in past:
        item["backfill"] = bool(((item.get("startWorkflowRequest") or {}).get("input") or {}).get("_backfill"))
        if item.get("workflowId") in status:
            item["workflowStatus"] = status[item["workflowId"]]
    return {"scheduleName": name, "past": past, "totalPast": qs.count(),
            "upcoming": upcoming_slots(row, upcoming)}


# --- server-wide switch ------------------------------------------------------------------------

def scheduler_paused() -> bool:
    """True while ``/api/scheduler/admin/pause`` is in force."""
    return SchedulerSwitch.objects.filter(pk=SWITCH, paused=True).exists()


def set_scheduler_paused(paused: bool) -> dict:
    """``GET /api/scheduler/admin/pause|resume``: stop or restart all firing (every
    cluster reads the switch). Answers ``{"status": "done"}``."""
    SchedulerSwitch.objects.update_or_create(pk=SWITCH, defaults={"paused": paused})
    return {"status": "done"}


def requeue_all() -> dict:
    """``GET /api/scheduler/admin/requeue``: Conductor re-queues execution records left
    POLLED. Here a slot's record is written in the transaction that starts its workflow,
    so none is ever left behind; the answer counts them as Conductor does:
    ``{"recordIds.size": n, "sampleIds": [...]}``."""
    ids = list(ScheduleExecution.objects.filter(state="POLLED").values_list("execution_id", flat=True)[:10])
    return {"recordIds.size": ScheduleExecution.objects.filter(state="POLLED").count(), "sampleIds": ids}
