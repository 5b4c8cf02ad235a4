""""Why is it stuck?": for each pending task of a running execution, what it waits for.

``diagnose(workflow_id)`` returns one entry per SCHEDULED or IN_PROGRESS task with the
facts an operator asks for first (attempt and retries left, when it may next be handed
out or times out, the last error, the worker that last held it, its queue's depth, oldest
age and pollers) and ``verdict``: one sentence saying what the task waits for, with
``level`` "warn" when nothing will move it by itself (no worker polls its queue).
Reads only; each query is bounded by the execution's tasks or one queue's index range,
and their number by the execution's distinct queues and task names, not its pending
tasks (the panel reloads every 10 s while the execution runs).
"""
from __future__ import annotations

from apps.core.clock import now_ms
from apps.engine import store
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.engine.retries import expected_retry_count
from apps.metadata.models import TaskDef
from apps.problems import queues

PENDING = ("SCHEDULED", "IN_PROGRESS")


def _seconds(ms: int) -> str:
    """A span of milliseconds as ``12 s``, ``3 min`` or ``2 h``."""
    s = max(0, ms) // 1000
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h"


def _task_def(name: str, workflow_task: dict, registered: dict[str, dict | None]) -> dict | None:
    """The TaskDef a task runs with: the WorkflowTask's inline ``taskDefinition``, else the
    registered one (read once per name into ``registered``), else None."""
    inline = (workflow_task or {}).get("taskDefinition")
    if isinstance(inline, dict):
        return inline
    if name not in registered:
        registered[name] = TaskDef.objects.filter(name=name).values_list("definition", flat=True).first()
    return registered[name]


def _previous_attempts(workflow_id: str, tasks: list[TaskExecution]) -> dict[str, TaskExecution]:
    """``{task_id: the attempt before it}`` (same reference and iteration, the highest
    lower seq) for those of ``tasks`` that have one: one query over the execution's
    attempts of those references and iterations, not one per task."""
    if not tasks:
        return {}
    found: dict[tuple[str, int], list[TaskExecution]] = {}
    for row in (TaskExecution.objects.filter(workflow_id=workflow_id,
                                             reference_task_name__in={t.reference_task_name for t in tasks},
                                             iteration__in={t.iteration for t in tasks})
                .only("task_id", "reference_task_name", "iteration", "seq", "reason_for_incompletion", "worker_id",
                      "update_time")):
        found.setdefault((row.reference_task_name, row.iteration), []).append(row)
    out = {}
    for t in tasks:
        earlier = [r for r in found.get((t.reference_task_name, t.iteration), []) if r.seq < t.seq]
        if earlier:
            out[t.task_id] = max(earlier, key=lambda r: r.seq)
    return out


def _verdict(t: TaskExecution, entry: dict, now: int, stale_s: int) -> tuple[str, str]:
    """(sentence, level "ok"|"info"|"warn") of what ``t`` waits for."""
    q = entry.get("queue")
    if t.task_type == "HUMAN":
        return "Waiting for a person to complete it (see the human-task inbox).", "info"
    if t.task_type == "WAIT":
        if t.timer_at:
            return f"Waiting until its timer fires ({_seconds(t.timer_at - now)} from now).", "info"
        return "Waiting for a signal: complete it through the API, an event or the inbox.", "info"
    if t.task_type == "SUB_WORKFLOW" and t.sub_workflow_id:
        return "Waiting for its sub-workflow to end.", "info"
    if q is None:
        if t.timer_at:
            return f"A system task due in {_seconds(t.timer_at - now)}.", "info"
        return f"A system task ({t.task_type}) the engine runs; it waits on what it depends on.", "info"
    if t.status == "SCHEDULED":
        if t.visible_at and t.visible_at > now:
            return (f"Held back until {_seconds(t.visible_at - now)} from now "
                    f"(a retry delay or callbackAfterSeconds), then handed to the next poll.", "info")
        if q["last_poll"] is None:
            return (f"No worker has ever polled the queue '{q['queue']}': start a worker for task type "
                    f"'{t.task_def_name}'{' in domain ' + repr(t.domain) if t.domain else ''}.", "warn")
        if now - q["last_poll"] > stale_s * 1000:
            return (f"No worker has polled the queue '{q['queue']}' for {_seconds(now - q['last_poll'])}: "
                    f"its workers are down or poll another domain.", "warn")
        return (f"Queued behind {max(0, q['depth'] - 1)} other task(s); workers are polling "
                f"(last poll {_seconds(now - q['last_poll'])} ago).", "ok")
    # IN_PROGRESS worker task
    held = f"Held by worker {t.worker_id or '(no id)'} since {_seconds(now - (t.start_time or t.update_time))} ago"
    last = next((p["last_poll"] for p in q["pollers"] if p["worker_id"] == (t.worker_id or "(no id)")), None)
    if t.worker_id and last is not None and now - last > stale_s * 1000:
        until = (f" it is handed out again when its response timeout ends, in {_seconds(entry['timeout_at'] - now)}"
                 if entry.get("timeout_at") else " nothing hands it out again (no responseTimeoutSeconds)")
        return held + f", and that worker has not polled for {_seconds(now - last)}: it may be gone;" + until + ".", \
            "warn"
    if entry.get("timeout_at"):
        return held + f"; it times out in {_seconds(entry['timeout_at'] - now)} if the worker does not answer.", "ok"
    return held + ".", "ok"


def diagnose(workflow_id: str, now: int | None = None) -> list[dict]:
    """One entry per pending task of ``workflow_id``, in schedule order: ``{"task_id",
    "ref", "type", "status", "attempt" (1-based), "retries_left" (None when unknown),
    "next_at" (ms the task may next be handed out, or its timer, or None), "timeout_at"
    (ms its responseTimeoutSeconds ends for an IN_PROGRESS worker task, or None),
    "last_error" (this attempt's reason, else the previous attempt's), "worker" and
    "worker_at" (who last held it and when, this attempt or the previous one), "queue"
    (``queues.queue_facts`` for a worker task, None for a system task), "verdict",
    "level"}``."""
    now = now if now is not None else now_ms()
    stale_s = queues.stale_seconds_setting()
    out = []
    facts_cache: dict[str, dict] = {}
    registered: dict[str, dict | None] = {}  # TaskDefs by name, each read once
    definition = None  # the execution's definition snapshot, read once when a task needs it
    pending = list(TaskExecution.objects.filter(workflow_id=workflow_id, status__in=PENDING).order_by("seq"))
    previous_of = _previous_attempts(workflow_id, [t for t in pending if t.retry_count or not t.worker_id])
    for t in pending:
        if t.queue_name and not t.workflow_task and definition is None:
            definition = WorkflowExecution.objects.filter(pk=workflow_id).values_list("definition", flat=True).first() or {}
        workflow_task = store.workflow_task_of(t, definition or {}) if t.queue_name else {}
        task_def = _task_def(t.task_def_name, workflow_task, registered) if t.queue_name else None
        allowed = expected_retry_count(task_def, workflow_task) if task_def is not None else None
        previous = previous_of.get(t.task_id)
        entry = {
            "task_id": t.task_id, "ref": t.reference_task_name, "type": t.task_type, "status": t.status,
            "task_def_name": t.task_def_name, "attempt": t.retry_count + 1,
            "retries_left": max(0, allowed - t.retry_count) if allowed is not None else None,
            "next_at": (t.visible_at if t.status == "SCHEDULED" and t.visible_at > now else None) or t.timer_at,
            "timeout_at": (t.update_time + t.response_timeout_seconds * 1000)
            if t.status == "IN_PROGRESS" and t.queue_name and t.response_timeout_seconds else None,
            "last_error": t.reason_for_incompletion or (previous.reason_for_incompletion if previous else None),
            "worker": t.worker_id or (previous.worker_id if previous else None),
            "worker_at": (t.update_time if t.worker_id else (previous.update_time if previous else None)),
            "scheduled_time": t.scheduled_time,
            "queue": None,
        }
        if t.queue_name:
            if t.queue_name not in facts_cache:
                facts_cache[t.queue_name] = queues.queue_facts(t.queue_name, now)
            entry["queue"] = facts_cache[t.queue_name]
        entry["verdict"], entry["level"] = _verdict(t, entry, now, stale_s)
        out.append(entry)
    return out
