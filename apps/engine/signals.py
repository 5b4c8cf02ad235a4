"""Signals and sync-execute answers: Conductor's TaskService.signalTask,
WorkflowSignalResponder and NotificationResult.

* ``signal_task`` completes (or fails) the workflow's currently *blocked* task: the first
  non-terminal WAIT of the workflow (by ``seq``), else, depth first, of its running
  sub-workflows. The signal names no task reference.
* ``find_blocking`` tells whether an execution has settled for a waiting caller: a
  non-terminal WAIT without a timer (Conductor: ``waitTimeout == 0``), or a task named in
  ``waitUntilTaskRef`` that has ended, searched through running sub-workflows too.
* ``signal_response`` renders what the caller asked for with ``returnStrategy``:
  ``TARGET_WORKFLOW`` (a WorkflowRun of the workflow named in the request),
  ``BLOCKING_WORKFLOW`` (a WorkflowRun of the workflow holding the blocking task, maybe a
  sub-workflow), ``BLOCKING_TASK`` and ``BLOCKING_TASK_INPUT`` (a TaskRun of the blocking
  task; its ``input`` is the task input). ``signalTimeout`` is true only when the wait ran
  out before the execution settled.

Pure reads and one ``task_update``; waiting (with its clock) is the API's business.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from apps.core.errors import InvalidInput
from apps.engine import executor, history, selectors, store
from apps.engine.representation import task_run_json, workflow_run_json
from apps.engine.state import TaskState, WorkflowState

RETURN_STRATEGIES = ("TARGET_WORKFLOW", "BLOCKING_WORKFLOW", "BLOCKING_TASK", "BLOCKING_TASK_INPUT")
# TaskResult.Status: what a signal (and any task update) may set.
SIGNAL_STATUSES = ("IN_PROGRESS", "FAILED", "FAILED_WITH_TERMINAL_ERROR", "COMPLETED")


def return_strategy(value: str | None) -> str:
    """The ``returnStrategy`` query value (default ``TARGET_WORKFLOW``, case-sensitive as
    Spring's enum binding). Raises InvalidInput naming the accepted values."""
    if value in (None, ""):
        return "TARGET_WORKFLOW"
    if value not in RETURN_STRATEGIES:
        raise InvalidInput(f"Invalid returnStrategy: {value}. Must be one of {', '.join(RETURN_STRATEGIES)}")
    return value


def signal_status(value: str) -> str:
    """The ``{status}`` path segment of a signal. Raises InvalidInput for anything but a
    TaskResult status."""
    if value not in SIGNAL_STATUSES:
        raise InvalidInput(f"Invalid task status: {value}. Must be one of {', '.join(SIGNAL_STATUSES)}")
    return value


def _running_children(wf: WorkflowState) -> list[str]:
    return [t.sub_workflow_id for t in wf.tasks
            if t.task_type == "SUB_WORKFLOW" and not t.terminal and t.sub_workflow_id]


def pending_wait_task(workflow_id: str) -> TaskState | None:
    """The task a signal would update: the first non-terminal WAIT (any timer) of the
    workflow, else of its running sub-workflows, depth first; None when there is none.
    Errors: NotFound for an unknown ``workflow_id``."""
    wf = selectors.workflow_get(workflow_id=workflow_id)
    return _pending_wait(wf, depth=0)


def _pending_wait(wf: WorkflowState, depth: int) -> TaskState | None:
    for task in wf.tasks:
        if task.task_type == "WAIT" and not task.terminal:
            return task
    if depth >= MAX_DEPTH:
        return None
    for child_id in _running_children(wf):
        child = store.load_workflow(child_id)
        found = _pending_wait(child, depth + 1) if child else None
        if found is not None:
            return found
    return None


# Nesting bound for the sub-workflow searches (a cycle cannot occur; this caps the cost).
MAX_DEPTH = 32


def signal_task(*, workflow_id: str, status: str, output: dict) -> str | None:
    """Apply ``status`` and ``output`` (merged over the task's current output, as
    Conductor's ``TaskResult(pending).getOutputData().putAll``) to the workflow's blocked
    task; return its id, or None when nothing is blocked. Errors: InvalidInput for a
    status that is not a TaskResult status; NotFound for an unknown workflow."""
    signal_status(status)
    pending = pending_wait_task(workflow_id)
    if pending is None:
        return None
    with history.acting(action="signal", workflow_id=pending.workflow_id,
                        params={"taskReferenceName": pending.reference_task_name, "status": status}):
        executor.task_update(task_result={
            "workflowInstanceId": pending.workflow_id, "taskId": pending.task_id, "status": status,
            "outputData": {**(pending.output_data or {}), **output}})
    return pending.task_id


@dataclass
class Blocking:
    """Blocking tasks found in an execution tree and the workflow holding the first."""
    tasks: list[TaskState] = field(default_factory=list)
    workflow: WorkflowState | None = None


def find_blocking(wf: WorkflowState, task_refs: frozenset[str] | set[str] = frozenset(), depth: int = 0) -> Blocking:
    """WorkflowSignalResponder.findBlockingTasks: in ``seq`` order, a WAIT that is not
    terminal and has no timer, or a task whose reference is in ``task_refs`` and that
    ended; a running SUB_WORKFLOW's child is searched in place (recursively)."""
    found = Blocking()
    for task in wf.tasks:
        if task.task_type == "WAIT" and not task.terminal and task.timer_at is None:
            found.tasks.append(task)
            found.workflow = found.workflow or wf
        if task_refs and task.reference_task_name in task_refs and task.terminal:
            found.tasks.append(task)
            found.workflow = found.workflow or wf
        if task.task_type == "SUB_WORKFLOW" and task.sub_workflow_id and not task.terminal and depth < MAX_DEPTH:
            child = store.load_workflow(task.sub_workflow_id)
            if child is not None:
                sub = find_blocking(child, task_refs, depth + 1)
                if sub.tasks:
                    found.tasks.extend(sub.tasks)
                    found.workflow = found.workflow or sub.workflow
    return found


def settled(wf: WorkflowState, task_refs: frozenset[str] | set[str] = frozenset()) -> Blocking | None:
    """What a waiting caller stops on: the Blocking found when ``wf`` has ended or has a
    blocking task; None while it is still running freely."""
    blocking = find_blocking(wf, task_refs)
    if wf.terminal or blocking.tasks:
        return blocking
    return None


def signal_response(target: WorkflowState, blocking: Blocking | None, *, strategy: str, request_id: str | None,
                    signal_timeout: bool) -> dict:
    """NotificationResult.toResponse. With no blocking task (the run ended, or the wait
    ran out) every strategy answers the target's WorkflowRun: for the two workflow
    strategies that is Conductor's answer; for BLOCKING_TASK/BLOCKING_TASK_INPUT
    Conductor has no task to show (its reactive pipeline fails on the null), so the
    caller gets the target's WorkflowRun with ``responseType`` TARGET_WORKFLOW instead of
    an error."""
    tasks = blocking.tasks if blocking else []
    if not tasks:
        shown = strategy if strategy in ("TARGET_WORKFLOW", "BLOCKING_WORKFLOW") else "TARGET_WORKFLOW"
        return workflow_run_json(target, target=target, strategy=shown, request_id=request_id,
                                 signal_timeout=signal_timeout)
    if strategy == "TARGET_WORKFLOW":
        return workflow_run_json(target, target=target, strategy=strategy, request_id=request_id,
                                 signal_timeout=signal_timeout)
    holder = blocking.workflow or target
    if strategy == "BLOCKING_WORKFLOW":
        return workflow_run_json(holder, target=target, strategy=strategy, request_id=request_id,
                                 signal_timeout=signal_timeout)
    return task_run_json(tasks[0], target=target, strategy=strategy, request_id=request_id,
                         signal_timeout=signal_timeout, correlation_id=holder.correlation_id)
