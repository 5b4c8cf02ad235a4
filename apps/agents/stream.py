"""Agent event streams (``GET /api/agent/stream/{executionId}``, server-sent events).

Conductor keeps a bounded in-memory buffer per execution, filled by task listeners. Here
the stream is read from the execution's durable history (``apps.engine.history``: one
``ExecutionEvent`` row per change, appended in the change's transaction), so any server
process can serve any execution, a restart loses nothing and ``Last-Event-ID`` resumes
exactly after the last event a client saw. Only kinds written under the workflow's lock
are read (a poll's ``task.polled`` is not), so their ids grow in commit order per
execution and a resumed stream skips nothing.

Event kinds (the SDK's ``EventType``), each ``data`` ``{type, executionId, ...}``:

* ``thinking`` ``{content: taskReferenceName}``: an LLM turn was scheduled;
* ``tool_call`` ``{toolName, args}`` + ``tool_result`` ``{toolName, result}``: a tool
  task (worker, HUMAN, or a server-side tool's task) completed;
* ``waiting`` ``{pendingTool}``: a HUMAN task waits for ``/respond``;
* ``handoff`` ``{target}``: a sub-agent was started (a handoff, a team's turn or branch);
* ``guardrail_pass`` / ``guardrail_fail`` ``{guardrailName, content}``: an output
  guardrail answered; a failure that asks for a retry or a person's review is a
  ``message`` event instead (the SDK counts ``guardrail_fail`` as the run's failure, and
  the run goes on);
* ``done`` ``{output}`` when the execution COMPLETED, ``error`` ``{content}`` when it
  FAILED, TIMED_OUT or was TERMINATED; the stream ends after either.

Ids: ``historyId * 4 + k`` (k: the k-th SSE event made from that history event).
A comment line (``:``) is sent on connect and every ``HEARTBEAT_SECONDS``.

``derive`` gives the same events for a whole execution with the task each was made from:
the UI's Agent tab (apps/ui/agent_run.py) reads it, so the tab and a stream reader agree.
"""
from __future__ import annotations

import asyncio
import json
import re
import time

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from apps.engine import params, selectors
from apps.engine.status import TERMINAL_WORKFLOW

KINDS = ("task.scheduled", "task.updated", "task.timed_out", "task.canceled", "workflow.status")
POLL_SECONDS = 0.25
HEARTBEAT_SECONDS = 15.0
BATCH = 200
PER_EVENT = 4
GUARDRAIL_REF = re.compile(r"_guardrail_\d+$")
# a sub-agent's SUB_WORKFLOW (apps.agents.compiler): a handoff or a router's choice
# (``_handoff_``), a sequential step, a parallel branch, a round_robin/random/manual/swarm
# turn, a plan_execute's planner or fallback agent; not a router's own model call
# (``{agent}_router``)
HANDOFF_REF = re.compile(r"_handoff_|_(?:step|parallel|agent)_\d+_|_(?:planner|fallback)$")
TOOL_TYPES = ("SIMPLE", "HUMAN")


def parse_last_event_id(value) -> int:
    """``Last-Event-ID`` as the integer id after which to resume (0: from the start)."""
    try:
        return max(0, int(str(value).strip()))
    except (TypeError, ValueError):
        return 0


def _event(kind: str, execution_id: str, **data) -> dict:
    return {"type": kind, "executionId": execution_id, **{k: v for k, v in data.items() if v is not None}}


def _task_events(row, task, execution_id: str) -> list[dict]:
    ref = params.definition_ref(task)
    kind, data = row.kind, row.data or {}
    if kind == "task.scheduled":
        if task.task_type == "LLM_CHAT_COMPLETE":
            return [_event("thinking", execution_id, content=ref)]
        if task.task_type == "SUB_WORKFLOW" and HANDOFF_REF.search(ref):
            return [_event("handoff", execution_id, target=task.task_def_name)]
        if task.task_type == "HUMAN":
            from apps.agents.services import pending_tool

            return [_event("waiting", execution_id, pendingTool=pending_tool(task))]
    # a task that completed; an INLINE run ahead of its save is recorded scheduled COMPLETED
    completed = data.get("status") if kind == "task.scheduled" else data.get("to") if kind == "task.updated" else None
    if completed != "COMPLETED":
        return []
    if ref.endswith("_handoff_condition"):  # a swarm's condition worker (apps.agents.strategies), no tool
        return []
    output = task.output_data or {}
    if GUARDRAIL_REF.search(ref) and task.task_type in ("SIMPLE", "INLINE"):
        if task.task_type == "INLINE":  # a regex guardrail: its verdict is the script's result
            output = output.get("result") if isinstance(output.get("result"), dict) else {}
        name = output.get("guardrail_name") or task.task_def_name
        if output.get("passed") is not False:
            return [_event("guardrail_pass", execution_id, guardrailName=name)]
        if output.get("on_fail") == "retry":
            return [_event("message", execution_id, guardrailName=name,
                           content=f"guardrail {name} asked for another answer: {output.get('message')}")]
        if output.get("on_fail") == "human":  # a person decides (the HUMAN task's ``waiting`` follows)
            return [_event("message", execution_id, guardrailName=name, onFail="human",
                           content=f"guardrail {name} asked a person to review the answer: {output.get('message')}")]
        return [_event("guardrail_fail", execution_id, guardrailName=name, content=output.get("message"))]
    # a server-side tool's task (HTTP, CALL_MCP_TOOL, an agent_tool's SUB_WORKFLOW...,
    # apps.agents.tools) carries the tool's name
    tool_name = (task.input_data or {}).get("_agent_tool_name")
    if "_stop_when" in ref or (task.task_type not in TOOL_TYPES and not isinstance(tool_name, str)):
        return []
    args = {k: v for k, v in (task.input_data or {}).items() if k not in ("method", "_createdBy", "_agent_tool_name")}
    name = tool_name if isinstance(tool_name, str) else task.task_def_name
    return [_event("tool_call", execution_id, toolName=name, args=args),
            _event("tool_result", execution_id, toolName=name, result=output)]


def _end_event(execution_id: str, wf, status: str, reason: str | None = None) -> dict:
    """The stream's last event for an execution that ended in ``status``: ``done`` with
    the execution's output when COMPLETED, else ``error`` with ``reason`` (or its
    reasonForIncompletion, or the status)."""
    if status == "COMPLETED":
        return _event("done", execution_id, output=wf.output)
    return _event("error", execution_id, content=reason or wf.reason_for_incompletion or status)


def _status_events(row, wf, execution_id: str) -> list[dict]:
    to = (row.data or {}).get("to")
    if to not in TERMINAL_WORKFLOW:
        return []
    return [_end_event(execution_id, wf, to, (row.data or {}).get("reason"))]


def _row_events(row, wf, tasks: dict, execution_id: str) -> tuple[list[dict], object]:
    """The events one history row makes, and the task they were made from (None for a
    workflow status change, or a task no longer in the execution)."""
    if row.kind == "workflow.status":
        return _status_events(row, wf, execution_id), None
    task = tasks.get(row.task_id)
    return (_task_events(row, task, execution_id) if task is not None else []), task


def derive(execution_id: str, *, limit: int = 5000) -> tuple[object, list[tuple[dict, object]]]:
    """The execution's events as the stream makes them, oldest first, from its first
    ``limit`` history rows, each paired with the task execution it was made from (None
    for ``done``/``error``): ``(WorkflowState, [(event data, task | None)])``. The UI's
    agent view reads this, so it shows exactly what a stream reader sees.
    Errors: NotFound for an unknown execution."""
    from apps.engine.models import ExecutionEvent

    wf = selectors.workflow_get(workflow_id=execution_id, include_tasks=True)
    tasks = {t.task_id: t for t in wf.tasks}
    rows = ExecutionEvent.objects.filter(workflow_id=execution_id, kind__in=KINDS).order_by("id")[:limit]
    out: list[tuple[dict, object]] = []
    for row in rows:
        made, task = _row_events(row, wf, tasks, execution_id)
        out.extend((data, task) for data in made)
    if wf.terminal and not any(data["type"] in ("done", "error") for data, _ in out):
        out.append((_end_event(execution_id, wf, wf.status), None))
    return wf, out


def read(execution_id: str, after: int, *, first: bool = True) -> tuple[list[tuple[int, dict]], int, bool]:
    """The SSE events after id ``after``: ``([(id, data)], new cursor, ended)``. The
    execution is loaded only when its history has new rows (or on the ``first`` read,
    which also ends the stream of an execution that ended before its history recorded it).
    Errors: NotFound for an unknown execution."""
    from apps.engine.models import ExecutionEvent

    row_after, skip = divmod(after, PER_EVENT) if after else (0, -1)
    rows = list(ExecutionEvent.objects.filter(workflow_id=execution_id, id__gte=row_after or 1,
                                              kind__in=KINDS).order_by("id")[:BATCH])
    if not first and all(row.id == row_after for row in rows):
        return [], after, False
    wf = selectors.workflow_get(workflow_id=execution_id, include_tasks=True)
    tasks = {t.task_id: t for t in wf.tasks}
    out: list[tuple[int, dict]] = []
    cursor, ended = after, False
    for row in rows:
        made, _task = _row_events(row, wf, tasks, execution_id)
        for k, data in enumerate(made):
            event_id = row.id * PER_EVENT + k
            if row.id == row_after and k <= skip:
                continue
            out.append((event_id, data))
            if data["type"] in ("done", "error"):
                ended = True
        cursor = max(cursor, row.id * PER_EVENT + PER_EVENT - 1)
        if ended:
            break
    if first and not ended and wf.terminal and len(rows) < BATCH:
        # ended before its history recorded the status (an execution older than its history)
        out.append(((cursor // PER_EVENT + 1) * PER_EVENT, _end_event(execution_id, wf, wf.status)))
        ended = True
    return out, cursor, ended


def sse(event_id: int, data: dict) -> bytes:
    """One SSE frame: ``id``, ``event`` (the kind) and ``data`` (JSON) lines."""
    return f"id: {event_id}\nevent: {data['type']}\ndata: {json.dumps(data, default=str)}\n\n".encode()


def _read_in_thread(execution_id: str, after: int, first: bool):
    close_old_connections()
    try:
        return read(execution_id, after, first=first)
    finally:
        close_old_connections()


async def frames(execution_id: str, after: int, *, max_seconds: float | None = None):
    """The stream's bytes: a ``:connected`` comment, then events as the execution makes
    them, heartbeats while it is quiet, until ``done``/``error`` (or ``max_seconds``)."""
    yield b": connected\n\n"
    reader = sync_to_async(_read_in_thread, thread_sensitive=False)
    started = last_beat = time.monotonic()
    cursor, first = after, True
    while True:
        events, cursor, ended = await reader(execution_id, cursor, first)
        first = False
        for event_id, data in events:
            yield sse(event_id, data)
        if ended:
            return
        now = time.monotonic()
        if max_seconds is not None and now - started > max_seconds:
            return
        if now - last_beat >= HEARTBEAT_SECONDS:
            last_beat = now
            yield b": heartbeat\n\n"
        await asyncio.sleep(POLL_SECONDS)
