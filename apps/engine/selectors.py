"""Reads of executions (no locks, no writes). Return ``WorkflowState``/``TaskState`` or
Conductor JSON via ``apps.engine.representation``. Errors: NotFound with Conductor's
messages."""
from __future__ import annotations

from apps.core.errors import NotFound
from apps.engine import params, store
from apps.engine.models import TaskExecLog, TaskExecution, WorkflowExecution
from apps.engine.state import TASK_FIELDS, WORKFLOW_FIELDS, TaskState, WorkflowState
from apps.engine.status import TERMINAL_WORKFLOW



def workflow_get(*, workflow_id: str, include_tasks: bool = True) -> WorkflowState:
    """One execution. Errors: NotFound ``No such workflow found by id: %s``."""
    wf = store.load_workflow(workflow_id, include_tasks=include_tasks)
    if wf is None:
        raise NotFound(f"No such workflow found by id: {workflow_id}")
    return wf


def _with_tasks(rows: list[dict], include_tasks: bool) -> list[WorkflowState]:
    wfs = [store.workflow_from_values(r) for r in rows]
    if include_tasks and wfs:
        by_id = {w.workflow_id: w for w in wfs}
        for row in TaskExecution.objects.filter(workflow_id__in=list(by_id)).order_by("seq").values(*TASK_FIELDS):
            by_id[row["workflow_id"]].tasks.append(store.task_from_values(row))
        for wf in wfs:
            params.fill_loop_outputs(wf)
    return wfs


def workflows_by_correlation_id(*, name: str, correlation_id: str, include_closed: bool = False,
                                include_tasks: bool = False) -> list[WorkflowState]:
    """Executions of ``name`` with this correlationId (only non-terminal unless
    ``include_closed``), newest first."""
    qs = WorkflowExecution.objects.filter(workflow_name=name, correlation_id=correlation_id)
    if not include_closed:
        qs = qs.exclude(status__in=TERMINAL_WORKFLOW)
    return _with_tasks(list(qs.order_by("-create_time", "-workflow_id").values(*WORKFLOW_FIELDS)), include_tasks)


def running_workflow_ids(*, name: str, version: int = 1, start_time: int | None = None,
                         end_time: int | None = None) -> list[str]:
    """Ids of RUNNING executions of ``name`` (``version`` defaults to 1, as Conductor);
    with both times (epoch ms) given, those created in that range instead."""
    qs = WorkflowExecution.objects.filter(workflow_name=name, status="RUNNING")
    if start_time is not None and end_time is not None:
        qs = qs.filter(create_time__gte=start_time, create_time__lte=end_time)
    else:
        qs = qs.filter(workflow_version=version)
    return list(qs.order_by("create_time", "workflow_id").values_list("workflow_id", flat=True))


def task_get(*, task_id: str) -> tuple[TaskState, WorkflowState]:
    """A task execution and its workflow (for correlationId and workflowTask).
    Errors: NotFound ``Task not found for taskId: %s``."""
    row = TaskExecution.objects.filter(pk=task_id).values(*TASK_FIELDS).first()
    if row is None:
        raise NotFound(f"Task not found for taskId: {task_id}")
    return whole_loop(store.task_from_values(row)), store.load_workflow(row["workflow_id"], include_tasks=False)


def whole_loop(task: TaskState) -> TaskState:
    """A running DO_WHILE task with its whole output (``params.loop_output``: the finished
    iterations read from its body tasks), as the API shows it; other tasks unchanged."""
    if task.task_type != "DO_WHILE" or not params.loop_missing_iterations(task):
        return task
    wf = store.load_workflow(task.workflow_id)
    found = next((t for t in wf.tasks if t.task_id == task.task_id), None) if wf is not None else None
    return found if found is not None else task


def task_logs(*, task_id: str) -> list[dict]:
    """``[{"log", "taskId", "createdTime"}]`` of a task, oldest first."""
    return [{"log": r.log, "taskId": r.task_id, "createdTime": r.created_time}
            for r in TaskExecLog.objects.filter(task_id=task_id).order_by("id")]
