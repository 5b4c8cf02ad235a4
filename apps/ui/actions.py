"""Operator actions: which ones an execution's state allows, what each one does (an
engine service call), and the audit record written for every attempt.

Every action goes through ``perform``: it calls the engine service, turns a
``ConductorError`` into a failed result carrying Conductor's message, and writes one
``AuditLog`` row (who, what, target, parameters, result) whatever happened.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

from apps.core.errors import ConductorError
from apps.engine import executor, history, recovery
from apps.engine.status import ACTIVE_WORKFLOW, TERMINAL_WORKFLOW

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class OperatorAction:
    """One operator action on a workflow execution or task, as the UI offers it (its menu
    name, label, help text, whether it is destructive). Not the decider's side effects
    (``apps.engine.outcome.Action``)."""

    name: str
    label: str
    description: str
    danger: bool = False


WORKFLOW_ACTIONS: dict[str, OperatorAction] = {a.name: a for a in [
    OperatorAction("pause", "Pause", "Pause the execution: no new tasks are scheduled; tasks already handed to workers may still finish."),
    OperatorAction("resume", "Resume", "Resume the paused execution and schedule what is due."),
    OperatorAction("terminate", "Terminate", "End the execution as TERMINATED and cancel its pending tasks and sub-workflows.", danger=True),
    OperatorAction("restart", "Restart (current definition)", "Start the execution again from the beginning, with the definition snapshot it ran with, under the same id."),
    OperatorAction("restart_latest", "Restart (latest definition)", "Start the execution again from the beginning with the latest version of its workflow definition, under the same id."),
    OperatorAction("retry", "Retry", "Retry the last failed task and carry on from there."),
    OperatorAction("retry_resume", "Retry, resuming sub-workflow", "Retry the last failed task; a failed SUB_WORKFLOW task is resumed by retrying its child instead of starting a new one."),
]}

TASK_ACTIONS: dict[str, OperatorAction] = {a.name: a for a in [
    OperatorAction("rerun", "Rerun from this task", "Rerun the execution from this task, with the task input below; later tasks are scheduled again."),
    OperatorAction("skip", "Skip task", "Mark this task SKIPPED so the execution continues after it."),
    OperatorAction("complete_task", "Complete task", "Complete this task with the output below."),
    OperatorAction("fail_task", "Fail task", "Fail this task with the reason below.", danger=True),
]}

BULK_ACTIONS = ("pause", "resume", "restart", "restart_latest", "retry", "terminate")


def allowed_actions(status: str, *, sub_workflows: bool = False) -> list[str]:
    """The workflow actions an execution in ``status`` allows, in menu order.

    RUNNING: pause, terminate. PAUSED: resume, terminate. COMPLETED: restart (current or
    latest definition). FAILED / TIMED_OUT / TERMINATED: restart (both) and retry, plus
    retry resuming a sub-workflow when ``sub_workflows`` (the execution has SUB_WORKFLOW
    tasks); a COMPLETED execution has no failed task to retry.
    """
    if status == "RUNNING":
        return ["pause", "terminate"]
    if status == "PAUSED":
        return ["resume", "terminate"]
    if status == "COMPLETED":
        return ["restart", "restart_latest"]
    if status in TERMINAL_WORKFLOW:
        return ["restart", "restart_latest", "retry"] + (["retry_resume"] if sub_workflows else [])
    return []


def task_actions(workflow_status: str, task: dict | None) -> list[str]:
    """Task actions offered in the task panel (``task`` is a task row or None for a node
    that has not run): rerun from a task of an ended execution; skip a task of a running
    execution that has not been scheduled yet (Conductor skips only those); complete or
    fail a WAIT or HUMAN task that is IN_PROGRESS."""
    out = []
    status = task.get("status") if task else None
    if task and workflow_status in TERMINAL_WORKFLOW:
        out.append("rerun")
    if task is None and workflow_status == "RUNNING":
        out.append("skip")
    if task and task.get("type") in ("WAIT", "HUMAN") and status in ("IN_PROGRESS", "SCHEDULED") \
            and workflow_status in ACTIVE_WORKFLOW:
        out += ["complete_task", "fail_task"]
    return out


def service(name: str) -> Callable[..., Any]:
    """The engine service function ``name`` (``apps.engine.recovery`` for restart, retry,
    rerun and skip; ``apps.engine.executor`` for the others). AttributeError for a name
    neither has."""
    return getattr(recovery, name, None) or getattr(executor, name)


def _call(action: str, target: str, params: dict) -> Any:
    """Run one action; returns the service's result (a new id for ``start``)."""
    if action == "pause":
        return service("workflow_pause")(workflow_id=target)
    if action == "resume":
        return service("workflow_resume")(workflow_id=target)
    if action == "terminate":
        return service("workflow_terminate")(workflow_id=target, reason=params.get("reason") or None,
                                             trigger_failure_workflow=bool(params.get("trigger_failure_workflow")))
    if action in ("restart", "restart_latest"):
        return service("workflow_restart")(workflow_id=target, use_latest_definitions=action == "restart_latest")
    if action in ("retry", "retry_resume"):
        return service("workflow_retry")(workflow_id=target, resume_subworkflow_tasks=action == "retry_resume")
    if action == "rerun":
        return service("workflow_rerun")(workflow_id=target, rerun_from_task_id=params.get("task_id") or None,
                                         task_input=params.get("task_input"),
                                         workflow_input=params.get("workflow_input"),
                                         correlation_id=params.get("correlation_id") or None)
    if action == "skip":
        return service("task_skip")(workflow_id=target, task_reference_name=params["task_reference_name"],
                                    task_input=params.get("task_input"), task_output=params.get("task_output"))
    if action in ("complete_task", "fail_task"):
        result = {"workflowInstanceId": target, "taskId": params["task_id"],
                  "status": "COMPLETED" if action == "complete_task" else "FAILED",
                  "outputData": params.get("output") or {}}
        if params.get("reason"):
            result["reasonForIncompletion"] = params["reason"]
        return service("task_update")(task_result=result)
    if action == "start":
        return service("workflow_start")(name=params["name"], version=params.get("version"),
                                         input=params.get("input") or {},
                                         correlation_id=params.get("correlation_id") or None,
                                         created_by=params.get("created_by"))
    raise ConductorError(f"Unknown action: {action}")


@dataclass
class Result:
    """The outcome of one action on one target."""

    target: str
    ok: bool
    message: str
    value: Any = None


def perform(user, action: str, target: str, params: dict | None = None, *, bulk: bool = False,
            group: str = "") -> Result:
    """Run ``action`` on ``target`` (a workflow id, or a workflow name for ``start``) as
    ``user`` and audit it. Never raises for an engine refusal: the result carries the
    message. ``params`` are the action's inputs (reason, task id, JSON payloads)."""
    params = dict(params or {})
    value = None
    try:
        # the execution's history records who did it and why (apps.engine.history)
        username = getattr(user, "get_username", lambda: "")() or "anonymous"
        with history.acting(f"user:{username}", reason=params.get("reason") or None, action=action,
                            workflow_id=target, params={"bulk": True, "group": group} if bulk else None):
            value = _call(action, target, params)
        ok, message = True, "done"
    except ConductorError as exc:
        ok, message = False, error_text(exc)
    except Exception as exc:  # noqa: BLE001 - recorded and shown; the operator must see it failed
        log.exception("operator action %s on %s failed", action, target)
        ok, message = False, f"{type(exc).__name__}: {exc}"
    audited_target = value if action == "start" and ok and isinstance(value, str) else target
    if action == "start":
        params.setdefault("name", target)
    record(user, action, audited_target, params, ok=ok, message=message, bulk=bulk, group=group)
    return Result(target=audited_target, ok=ok, message=message, value=value)


def error_text(exc: ConductorError) -> str:
    """An engine refusal as one line for an operator: its message, then each offending
    field as the API names it (``path: message; ...``)."""
    fields = "; ".join(f"{e.get('path')}: {e.get('message')}" for e in exc.validation_errors or [])
    return f"{exc.message} {fields}" if fields else exc.message


def record(user, action: str, target: str, params: dict | None = None, *, ok: bool = True, message: str = "done",
           bulk: bool = False, group: str = ""):
    """Write one ``AuditLog`` row: ``user`` (a Django user or None) did ``action`` on
    ``target`` with ``params`` (large values replaced by their size). Used by ``perform``
    and by the admin's definition edits (actions ``admin_add``, ``admin_change``,
    ``admin_delete``, target ``WorkflowDef <name> v<version>`` or ``TaskDef <name>``).
    ``group`` ties the rows of one bulk job together (the job id)."""
    from apps.ui.models import AuditLog

    return AuditLog.objects.create(user=user if getattr(user, "pk", None) else None,
                                   username=getattr(user, "get_username", lambda: "")() or "anonymous",
                                   action=action, target=target, params=_small(dict(params or {})), ok=ok,
                                   message=message, bulk=bulk, group=group)


def _small(params: dict, limit: int = 4000) -> dict:
    """Parameters as stored in the audit log: large payloads are replaced by their size."""
    import json

    out = {}
    for key, value in params.items():
        text = json.dumps(value, default=str)
        out[key] = value if len(text) <= limit else {"truncated": True, "chars": len(text)}
    return out
