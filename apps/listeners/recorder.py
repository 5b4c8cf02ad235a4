"""Turning saved transitions into outbox rows (and queue messages), inside the engine's
transaction (``apps.engine.notify.add_transition_recorder``).

Workflow events (Conductor's ``WorkflowStatusListener.WorkflowEventType``), from the
status as loaded and as saved: a new execution is STARTED; RUNNING -> PAUSED is PAUSED
and back RESUMED; -> COMPLETED is COMPLETED then FINALIZED; -> FAILED, TIMED_OUT or
TERMINATED is TERMINATED then FINALIZED (Conductor reports a failed workflow through
``onWorkflowTerminated``); a finished execution running again is RETRIED (``retry``),
RERAN (``rerun`` from a task) or RESTARTED (``restart``), told apart by the fields those
operations set (a rerun from the beginning starts the execution anew, as a restart does,
and is reported as RESTARTED). Task notifications: a task inserted or whose status changed, when the status is
subscribed, its TaskDef does not set ``taskStatusListenerEnabled: false`` and it is not a
SUB_WORKFLOW task (Conductor's TaskStatusPublisher skips those). Task status changes
made by a poll (SCHEDULED -> IN_PROGRESS) are not reported, as in Conductor, where they
are reported only when a task update sets them.

Queue publisher: COMPLETED -> ``conductor:<successQueue>``, TERMINATED ->
``conductor:<failureQueue>``, FINALIZED -> ``conductor:<finalizeQueue>`` on the internal
event queue (``apps.engine.event_handlers``), the WorkflowSummary as payload.
Archive: a FINALIZED execution gets an ARCHIVE row due ``ARCHIVE_DELAY_SECONDS`` later.
"""
from __future__ import annotations

from apps.core.clock import now_ms
from apps.core.ids import new_id
from apps.engine.status import TERMINAL_WORKFLOW
from apps.listeners import config
from apps.listeners.models import Notification


def workflow_events(previous: str | None, wf) -> list[str]:
    """The workflow events of one saved change (see the module docstring)."""
    status = wf.status
    if previous is None:
        return ["STARTED"]
    if previous == status:
        return []
    if status == "COMPLETED":
        return ["COMPLETED", "FINALIZED"]
    if status in TERMINAL_WORKFLOW:
        return ["TERMINATED", "FINALIZED"]
    if status == "PAUSED":
        return ["PAUSED"]
    if previous == "PAUSED":
        return ["RESUMED"]
    if previous in TERMINAL_WORKFLOW:
        if wf.last_retried_time and wf.last_retried_time == wf.update_time:
            return ["RETRIED"]  # retry stamps lastRetriedTime
        if wf.create_time == wf.update_time:
            return ["RESTARTED"]  # restart starts the execution anew
        return ["RERAN"]
    return []


def _workflow_task(task, wf) -> dict:
    """The WorkflowTask of a task: its own copy, else the one in its definition."""
    if task.workflow_task:
        return task.workflow_task
    from apps.engine.blueprint import Blueprint
    from apps.engine.params import definition_ref

    return Blueprint(wf.definition).get(definition_ref(task)) or {}


def task_notification(task, wf) -> dict:
    """Conductor's ``TaskNotification``: the TaskSummary plus ``workflowTaskType``,
    ``referenceTaskName``, ``retryCount`` and ``taskDescription``."""
    from apps.engine.representation import task_summary_json

    out = task_summary_json(task, wf.correlation_id, now=now_ms())
    workflow_task = _workflow_task(task, wf)
    out.update({"workflowTaskType": workflow_task.get("type") or task.task_type,
                "referenceTaskName": task.reference_task_name, "retryCount": task.retry_count})
    if workflow_task.get("description"):
        out["taskDescription"] = workflow_task["description"]
    return out


def _task_enabled(task, wf) -> bool:
    task_def = _workflow_task(task, wf).get("taskDefinition") or {}
    return task_def.get("taskStatusListenerEnabled", True) is not False and task.task_type != "SUB_WORKFLOW"


def record(wf, previous: str | None, task_changes: list) -> None:
    """The transition recorder: write the outbox rows (and queue messages) of one saved
    change of a definition with ``workflowStatusListenerEnabled``. Runs inside the
    engine's transaction; quick (no I/O but these inserts)."""
    if not (wf.definition or {}).get("workflowStatusListenerEnabled"):
        return
    conf = config.current()
    if not conf.active:
        return
    from apps.engine.representation import workflow_summary_json

    now = now_ms()
    rows: list[Notification] = []
    task_rows: list[Notification] = []
    summary = None
    for event in workflow_events(previous, wf):
        summary = summary or workflow_summary_json(wf)
        if conf.http and conf.subscribes(event, wf.status):
            rows.append(Notification(kind="WORKFLOW", event=event, workflow_id=wf.workflow_id, url=conf.workflow_url,
                                     payload=summary, created_time=now, next_attempt_at=now))
        if conf.queue:
            queue = {"COMPLETED": conf.success_queue, "TERMINATED": conf.failure_queue,
                     "FINALIZED": conf.finalize_queue}.get(event)
            if queue:
                from apps.engine.event_queue import event_message_insert

                event_message_insert(message_id=new_id(), event=f"conductor:{queue}", payload=summary, now=now)
        if conf.archive and event == "FINALIZED":
            rows.append(Notification(kind="ARCHIVE", event=event, workflow_id=wf.workflow_id, created_time=now,
                                     next_attempt_at=now + conf.archive_delay_ms))
    if conf.tasks and conf.task_statuses:
        for task, old in task_changes:
            if task.status != old and task.status in conf.task_statuses and _task_enabled(task, wf):
                task_rows.append(Notification(kind="TASK", event=task.status, workflow_id=wf.workflow_id,
                                         task_id=task.task_id, url=conf.task_url, payload=task_notification(task, wf),
                                         created_time=now, next_attempt_at=now))
    # in the order things happened: a start before its first tasks, a last task before
    # the end of its workflow
    rows = rows + task_rows if previous is None else task_rows + rows
    if rows:
        Notification.objects.bulk_create(rows)
