"""Side effects the decider asks for (``outcome.Action``), performed by the executor.

Inline actions run inside the deciding transaction (they create rows or change the
workflow being saved); deferred ones run after commit (a cluster job for an async system
task, deciding the parent of a workflow that ended). A deferred action lost to a crash is
repaired by the sweeper: the workflow's ``next_decide_at`` covers work in flight.

What an action needs from the executor (starting or terminating another workflow,
deciding a parent) comes in as ``services`` (``outcome.Services``), so this module sits
below the executor and imports neither it nor the jobs (those are enqueued by dotted
path through ``jobqueue.enqueue``).
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from apps.engine import jobqueue
from apps.engine.models import WorkflowExecution
from apps.engine.outcome import Action, DeciderOutcome, Services
from apps.engine.representation import workflow_json
from apps.engine.state import WorkflowState
from apps.engine.task_types import get_type

log = logging.getLogger(__name__)

INLINE = frozenset({"start_failure_workflow", "start_sub_workflow", "terminate_sub_workflow", "start_workflow",
                    "publish_event", "pull_workflow_messages"})


def is_deferred(action: Action) -> bool:
    """True for actions that run after commit (``run_system_task``, ``notify_parent``;
    ``evaluate`` is run by the executor itself, ``executor.run_evaluations``)."""
    return action.kind not in INLINE


def failure_workflow_name(wf: WorkflowState) -> str | None:
    """The ``failureWorkflow`` of the definition, ``$workflow.input.<key>`` resolved from
    the input (Conductor splits on ``.`` and reads the third token), or None."""
    name = wf.definition.get("failureWorkflow") or ""
    if name.startswith("$"):
        parts = name.split(".")
        value = wf.input.get(parts[2]) if len(parts) >= 3 else None
        return str(value) if value else None
    return name or None


def apply_inline(wf: WorkflowState, outcome: DeciderOutcome, action: Action, now: int, services: Services) -> bool:
    """Perform an inline action inside the deciding transaction; True when it changed the
    task it names (the executor then decides again). ``now`` is epoch ms.

    ``start_failure_workflow`` follows WorkflowExecutorOps.handleWorkflowFailure: the
    failure workflow's input is the failed input plus workflowId, reason, failureStatus,
    failureTaskId and failedWorkflow; same correlationId and taskToDomain; its id (or the
    error that kept it from starting) is recorded in the output as
    ``conductor.failure_workflow``. Every other inline action belongs to the task type
    that asked for it (``TaskType.apply_inline``: SUB_WORKFLOW, START_WORKFLOW, EVENT)."""
    if action.kind != "start_failure_workflow":
        return bool(get_type(action.task.task_type).apply_inline(wf, outcome, action, now, services))
    name = failure_workflow_name(wf)
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
        failure_id = services.workflow_start(name=name, version=version, input=failure_input,
                                             correlation_id=wf.correlation_id, task_to_domain=wf.task_to_domain,
                                             priority=wf.priority, not_found="name")
        wf.output = {**(wf.output or {}), "conductor.failure_workflow": failure_id}
    except Exception as exc:  # noqa: BLE001 - recorded on the failed workflow, as Conductor does
        wf.output = {**(wf.output or {}),
                     "conductor.failure_workflow": f"Error workflow {name} failed to start.  reason: {exc}"}
    outcome.workflow_changed = True
    return False


def run_deferred(workflow_id: str, action: Action, workflow_decide: Callable[[str], None]) -> None:
    """Perform a deferred action after commit: ``run_system_task`` queues
    ``apps.engine.jobs.system_task_job`` on the cluster; ``notify_parent`` decides the
    parent of ``workflow_id`` now, in this process, with ``workflow_decide`` (if that
    fails, the parent's ``next_decide_at`` makes the sweeper do it); ``cancel_remote_agent``
    queues the best-effort ``tasks/cancel`` of an AGENT task's remote task (``apps.a2a``)."""
    if action.kind == "run_system_task" and action.task is not None:
        task_id = action.task.task_id
        jobqueue.enqueue("apps.engine.jobs.system_task_job", task_id, task_name=f"system-task-{task_id}")
    elif action.kind == "notify_parent":
        parent = (WorkflowExecution.objects.filter(pk=workflow_id)
                  .values_list("parent_workflow_id", flat=True).first())
        if parent:
            try:
                workflow_decide(parent)
            except Exception:  # noqa: BLE001 - the sweeper repairs it
                log.exception("deciding parent %s of %s failed; the sweeper will retry", parent, workflow_id)
    elif action.kind == "cancel_remote_agent" and action.task is not None:
        task_id = action.task.task_id
        jobqueue.enqueue("apps.a2a.tasks.cancel_remote_job", task_id, task_name=f"a2a-cancel-{task_id}")
    else:
        log.warning("unknown deferred action %s", action.kind)
