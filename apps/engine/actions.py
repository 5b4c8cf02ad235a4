"""Side effects the decider asks for (``decider.Action``), performed by the executor.

Inline actions run inside the deciding transaction (they create rows or change the
workflow being saved); deferred ones run after commit (cluster jobs, deciding another
workflow). A deferred action lost to a crash is repaired by the sweeper: the workflow's
``next_decide_at`` covers work in flight.
"""
from __future__ import annotations

import logging

from apps.engine.outcome import Action, DeciderOutcome
from apps.engine.state import WorkflowState

log = logging.getLogger(__name__)

INLINE = frozenset({"start_failure_workflow", "start_sub_workflow", "terminate_sub_workflow", "start_workflow",
                    "publish_event"})


def is_deferred(action: Action) -> bool:
    return action.kind not in INLINE


def _failure_workflow_name(wf: WorkflowState) -> str | None:
    name = wf.definition.get("failureWorkflow") or ""
    if name.startswith("$"):
        # "$workflow.input.<key>": Conductor splits on "." and reads the 3rd token from input
        parts = name.split(".")
        value = wf.input.get(parts[2]) if len(parts) >= 3 else None
        return str(value) if value else None
    return name or None


def apply_inline(wf: WorkflowState, outcome: DeciderOutcome, action: Action, now: int) -> bool:
    """Perform an inline action. Source: WorkflowExecutorOps.handleWorkflowFailure
    (failure workflow input: the failed input + workflowId, reason, failureStatus,
    failureTaskId, failedWorkflow; same correlationId and taskToDomain)."""
    from apps.engine import executor
    from apps.engine.representation import workflow_json

    if action.kind == "start_failure_workflow":
        name = _failure_workflow_name(wf)
        if not name:
            return False
        failure_input = dict(wf.input)
        failure_input.update({
            "workflowId": wf.workflow_id,
            "reason": action.data.get("reason"),
            "failureStatus": action.data.get("status"),
            "failedWorkflow": workflow_json(wf),
        })
        if action.task is not None:
            failure_input["failureTaskId"] = action.task.task_id
        version = wf.definition.get("failureWorkflowVersion")
        try:
            failure_id = executor.workflow_start(name=name, version=version, input=failure_input,
                                                 correlation_id=wf.correlation_id, task_to_domain=wf.task_to_domain,
                                                 priority=wf.priority, not_found="name")
            wf.output = {**(wf.output or {}), "conductor.failure_workflow": failure_id}
        except Exception as exc:  # noqa: BLE001 - recorded on the failed workflow, as Conductor does
            wf.output = {**(wf.output or {}),
                         "conductor.failure_workflow": f"Error workflow {name} failed to start.  reason: {exc}"}
        outcome.workflow_changed = True
        return False
    else:
        from apps.engine.task_types import get_type

        # operators that start or stop other workflows do it themselves (SUB_WORKFLOW, ...)
        return bool(get_type(action.task.task_type).apply_inline(wf, outcome, action, now))


def run_deferred(workflow_id: str, action: Action) -> None:
    """Perform a deferred action after commit."""
    from apps.engine import jobs

    if action.kind == "run_system_task" and action.task is not None:
        jobs.enqueue_system_task(action.task.task_id)
    elif action.kind == "notify_parent":
        jobs.enqueue_decide_parent(workflow_id)
    else:
        log.warning("unknown deferred action %s", action.kind)
