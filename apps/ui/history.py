"""The execution page's History tab: the events of ``apps.engine.history`` with a line of
text each, and the execution as it was at one of them (the same snapshot shape as the
live view, ``apps.ui.live.snapshot_of``, so the graph, task list and timeline redraw it).
"""
from __future__ import annotations

from apps.engine import history
from apps.engine.models import ExecutionEvent
from apps.engine.state import WorkflowState
from apps.ui import live
from apps.ui.selectors import UUID_RE, name_tasks

ACTION_LABELS = {
    "restart": "Restart", "retry": "Retry", "rerun": "Rerun", "terminate": "Terminate", "pause": "Pause",
    "resume": "Resume", "skip": "Skip task", "reset_callbacks": "Reset callbacks", "signal": "Signal",
    "update_task_by_ref": "Task updated by reference", "complete_task": "Complete task", "fail_task": "Fail task",
    "reopen": "Reopened (a child was revived)",
}


def _bytes(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB"


def _size(n: int | None) -> str:
    return f"output {_bytes(n)}" if n else "no output"


FIELD_LABELS = {"input": "input", "output": "output", "variables": "variables", "createTime": "start time",
                "correlationId": "correlation id"}


def describe(kind: str, d: dict) -> str:
    """One line of text for an event (``kind``, ``data``) of the history list."""
    ref = d.get("ref") or ""
    if kind == "workflow.started":
        return f"Workflow started (v{d.get('version')})"
    if kind == "workflow.status":
        text = f"Workflow {d.get('from')} → {d.get('to')}"
        return text + (f": {d['reason']}" if d.get("reason") else "")
    if kind == "workflow.updated":
        sizes = d.get("sizes") or {}
        parts = [FIELD_LABELS.get(f, f) + (f" ({_bytes(sizes[f])})" if f in sizes else "") for f in d.get("fields") or []]
        return "Workflow " + ", ".join(parts) + " changed" if parts else "Workflow fields changed"
    if kind == "task.scheduled":
        return f"{ref} scheduled ({d.get('type')}{', iteration ' + str(d['iteration']) if d.get('iteration') else ''})"
    if kind == "task.retried":
        return f"{ref} retried: attempt {int(d.get('retryCount') or 0) + 1}"
    if kind == "task.polled":
        return f"{ref} polled by {d.get('workerId') or 'a worker'}"
    if kind in ("task.updated", "task.timed_out", "task.canceled", "task.skipped"):
        if "from" not in d:
            return f"{ref} skipped"
        text = f"{ref} {d.get('from')} → {d.get('to')}"
        if d.get("to") not in ("SCHEDULED", "IN_PROGRESS"):
            text += f" ({_size(d.get('outputSize'))})"
        return text + (f": {d['reason']}" if d.get("reason") else "")
    if kind == "task.removed":
        return f"{ref} attempt removed (was {d.get('status')})"
    if kind == "action":
        name = d.get("action") or ""
        params = d.get("params") or {}
        if name == "restart" and params.get("useLatestDefinitions"):
            label = "Restart with the latest definition"
        else:
            label = ACTION_LABELS.get(name, name)
        text = label + (f" by {d['by']}" if d.get("by") else "")
        if d.get("reason"):
            text += f": {d['reason']}"
        if d.get("tasksBefore") is not None:
            text += f" ({d.get('tasksBeforeTotal', len(d['tasksBefore']))} task executions kept as they were)"
        return text
    if kind == "definition.replaced":
        return f"Definition v{d.get('fromVersion')} replaced by v{d.get('toVersion')}"
    if kind == "history.compacted":
        return f"Older detail compacted ({d.get('deleted', 0)} poll events deleted, {d.get('stripped', 0)} stripped)"
    return kind


def event_rows(workflow_id: str, *, after: int, limit: int) -> tuple[list[dict], int | None]:
    """``([{seq, time, kind, taskId?, data, text}], next after or None)``."""
    rows = history.events(workflow_id, after=after, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    out = []
    for row in rows:
        item = history.event_json(row)
        item["text"] = describe(row.kind, row.data or {})
        out.append(item)
    refs = _refs_in(workflow_id, rows, [item["text"] for item in out])
    if refs:
        for item in out:
            item["text"] = name_tasks(item["text"], refs)[0]
    return out, (rows[-1].id if more else None)


def _refs_in(workflow_id: str, rows: list, texts: list[str]) -> dict[str, str]:
    """task id -> reference of the task ids that ``texts`` mention (Conductor's reasons
    name tasks by id), from the events themselves (also of attempts a rerun removed):
    the rows at hand, then one query for the others."""
    ids = {m for text in texts for m in UUID_RE.findall(text)}
    if not ids:
        return {}
    refs = {row.task_id: (row.data or {}).get("ref") for row in rows if row.task_id in ids and (row.data or {}).get("ref")}
    missing = ids - refs.keys()
    if missing:
        refs.update((task_id, ref) for task_id, ref in ExecutionEvent.objects.filter(
            workflow_id=workflow_id, task_id__in=missing).values_list("task_id", "data__ref") if ref)
    return refs


def _not_kept(why: str) -> dict:
    text = f"(not known at this moment: {why}; \"Back to live\" shows the present value)"
    return {"text": text, "truncated": False, "size": len(text), "unknown": True}


def snapshot_at(wf: WorkflowState, seq: int) -> dict:
    """The live-view snapshot of the execution as it was just after event ``seq``
    (``history.moment``), with ``event`` (that event, described, task ids in its text
    named by reference) and ``moment`` = seq. Header, input, output and variables are
    those of then; a payload the history does not have says why (``"unknown": true``)."""
    m = history.moment(wf, seq)
    snap = live.snapshot_of(m.state, marker=f"history:{seq}", rerun=m.rerun)
    for name in history.PAYLOAD_FIELDS:
        if name in m.unknown:
            snap["payloads"][name] = _not_kept(m.unknown[name])
    event = m.event
    if event is not None:
        refs = {t.task_id: t.reference_task_name for t in m.state.tasks}
        event["text"] = name_tasks(describe(event["kind"], event["data"] or {}), refs)[0]
    snap["event"] = event
    snap["moment"] = seq
    return snap
