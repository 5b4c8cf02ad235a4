"""The execution page's History tab: the events of ``apps.engine.history`` with a line of
text each, and the execution as it was at one of them (the same snapshot shape as the
live view, ``apps.ui.live.snapshot_of``, so the graph, task list and timeline redraw it).
"""
from __future__ import annotations

from apps.engine import history
from apps.engine.state import WorkflowState
from apps.ui import live

ACTION_LABELS = {
    "restart": "Restart", "retry": "Retry", "rerun": "Rerun", "terminate": "Terminate", "pause": "Pause",
    "resume": "Resume", "skip": "Skip task", "reset_callbacks": "Reset callbacks", "signal": "Signal",
    "update_task_by_ref": "Task updated by reference", "complete_task": "Complete task", "fail_task": "Fail task",
    "reopen": "Reopened (a child was revived)",
}


def _size(n: int | None) -> str:
    if not n:
        return "no output"
    return f"output {n} B" if n < 1024 else f"output {n / 1024:.1f} KB"


def describe(kind: str, d: dict) -> str:
    """One line of text for an event (``kind``, ``data``) of the history list."""
    ref = d.get("ref") or ""
    if kind == "workflow.started":
        return f"Workflow started (v{d.get('version')})"
    if kind == "workflow.status":
        text = f"Workflow {d.get('from')} → {d.get('to')}"
        return text + (f": {d['reason']}" if d.get("reason") else "")
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
    return out, (rows[-1].id if more else None)


def snapshot_at(wf: WorkflowState, seq: int) -> dict:
    """The live-view snapshot of the execution as it was just after event ``seq``, with
    ``event`` (that event, described) and ``moment`` = seq. Workflow input, output and
    variables are not part of the history (their payloads say so)."""
    then, event = history.state_at(wf, seq)
    snap = live.snapshot_of(then, marker=f"history:{seq}")
    # payloads are not replayed: say so rather than show an empty object as if it were the past
    note = "(not kept in the history: \"Back to live\" shows the current value)"
    snap["payloads"] = {k: {"text": note, "truncated": False, "size": len(note)} for k in ("input", "output", "variables")}
    if event is not None:
        event["text"] = describe(event["kind"], event["data"] or {})
    snap["event"] = event
    snap["moment"] = seq
    return snap
