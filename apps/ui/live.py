"""Live execution view: the snapshot sent to a browser, the delta between two snapshots,
the cheap change marker the consumer polls, and the hook that wakes consumers at once
when this process commits a change.

Snapshot (``build_snapshot``)::

    {"header": {...},                       # status, reason, links, allowed actions
     "payloads": {"input"|"output"|"variables": {"text", "truncated", "size"}},
     "graph": {"nodes", "edges", "signature", "preview"},   # apps.ui.graph
     "tasks": [row, ...],                   # compact rows ordered by seq
     "marker": "..."}                       # the change marker it was built at

Delta (``diff``): only the parts that changed: ``header``, ``payloads``, ``graph`` (whole,
when its structure changed) or ``nodes``/``edges`` (changed data by id), ``tasks``
(changed or new rows) and ``removed`` (task ids). Applying the deltas in order to the
first snapshot gives the last snapshot (checked by the tests).
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import threading

from django.conf import settings
from django.db.models import Count, Max, Q

from apps.engine import history, store
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.engine.params import definition_ref
from apps.engine.state import WorkflowState
from apps.engine.status import TERMINAL_TASK
from apps.ui import graph as graph_mod
from apps.ui.actions import allowed_actions

log = logging.getLogger(__name__)

REASON_CHARS = 2000


def ui_setting(name: str):
    """One value of ``settings.CONDUCTOR_UI`` with the built-in default."""
    defaults = {
        "PAYLOAD_PREVIEW_CHARS": 20_000,
        "LIVE_POLL_SECONDS": 0.5,
        "QUEUE_STALE_POLL_SECONDS": 60,
        "QUEUE_RECENT_POLL_SECONDS": 3600,
        "GRAPH_DYNAMIC_EXPAND_LIMIT": 40,
    }
    return getattr(settings, "CONDUCTOR_UI", {}).get(name, defaults[name])


def preview(value, limit: int | None = None) -> dict:
    """A payload as indented JSON text, cut at ``limit`` characters:
    ``{"text", "truncated", "size"}`` (size of the whole text, in characters)."""
    limit = ui_setting("PAYLOAD_PREVIEW_CHARS") if limit is None else limit
    text = json.dumps(value, indent=2, sort_keys=False, default=str)
    if len(text) > limit:
        return {"text": text[:limit], "truncated": True, "size": len(text)}
    return {"text": text, "truncated": False, "size": len(text)}


def _cut(text: str | None, limit: int = REASON_CHARS) -> str | None:
    if text and len(text) > limit:
        return text[:limit] + "…"
    return text


def task_row(t) -> dict:
    """The compact row of one task execution used by the task list and the timeline."""
    row = {
        "taskId": t.task_id, "ref": t.reference_task_name, "defRef": definition_ref(t),
        "type": t.task_type, "name": t.task_def_name, "status": t.status, "seq": t.seq,
        "retryCount": t.retry_count, "iteration": t.iteration, "pollCount": t.poll_count,
        "scheduled": t.scheduled_time, "start": t.start_time, "end": t.end_time, "update": t.update_time,
        "workerId": t.worker_id, "reason": _cut(t.reason_for_incompletion, 300),
    }
    output = t.output_data if isinstance(t.output_data, dict) else {}
    sub_id = t.sub_workflow_id or output.get("subWorkflowId")
    if sub_id:
        row["subWorkflowId"] = sub_id
    return row


def header(wf: WorkflowState, rerun: dict | None = None) -> dict:
    """Header fields of an execution, with the actions its state allows. ``reason`` names
    tasks by their taskReferenceName where Conductor's text gives a task id, and
    ``failedTask`` (``{"ref", "taskId"}`` or None) is the task the reason is about.
    ``reRunFromWorkflowId`` is another execution or None (reruns happen in place; rows of
    earlier versions name the execution itself); ``rerun`` is the last rerun or restart in
    place (``{"action", "seq", "time"}``, ``apps.engine.history.last_rerun``) or None."""
    from apps.ui.selectors import name_tasks

    refs = {t.task_id: t.reference_task_name for t in wf.tasks}
    reason, failed = name_tasks(wf.reason_for_incompletion, refs)
    return {
        "workflowId": wf.workflow_id, "name": wf.workflow_name, "version": wf.workflow_version,
        "status": wf.status, "reason": _cut(reason), "failedTask": failed,
        "parentWorkflowId": wf.parent_workflow_id, "parentWorkflowTaskId": wf.parent_workflow_task_id,
        "correlationId": wf.correlation_id, "createTime": wf.create_time, "updateTime": wf.update_time,
        "endTime": wf.end_time, "failedReferenceTaskNames": wf.failed_reference_task_names or [],
        "reRunFromWorkflowId": wf.re_run_from_workflow_id if wf.re_run_from_workflow_id != wf.workflow_id else None,
        "rerun": rerun, "createdBy": wf.created_by, "priority": wf.priority,
        "taskCount": len(wf.tasks),
        "allowedActions": allowed_actions(wf.status, sub_workflows=any(t.task_type == "SUB_WORKFLOW" for t in wf.tasks)),
    }


def change_marker(workflow_id: str) -> str | None:
    """A short text that changes whenever the execution or one of its tasks changes
    (workflow update time and status, task count, latest task times, counts of terminal
    and running tasks); None when the execution does not exist. Two cheap queries."""
    row = WorkflowExecution.objects.filter(pk=workflow_id).values_list("update_time", "status", "end_time").first()
    if row is None:
        return None
    agg = TaskExecution.objects.filter(workflow_id=workflow_id).aggregate(
        n=Count("task_id"), u=Max("update_time"), s=Max("start_time"), e=Max("end_time"),
        done=Count("task_id", filter=Q(status__in=list(TERMINAL_TASK))),
        running=Count("task_id", filter=Q(status="IN_PROGRESS")))
    return "|".join(str(v) for v in (*row, agg["n"], agg["u"], agg["s"], agg["e"], agg["done"], agg["running"]))


def build_snapshot(workflow_id: str) -> dict | None:
    """The whole live view of an execution (see the module doc); None if it is gone.
    The marker is read before the state, so a change racing the build is seen again."""
    marker = change_marker(workflow_id)
    if marker is None:
        return None
    wf = store.load_workflow(workflow_id)
    if wf is None:
        return None
    return snapshot_of(wf, marker, rerun=history.last_rerun(workflow_id))


def snapshot_of(wf: WorkflowState, marker: str = "", rerun: dict | None = None) -> dict:
    """The snapshot of an already loaded execution (``rerun``: see ``header``)."""
    return {
        "header": header(wf, rerun),
        "payloads": {"input": preview(wf.input), "output": preview(wf.output), "variables": preview(wf.variables)},
        "graph": graph_mod.build_graph(wf.definition, wf.tasks, wf.status,
                                       dynamic_limit=ui_setting("GRAPH_DYNAMIC_EXPAND_LIMIT")),
        "tasks": [task_row(t) for t in wf.tasks],
        "marker": marker,
    }


def diff(old: dict | None, new: dict) -> dict | None:
    """What changed from ``old`` to ``new`` (see the module doc); None if nothing did.
    ``old=None`` gives everything."""
    if old is None:
        return {"header": new["header"], "payloads": new["payloads"], "graph": new["graph"],
                "tasks": new["tasks"], "removed": [], "marker": new["marker"]}
    delta: dict = {}
    if old["header"] != new["header"]:
        delta["header"] = new["header"]
    if old["payloads"] != new["payloads"]:
        delta["payloads"] = new["payloads"]
    if old["graph"]["signature"] != new["graph"]["signature"]:
        delta["graph"] = new["graph"]
    else:
        old_nodes = {n["id"]: n for n in old["graph"]["nodes"]}
        nodes = {n["id"]: n for n in new["graph"]["nodes"] if old_nodes.get(n["id"]) != n}
        old_edges = {e["id"]: e for e in old["graph"]["edges"]}
        edges = {e["id"]: e for e in new["graph"]["edges"] if old_edges.get(e["id"]) != e}
        if nodes:
            delta["nodes"] = nodes
        if edges:
            delta["edges"] = edges
    old_tasks = {r["taskId"]: r for r in old["tasks"]}
    new_ids = set()
    changed = []
    for row in new["tasks"]:
        new_ids.add(row["taskId"])
        if old_tasks.get(row["taskId"]) != row:
            changed.append(row)
    removed = [tid for tid in old_tasks if tid not in new_ids]
    if changed:
        delta["tasks"] = changed
    if removed:
        delta["removed"] = removed
    if not delta:
        return None
    delta["marker"] = new["marker"]
    return delta


def apply_delta(snapshot: dict, delta: dict) -> dict:
    """``snapshot`` with ``delta`` applied (what the browser does; used by the tests)."""
    out = json.loads(json.dumps(snapshot))
    for key in ("header", "payloads", "graph", "marker"):
        if key in delta:
            out[key] = json.loads(json.dumps(delta[key]))
    if "nodes" in delta:
        out["graph"]["nodes"] = [delta["nodes"].get(n["id"], n) for n in out["graph"]["nodes"]]
    if "edges" in delta:
        out["graph"]["edges"] = [delta["edges"].get(e["id"], e) for e in out["graph"]["edges"]]
    rows = {r["taskId"]: r for r in out["tasks"]}
    for row in delta.get("tasks", []):
        rows[row["taskId"]] = row
    for tid in delta.get("removed", []):
        rows.pop(tid, None)
    out["tasks"] = sorted(rows.values(), key=lambda r: r["seq"])
    return out


# --- waking consumers ------------------------------------------------------------------------

_GROUP_OK = re.compile(r"^[a-zA-Z0-9._-]{1,80}$")
_watched: dict[str, int] = {}
_watched_lock = threading.Lock()


def group_name(workflow_id: str) -> str:
    """The channel-layer group of one execution's consumers (valid for any id)."""
    if _GROUP_OK.match(workflow_id):
        return f"ui.execution.{workflow_id}"
    return "ui.execution.h" + hashlib.sha1(workflow_id.encode()).hexdigest()


def watch(workflow_id: str, delta: int = 1) -> None:
    """Count a consumer of this process watching ``workflow_id`` (``delta=-1`` to stop)."""
    with _watched_lock:
        n = _watched.get(workflow_id, 0) + delta
        if n > 0:
            _watched[workflow_id] = n
        else:
            _watched.pop(workflow_id, None)


def _layer_is_local(layer) -> bool:
    return type(layer).__name__ == "InMemoryChannelLayer"


def on_workflow_changed(workflow_id: str) -> None:
    """Engine listener (``apps.engine.notify.add_listener``): tell the consumers of this
    execution to look now. With the in-process layer only consumers of this process can
    hear it, so it is sent only when one is watching; with a shared layer
    (channels-redis) it is always sent. Consumers also poll, so a lost wake-up only
    costs latency."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    try:
        layer = get_channel_layer()
        if layer is None or (_layer_is_local(layer) and workflow_id not in _watched):
            return
        async_to_sync(layer.group_send)(group_name(workflow_id), {"type": "execution.changed", "id": workflow_id})
    except Exception:  # noqa: BLE001 - never break the engine's commit hook
        log.debug("live wake-up for %s not sent", workflow_id, exc_info=True)
