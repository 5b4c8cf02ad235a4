"""Execution history that is never lost: an append-only list of events per execution.

Every change of an execution is saved by ``apps.engine.store`` (``insert_workflow``,
``save``), by the poll (``apps.engine.queue.claim``) or by the claim of an async system
task (``executor.system_task_claim``); each of them hands what changed to this module,
which appends the matching ``ExecutionEvent`` rows with one multi-row INSERT on the same
cursor, in the same transaction: a change rolled back leaves no event, and no event is
written for a change that did not happen. Events derive from what changed (tasks
inserted, task statuses moved, tasks removed, the workflow status moved, the definition
snapshot replaced), so a new change path that saves through the store is covered.

Kinds (``ExecutionEvent.kind``) and their ``data`` (camelCase):

* ``workflow.started``: ``{status, version, correlationId, by?, tracked}``; ``tracked``
  lists the workflow fields whose changes this execution's history records (below);
* ``workflow.status``: ``{from, to, reason?}``;
* ``workflow.updated``: workflow fields a save changed, with the value each had before
  (``{fields: [...], before: {field: value}, sizes: {field: bytes of the new JSON}}``);
  the fields are ``TRACKED_FIELDS`` (``input``, ``output``, ``variables``, ``createTime``,
  ``correlationId``); a value too large for the event is ``{"omittedBytes": n}``. The
  value of a field at a moment is the ``before`` of its next change, or the present
  value when it did not change since (``fields_at``);
* ``task.scheduled`` / ``task.retried`` (a new attempt with ``retriedTaskId``): the task's
  ``{ref, type, name, seq, iteration, retryCount, status, scheduledTime, ...}``;
* ``task.polled``: ``{ref, from: SCHEDULED, to: IN_PROGRESS, workerId, pollCount, startTime}``;
* ``task.updated`` / ``task.timed_out`` / ``task.canceled`` / ``task.skipped``: a status
  change ``{ref, from, to, startTime, endTime, workerId?, reason?, outputSize, by?}``;
* ``task.removed``: a task deleted by a rerun or restart ``{ref, status, seq}``;
* ``action``: an operator action ``{action, by?, reason?, params, tasksBefore?,
  workflowBefore?}``; ``tasksBefore`` is the task list as it was before a rerun, restart
  or retry overwrote or removed attempts (bounded);
* ``definition.replaced``: restart with the latest definition ``{fromVersion, toVersion,
  definition}`` (the snapshot that was replaced);
* ``history.compacted``: older detail was compacted ``{deleted, stripped}``.

Who acted comes from ``acting`` (set by the API middleware for the calling application
and by the UI for the operator); why from the action's reason.

Bounds (``settings.CONDUCTOR``): ``HISTORY_EVENT_MAX_BYTES`` caps one event's ``data``
(snapshots and definitions are shrunk, then cut); ``HISTORY_MAX_EVENTS`` caps the events
of one execution: above it the oldest ``task.polled`` events are deleted (the task's next
event repeats their worker and start time) and the oldest events' details are stripped to
the status transition, which is always kept. The check runs on a sample of saves
(``HISTORY_COMPACT_EVERY``: about one in N events), so it costs one indexed COUNT per N
events, never a read on the ordinary path. Retention and ``DELETE /workflow/{id}/remove``
delete an execution's events with it (``retention.delete_executions``).

Replay (``moment``): the execution as it was just after one event: the status, times and
reason from ``workflow.*`` events, the tasks from ``task.*`` events (and the snapshots an
action kept), the definition a later ``definition.replaced`` holds, the fields above from
``workflow.updated`` events (an execution whose ``workflow.started`` has no ``tracked``
began before they were recorded: its fields at a moment are unknown).
"""
from __future__ import annotations

import contextlib
import random
import threading
from contextvars import ContextVar
from dataclasses import dataclass

import orjson
from django.conf import settings
from django.db import connection

from apps.core.clock import now_ms
from apps.engine.state import TaskState, WorkflowState

EVENT_TABLE = "engine_execution_event"
REASON_CHARS = 500
SMALL_PAYLOAD_BYTES = 2048
TERMINAL_KIND = {"TIMED_OUT": "task.timed_out", "CANCELED": "task.canceled", "SKIPPED": "task.skipped"}
# workflow fields whose changes ``workflow.updated`` records: {event name: WorkflowState attribute}
TRACKED_FIELDS = {"input": "input", "output": "output", "variables": "variables",
                  "createTime": "create_time", "correlationId": "correlation_id"}
TRACKED_COLUMNS = {column: name for name, column in TRACKED_FIELDS.items()}
PAYLOAD_FIELDS = ("input", "output", "variables")
# room left in an event for its own keys when payloads are budgeted into it (bytes)
EVENT_OVERHEAD_BYTES = 256

_context: ContextVar[dict | None] = ContextVar("conductor_history_actor", default=None)


# --- who and why ------------------------------------------------------------------------------

@contextlib.contextmanager
def acting(by: str | None = None, *, reason: str | None = None, action: str | None = None,
           workflow_id: str | None = None, params: dict | None = None):
    """Attribute the changes made inside the block: ``by`` who (``user:<name>``,
    ``app:<application>``), ``reason`` why. With ``action`` (and the ``workflow_id`` it
    targets) the first save of that workflow inside the block records an ``action`` event
    (unless the engine service recorded its own, which then takes ``by``/``reason``).
    Nests: inner values override outer ones."""
    outer = _context.get() or {}
    ctx = dict(outer)
    if by:
        ctx["by"] = by
    if reason:
        ctx["reason"] = reason
    if action:
        ctx.update(action=action, target=workflow_id, params=dict(params or {}), done=[False])
    token = _context.set(ctx)
    try:
        yield ctx
    finally:
        _context.reset(token)


def actor() -> dict:
    """The current ``acting`` context (``{}`` outside any)."""
    return _context.get() or {}


# --- encoding and bounds ------------------------------------------------------------------------

def _max_bytes() -> int:
    return int(settings.CONDUCTOR.get("HISTORY_EVENT_MAX_BYTES", 32768))


def _dumps(value) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str)


def payload_size(value) -> int:
    """Bytes of ``value`` as compact JSON (0 for an empty or missing payload)."""
    return len(_dumps(value)) if value else 0


def _small(value) -> object:
    """``value`` if its JSON is at most ``SMALL_PAYLOAD_BYTES``, else ``{"omittedBytes": n}``."""
    size = payload_size(value)
    return value if size <= SMALL_PAYLOAD_BYTES else {"omittedBytes": size}


def _cut(text: str | None) -> str | None:
    return text[:REASON_CHARS] if isinstance(text, str) and len(text) > REASON_CHARS else text


def bounded(data: dict, limit: int | None = None) -> bytes:
    """``data`` encoded as JSON of at most ``limit`` bytes (``HISTORY_EVENT_MAX_BYTES``):
    task snapshots lose their payloads then their tail (``tasksBeforeTotal`` keeps the
    count), a definition becomes ``{"omittedBytes": n}``, parameters likewise; whatever
    is still too large keeps only its scalar fields and ``truncated: true``."""
    limit = limit or _max_bytes()
    text = _dumps(data)
    if len(text) <= limit:
        return text
    data = dict(data)
    for key in ("definition", "params", "workflowBefore"):
        if key in data and payload_size(data[key]) > limit // 4:
            data[key] = {"omittedBytes": payload_size(data[key])}
    tasks = data.get("tasksBefore")
    if tasks:
        slim = [{k: v for k, v in t.items() if k not in ("output", "input")} for t in tasks]
        data["tasksBefore"] = slim
        text = _dumps(data)
        if len(text) > limit:
            per = max(1, len(_dumps(slim)) // len(slim))
            keep = max(0, (limit - (len(text) - len(_dumps(slim)))) // per - 1)
            data["tasksBefore"] = slim[:keep]
            data["tasksBeforeTotal"] = len(tasks)
    text = _dumps(data)
    if len(text) <= limit:
        return text
    scalars = {k: (_cut(v) if isinstance(v, str) else v) for k, v in data.items()
               if v is None or isinstance(v, (str, int, float, bool))}
    scalars["truncated"] = True
    return _dumps(scalars)[:limit] if len(_dumps(scalars)) > limit else _dumps(scalars)


# --- what a task looks like in events -----------------------------------------------------------

def _progress(d: dict, t: TaskState) -> dict:
    """``d`` with the task's times, worker, reason and child workflow, where set."""
    if t.start_time:
        d["startTime"] = t.start_time
    if t.end_time:
        d["endTime"] = t.end_time
    if t.worker_id:
        d["workerId"] = t.worker_id
    if t.reason_for_incompletion:
        d["reason"] = _cut(t.reason_for_incompletion)
    if t.sub_workflow_id:
        d["subWorkflowId"] = t.sub_workflow_id
    return d


def task_core(t: TaskState) -> dict:
    """The fields that place a task in the graph, the task list and the timeline."""
    d = _progress({"ref": t.reference_task_name, "type": t.task_type, "name": t.task_def_name, "seq": t.seq,
                   "iteration": t.iteration, "retryCount": t.retry_count, "status": t.status,
                   "scheduledTime": t.scheduled_time}, t)
    if t.retried_task_id:
        d["retriedTaskId"] = t.retried_task_id
    if t.task_type in ("SWITCH", "DECISION"):
        d["case"] = (t.input_data or {}).get("case")
    elif t.task_type == "FORK_JOIN_DYNAMIC":
        forked = (t.input_data or {}).get("forkedTasks")
        if forked:
            d["forkedTasks"] = forked
    return d


def _snapshot_task(t: TaskState) -> dict:
    d = task_core(t)
    d["taskId"] = t.task_id
    d["pollCount"] = t.poll_count
    d["output"] = _small(t.output_data)
    d["input"] = _small(t.input_data)
    return d


def _update(t: TaskState, previous: str | None, output_size: int | None, by: str | None) -> dict:
    d = _progress({"ref": t.reference_task_name, "from": previous, "to": t.status, "retryCount": t.retry_count}, t)
    if t.callback_after_seconds:
        d["callbackAfterSeconds"] = t.callback_after_seconds
    d["outputSize"] = output_size if output_size is not None else payload_size(t.output_data)
    if by:
        d["by"] = by
    return d


# --- appending ---------------------------------------------------------------------------------

def _json_placeholder() -> str:
    return "%s::jsonb" if connection.vendor == "postgresql" else "%s"


class Batch:
    """Events of one change, inserted by ``write`` in one statement."""

    __slots__ = ("workflow_id", "now", "rows")

    def __init__(self, workflow_id: str, now: int | None = None):
        self.workflow_id = workflow_id
        self.now = now if now is not None else now_ms()
        self.rows: list[tuple] = []

    def add(self, kind: str, data: dict, task_id: str | None = None, workflow_id: str | None = None) -> None:
        self.rows.append((workflow_id or self.workflow_id, self.now, kind, task_id, bounded(data).decode()))

    def write(self, cursor) -> None:
        """Insert the events (one multi-row INSERT) and, on a sample of saves, compact;
        inside ``deferring`` both wait for ``write_deferred``."""
        if not self.rows:
            return
        every = int(settings.CONDUCTOR.get("HISTORY_COMPACT_EVERY", 64))
        sampled = every <= 1 or random.random() < len(self.rows) / every
        held = _deferred.rows
        if held is not None:
            held.extend(self.rows)
            if sampled:
                _deferred.compact.update(r[0] for r in self.rows)
            return
        _insert(cursor, self.rows)
        if sampled:
            for workflow_id in {r[0] for r in self.rows}:
                compact(workflow_id, cursor=cursor)


def _insert(cursor, rows: list[tuple]) -> None:
    """The events ``rows`` on ``cursor`` (``store.sql_cursor``'s): one COPY on PostgreSQL
    (``copy_rows``), one multi-row INSERT on SQLite."""
    if connection.vendor == "postgresql":
        cursor.copy_rows(EVENT_TABLE, _EVENT_COLUMNS, rows)
        return
    cast = _json_placeholder()
    sql = (f"INSERT INTO {EVENT_TABLE} (workflow_id, time, kind, task_id, data) VALUES "
           + ", ".join([f"(%s, %s, %s, %s, {cast})"] * len(rows)))
    cursor.execute(sql, [v for row in rows for v in row])


_EVENT_COLUMNS = ("workflow_id", "time", "kind", "task_id", "data")


class _Deferred(threading.local):
    """Per thread: the events held by ``deferring`` (None outside it) and the executions
    whose history a sampled save asked to compact."""

    def __init__(self):
        self.rows: list[tuple] | None = None
        self.compact: set[str] = set()


_deferred = _Deferred()


@contextlib.contextmanager
def deferring():
    """``with history.deferring():`` the events of the saves made in this thread are held,
    not inserted, until ``write_deferred`` (one INSERT for all of them; the fused batch
    of ``store.fused``). Leaving the block drops what was not written (a rolled-back
    batch). Not reentrant."""
    _deferred.rows, _deferred.compact = [], set()
    try:
        yield
    finally:
        _deferred.rows, _deferred.compact = None, set()


def write_deferred(cursor) -> None:
    """Insert the events held by ``deferring`` so far (in the order they were made) and
    run the compactions the sampled saves asked for; the block goes on holding later ones."""
    rows, ids = _deferred.rows, _deferred.compact
    if rows:
        _insert(cursor, rows)
        rows.clear()
    for workflow_id in sorted(ids):
        compact(workflow_id, cursor=cursor)
    ids.clear()


def _action_event(batch: Batch, note: dict | None) -> dict | None:
    """The ``action`` event data of this save: the service's own note, with who and why
    from ``acting``; or the ``acting`` action aimed at this workflow, once."""
    ctx = actor()
    aimed = ctx.get("action") and ctx.get("target") == batch.workflow_id and not ctx["done"][0]
    if not note and not aimed:
        return None
    data = {"action": (note or {}).get("action") or ctx.get("action")}
    if ctx.get("by"):
        data["by"] = ctx["by"]
    reason = (note or {}).get("reason") or ctx.get("reason")
    if reason:
        data["reason"] = _cut(str(reason))
    params = dict(ctx.get("params") or {}) if aimed else {}
    params.update((note or {}).get("params") or {})
    if params:
        data["params"] = params
    if aimed:
        ctx["done"][0] = True
    return data


def record_start(wf: WorkflowState, now: int | None = None) -> Batch:
    """Events of a new execution (its first tasks included); the caller writes them."""
    batch = Batch(wf.workflow_id, now)
    by = actor().get("by")
    data = {"status": wf.status, "version": wf.workflow_version, "correlationId": wf.correlation_id,
            "tracked": list(TRACKED_FIELDS)}
    if by:
        data["by"] = by
    batch.add("workflow.started", data)
    for t in wf.tasks:
        _new_task(batch, t)
    return batch


def _new_task(batch: Batch, t: TaskState) -> None:
    kind = "task.skipped" if t.status == "SKIPPED" else "task.retried" if t.retried_task_id else "task.scheduled"
    batch.add(kind, task_core(t), t.task_id)


def prior_snapshot(tasks: list[TaskState], wf: WorkflowState | None) -> dict:
    """What a rerun, restart or retry is about to overwrite, as stored (``store.save``
    reads it only on those rare paths): ``{"tasksBefore": [...], "workflowBefore": {...}}``
    (payloads kept up to ``SMALL_PAYLOAD_BYTES`` each)."""
    before: dict = {"tasksBefore": [_snapshot_task(t) for t in tasks]}
    if wf is not None:
        before["workflowBefore"] = {
            "status": wf.status, "version": wf.workflow_version, "reason": _cut(wf.reason_for_incompletion),
            "createTime": wf.create_time, "endTime": wf.end_time, "correlationId": wf.correlation_id,
            "input": _small(wf.input), "output": _small(wf.output),
        }
    return before


def record_save(cursor, wf: WorkflowState, *, previous_status: str | None, note: dict | None,
                new_tasks: list[TaskState], changed: list[tuple[TaskState, str | None]],
                removed: list[tuple[str, str, str, int]], prior: dict | None,
                old_definition: dict | None, output_sizes: dict[str, int],
                fields_before: dict[str, tuple] | None = None) -> None:
    """Append the events of one ``store.save`` (see the module doc), in this order: the
    operator action (with the prior state), removed tasks, the replaced definition, task
    status changes, new tasks, the workflow fields changed, the workflow status.
    ``removed`` is ``(task_id, ref, status, seq)`` of deleted tasks; ``changed`` ``(task,
    status as loaded)``; ``fields_before`` the changed ``TRACKED_FIELDS`` (by column
    name) as ``(value before, JSON text before or None, bytes of the new JSON or None)``
    (see ``fields_event``)."""
    batch = Batch(wf.workflow_id)
    action = _action_event(batch, note)
    if action is not None or prior is not None:
        data = action or {"action": "reopen"}
        if prior:
            data.update(prior)
        batch.add("action", data)
    for task_id, ref, status, seq in removed:
        batch.add("task.removed", {"ref": ref, "status": status, "seq": seq}, task_id)
    if old_definition is not None:
        batch.add("definition.replaced", {"fromVersion": int(old_definition.get("version") or 0),
                                          "toVersion": wf.workflow_version, "definition": old_definition})
    by = actor().get("by")
    for t, previous in changed:
        kind = TERMINAL_KIND.get(t.status, "task.updated")
        batch.add(kind, _update(t, previous, output_sizes.get(t.task_id), by), t.task_id)
    for t in new_tasks:
        _new_task(batch, t)
    if fields_before:
        batch.add("workflow.updated", fields_event(fields_before))
    if wf.status != previous_status:
        data = {"from": previous_status, "to": wf.status}
        if wf.reason_for_incompletion:
            data["reason"] = _cut(wf.reason_for_incompletion)
        batch.add("workflow.status", data)
    batch.write(cursor)


def _decode(text: str):
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        import json

        return json.loads(text)


def fields_event(fields_before: dict[str, tuple], limit: int | None = None) -> dict:
    """The ``workflow.updated`` data of changed workflow fields (``{column: (value before,
    JSON text before or None, bytes of the new JSON or None)}``): scalars as they were,
    payloads smallest first while the event stays under ``limit``
    (``HISTORY_EVENT_MAX_BYTES``), the others ``{"omittedBytes": n}``. A payload's text is
    decoded only when it is kept."""
    limit = limit or _max_bytes()
    names = [TRACKED_COLUMNS[c] for c in TRACKED_FIELDS.values() if c in fields_before]
    data: dict = {"fields": names, "before": {}, "sizes": {}}
    room = limit - EVENT_OVERHEAD_BYTES
    payloads = []
    for name in names:
        value, text, new_size = fields_before[TRACKED_FIELDS[name]]
        if new_size is not None:
            data["sizes"][name] = new_size
        if name in PAYLOAD_FIELDS:
            payloads.append((len(text) if text is not None else payload_size(value), name, value, text))
        else:
            data["before"][name] = _cut(value) if isinstance(value, str) else value
            room -= len(_dumps({name: value}))
    for size, name, value, text in sorted(payloads, key=lambda p: p[0]):
        if size + len(name) + 4 <= room:
            data["before"][name] = value if text is None else _decode(text)
            room -= size + len(name) + 4
        else:
            data["before"][name] = {"omittedBytes": size}
    if not data["sizes"]:
        del data["sizes"]
    return data


def polled_events_from(relation: str) -> str:
    """PostgreSQL: the ``INSERT ... SELECT`` (one ``%s`` parameter: the time, epoch ms) of
    the ``task.polled`` events ``record_polls`` writes, for the rows of ``relation`` (claimed
    task rows with the task table's column names, after the claim) that obey no TaskDef
    limit, which a claim always hands out: so a claim writes its events in its own
    statement (``queue.claim``), and ``record_polls`` only those of limited tasks admitted.
    The same data as ``record_polls``."""
    return (f"INSERT INTO {EVENT_TABLE} (workflow_id, time, kind, task_id, data) "
            "SELECT workflow_id, %s, 'task.polled', task_id, jsonb_build_object("
            "'ref', reference_task_name, 'from', 'SCHEDULED', 'to', 'IN_PROGRESS', 'workerId', worker_id, "
            "'pollCount', poll_count, 'startTime', start_time) "
            f"FROM {relation} WHERE concurrent_exec_limit = 0 AND rate_limit_per_frequency = 0")


def record_polls(cursor, tasks: list[TaskState], now: int, *, kind: str = "task.polled") -> None:
    """Append one ``task.polled`` event per task a poll handed out (or an async system
    task the cluster started), in the claim's transaction."""
    if not tasks:
        return
    batch = Batch(tasks[0].workflow_id, now)
    for t in tasks:
        batch.add(kind, {"ref": t.reference_task_name, "from": "SCHEDULED", "to": "IN_PROGRESS",
                         "workerId": t.worker_id, "pollCount": t.poll_count, "startTime": t.start_time},
                  t.task_id, workflow_id=t.workflow_id)
    batch.write(cursor)


# --- compaction --------------------------------------------------------------------------------

# What a stripped event keeps: enough to replay the status transition.
_KEEP = frozenset({"ref", "type", "name", "seq", "iteration", "retryCount", "status", "from", "to",
                   "scheduledTime", "startTime", "endTime", "workerId", "retriedTaskId", "subWorkflowId",
                   "case", "action", "by", "fromVersion", "toVersion", "version", "compacted", "fields",
                   "tracked"})


def compact(workflow_id: str, *, cursor=None) -> dict:
    """Bring one execution's history back under ``HISTORY_MAX_EVENTS``: delete its oldest
    ``task.polled`` events, then strip the oldest events' details down to their status
    transition (``compacted: true``); a ``history.compacted`` event says how many.
    Returns ``{"deleted", "stripped"}`` so far for this execution (zeros when under the
    cap). Runs in the caller's transaction."""
    cap = int(settings.CONDUCTOR.get("HISTORY_MAX_EVENTS", 5000))
    own = cursor is None
    cursor = cursor or connection.cursor()
    try:
        cursor.execute(f"SELECT COUNT(*) FROM {EVENT_TABLE} WHERE workflow_id = %s", [workflow_id])
        count = cursor.fetchone()[0]
        if count <= cap:
            return {"deleted": 0, "stripped": 0}
        target = max(1, cap * 3 // 4)
        excess = count - target
        # earlier compaction markers are folded into the new one
        cursor.execute(f"SELECT id, data FROM {EVENT_TABLE} WHERE workflow_id = %s AND kind = 'history.compacted'",
                       [workflow_id])
        markers = cursor.fetchall()
        totals = {"deleted": 0, "stripped": 0}
        for _, data in markers:
            data = orjson.loads(data) if isinstance(data, (str, bytes)) else data
            totals["deleted"] += int(data.get("deleted") or 0)
            totals["stripped"] += int(data.get("stripped") or 0)
        cursor.execute(f"SELECT id FROM {EVENT_TABLE} WHERE workflow_id = %s AND kind = 'task.polled' "
                       "ORDER BY id LIMIT %s", [workflow_id, excess])
        polls = [r[0] for r in cursor.fetchall()] + [m[0] for m in markers]
        if polls:
            cursor.execute(f"DELETE FROM {EVENT_TABLE} WHERE id IN (" + ", ".join(["%s"] * len(polls)) + ")", polls)
        stripped = 0
        if count - len(polls) > target:
            cursor.execute(f"SELECT id, data FROM {EVENT_TABLE} WHERE workflow_id = %s ORDER BY id LIMIT %s",
                           [workflow_id, count - len(polls) - target])
            updates = []
            for event_id, data in cursor.fetchall():
                data = orjson.loads(data) if isinstance(data, (str, bytes)) else data
                if data.get("compacted"):
                    continue
                slim = {k: v for k, v in data.items() if k in _KEEP}
                slim["compacted"] = True
                updates.append((_dumps(slim).decode(), event_id))
            cast = _json_placeholder()
            if updates:
                cursor.executemany(f"UPDATE {EVENT_TABLE} SET data = {cast} WHERE id = %s", updates)
            stripped = len(updates)
        result = {"deleted": len(polls) - len(markers), "stripped": stripped}
        if polls or stripped:
            result = {"deleted": totals["deleted"] + result["deleted"], "stripped": totals["stripped"] + stripped}
            batch = Batch(workflow_id)
            batch.rows.append((workflow_id, batch.now, "history.compacted", None, _dumps(result).decode()))
            cast = _json_placeholder()
            cursor.execute(f"INSERT INTO {EVENT_TABLE} (workflow_id, time, kind, task_id, data) "
                           f"VALUES (%s, %s, %s, %s, {cast})", list(batch.rows[0]))
        return result
    finally:
        if own:
            cursor.close()


# --- reading -----------------------------------------------------------------------------------

def event_json(row) -> dict:
    """An ExecutionEvent as served by ``GET /api/workflow/{id}/history``."""
    out = {"seq": row.id, "time": row.time, "kind": row.kind, "data": row.data}
    if row.task_id:
        out["taskId"] = row.task_id
    return out


def events(workflow_id: str, *, after: int = 0, limit: int = 500, upto: int | None = None) -> list:
    """ExecutionEvent rows of one execution with ``seq > after`` (and ``<= upto``), in seq
    order, at most ``limit``."""
    from apps.engine.models import ExecutionEvent

    qs = ExecutionEvent.objects.filter(workflow_id=workflow_id, id__gt=after)
    if upto is not None:
        qs = qs.filter(id__lte=upto)
    return list(qs.order_by("id")[:limit])


def _task_from_core(task_id: str, workflow_id: str, d: dict) -> TaskState:
    t = TaskState(task_id=task_id, workflow_id=workflow_id, task_type=d.get("type") or "",
                  task_def_name=d.get("name") or "", reference_task_name=d.get("ref") or "",
                  seq=int(d.get("seq") or 0), status=d.get("status") or "SCHEDULED",
                  iteration=int(d.get("iteration") or 0), retry_count=int(d.get("retryCount") or 0),
                  scheduled_time=int(d.get("scheduledTime") or 0))
    _apply(t, d)
    if "case" in d:
        t.input_data = {"case": d["case"]}
    if d.get("forkedTasks"):
        t.input_data = {"forkedTasks": d["forkedTasks"]}
    if isinstance(d.get("output"), dict) and "omittedBytes" not in d["output"]:
        t.output_data = d["output"]
    if isinstance(d.get("input"), dict) and "omittedBytes" not in d["input"] and not t.input_data:
        t.input_data = d["input"]
    t.poll_count = int(d.get("pollCount") or 0)
    return t


def _apply(t: TaskState, d: dict) -> None:
    if d.get("to"):
        t.status = d["to"]
    if d.get("startTime"):
        t.start_time = d["startTime"]
    if "endTime" in d:
        t.end_time = d["endTime"] or 0
    elif d.get("to") in ("SCHEDULED", "IN_PROGRESS"):
        t.end_time = 0
    if d.get("workerId"):
        t.worker_id = d["workerId"]
    if "reason" in d or d.get("to"):
        t.reason_for_incompletion = d.get("reason")
    if d.get("subWorkflowId"):
        t.sub_workflow_id = d["subWorkflowId"]
    if "retryCount" in d:
        t.retry_count = int(d["retryCount"] or 0)
    if d.get("pollCount"):
        t.poll_count = int(d["pollCount"])


RERUN_ACTIONS = ("rerun", "restart")
FAILED_TASK = ("FAILED", "FAILED_WITH_TERMINAL_ERROR")


@dataclass
class Moment:
    """The execution as it was just after one event of its history (``moment``).

    ``state`` the replayed execution; ``event`` that event (``event_json``); ``unknown``
    ``{field: why}`` for the ``TRACKED_FIELDS`` whose value then is not known (left at
    their present value in ``state``: the caller says so); ``rerun`` the last rerun or
    restart up to then, ``{"action", "seq", "time"}``, or None."""

    state: WorkflowState
    event: dict | None
    unknown: dict[str, str]
    rerun: dict | None


def last_rerun(workflow_id: str, upto: int | None = None) -> dict | None:
    """The last ``rerun``/``restart`` action of an execution (up to event ``upto``):
    ``{"action", "seq", "time"}`` or None. One indexed query."""
    from apps.engine.models import ExecutionEvent

    qs = ExecutionEvent.objects.filter(workflow_id=workflow_id, kind="action", data__action__in=list(RERUN_ACTIONS))
    if upto is not None:
        qs = qs.filter(id__lte=upto)
    row = qs.order_by("-id").values_list("id", "time", "data__action").first()
    return {"action": row[2], "seq": row[0], "time": row[1]} if row else None


def fields_at(wf: WorkflowState, upto: int, tracked: list | None) -> tuple[dict, dict]:
    """The ``TRACKED_FIELDS`` of an execution just after event ``upto``: ``({field:
    value}, {field: why not known})``. A field's value is the ``before`` of its first
    ``workflow.updated`` after ``upto``, else its present value (``wf``); ``tracked`` is
    what the execution's ``workflow.started`` says is recorded. Reads the later events'
    field lists, then at most one event per field."""
    from apps.engine.models import ExecutionEvent

    values: dict = {}
    unknown: dict = {}
    pending = {name for name in TRACKED_FIELDS if name in (tracked or ())}
    for name in TRACKED_FIELDS:
        if name not in pending:
            unknown[name] = "not recorded by this execution's history (it began before such changes were kept)"
    first: dict[str, int] = {}
    if pending:
        later = (ExecutionEvent.objects.filter(workflow_id=wf.workflow_id, id__gt=upto, kind="workflow.updated")
                 .order_by("id").values_list("id", "data__fields"))
        for event_id, names in later.iterator(chunk_size=500):
            for name in names or ():
                if name in pending:
                    pending.discard(name)
                    first[name] = event_id
            if not pending:
                break
    data_of = dict(ExecutionEvent.objects.filter(id__in=set(first.values())).values_list("id", "data")) if first else {}
    for name, column in TRACKED_FIELDS.items():
        if name in unknown:
            continue
        if name not in first:
            values[name] = getattr(wf, column)
            continue
        before = (data_of.get(first[name]) or {}).get("before") or {}
        value = before.get(name, _MISSING)
        if value is _MISSING:
            unknown[name] = "detail compacted out of the history"
        elif isinstance(value, dict) and set(value) == {"omittedBytes"}:
            unknown[name] = (f"{value['omittedBytes']} bytes then, more than an event of the history keeps "
                             "(HISTORY_EVENT_MAX_BYTES)")
        else:
            values[name] = value
    return values, unknown


_MISSING = object()


def state_at(wf: WorkflowState, upto: int) -> tuple[WorkflowState, dict | None]:
    """``moment(wf, upto)`` as ``(state, event)``."""
    m = moment(wf, upto)
    return m.state, m.event


def moment(wf: WorkflowState, upto: int) -> Moment:
    """The execution as it was just after event ``upto`` (its seq), replayed from its
    history (see the module doc and ``Moment``). The definition is the one it ran then (a
    later ``definition.replaced`` event holds it); tasks carry what the events recorded
    (payloads only where a snapshot kept them); status, times, reason, correlation id,
    input, output and variables are those of then where the history has them. ``wf`` is
    the current execution (without tasks is enough)."""
    from apps.engine.models import ExecutionEvent

    rows = list(ExecutionEvent.objects.filter(workflow_id=wf.workflow_id, id__lte=upto).order_by("id"))
    later_def = (ExecutionEvent.objects.filter(workflow_id=wf.workflow_id, id__gt=upto, kind="definition.replaced")
                 .order_by("id").first())
    other_origin = wf.re_run_from_workflow_id if wf.re_run_from_workflow_id != wf.workflow_id else None
    state = WorkflowState(workflow_id=wf.workflow_id, workflow_name=wf.workflow_name,
                          workflow_version=wf.workflow_version, status="RUNNING", definition=wf.definition,
                          correlation_id=wf.correlation_id, parent_workflow_id=wf.parent_workflow_id,
                          parent_workflow_task_id=wf.parent_workflow_task_id, created_by=wf.created_by,
                          priority=wf.priority, create_time=wf.create_time, input={}, output={},
                          re_run_from_workflow_id=other_origin)
    if later_def is not None:
        old = later_def.data.get("definition")
        if isinstance(old, dict) and "omittedBytes" not in old:
            state.definition = old
        state.workflow_version = int(later_def.data.get("fromVersion") or state.workflow_version)
    tasks: dict[str, TaskState] = {}
    current = None
    tracked = None
    rerun = None
    for ev in rows:
        d = ev.data or {}
        kind = ev.kind
        if kind == "workflow.started":
            state.status = d.get("status") or "RUNNING"
            state.create_time = ev.time
            tracked = d.get("tracked")
        elif kind == "workflow.status":
            state.status = d.get("to") or state.status
            state.reason_for_incompletion = d.get("reason")
            ended = state.status not in ("RUNNING", "PAUSED")
            state.end_time = ev.time if ended else 0
            # as the decider notes them when a workflow ends (note_failed_tasks); a reopen clears them
            failed = [t for t in tasks.values() if t.status in FAILED_TASK] if ended else []
            state.failed_reference_task_names = sorted({t.reference_task_name for t in failed})
            state.failed_task_names = sorted({t.task_def_name for t in failed})
        elif kind in ("task.scheduled", "task.retried") or (kind == "task.skipped" and "from" not in d):
            tasks[ev.task_id] = _task_from_core(ev.task_id, wf.workflow_id, d)
        elif kind == "task.removed":
            tasks.pop(ev.task_id, None)
        elif kind == "action":
            if d.get("action") in RERUN_ACTIONS:
                rerun = {"action": d["action"], "seq": ev.id, "time": ev.time}
            if d.get("tasksBefore") is not None and "tasksBeforeTotal" not in d:
                # the prior state, as stored: authoritative (covers compacted or pre-history detail)
                tasks = {t["taskId"]: _task_from_core(t["taskId"], wf.workflow_id, t) for t in d["tasksBefore"]}
        elif kind.startswith("task.") and ev.task_id in tasks:
            _apply(tasks[ev.task_id], d)
            tasks[ev.task_id].update_time = ev.time
        current = ev
    state.tasks = sorted(tasks.values(), key=lambda t: t.seq)
    state.update_time = current.time if current else state.create_time
    values, unknown = fields_at(wf, upto, tracked)
    for name, value in values.items():
        setattr(state, TRACKED_FIELDS[name], value)
    for name in unknown:
        if name not in PAYLOAD_FIELDS:
            continue
        setattr(state, TRACKED_FIELDS[name], {})
    return Moment(state=state, event=event_json(current) if current else None, unknown=unknown, rerun=rerun)
