"""Loading and saving execution state (the only engine module that maps rows <-> state).

Writes of task rows are compare-and-set on the status that was loaded, so a concurrent
poll that claimed a task (SCHEDULED -> IN_PROGRESS) is never overwritten by a stale
decide: the whole operation is retried instead (``StaleState``).
"""
from __future__ import annotations

from django.db import connection

from apps.engine.decider import DeciderOutcome
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.engine.state import TASK_FIELDS, WORKFLOW_FIELDS, TaskState, WorkflowState

_TASK_UPDATE_FIELDS = tuple(f for f in TASK_FIELDS if f not in ("task_id", "workflow_id"))
_WORKFLOW_UPDATE_FIELDS = tuple(f for f in WORKFLOW_FIELDS if f != "workflow_id")


class StaleState(Exception):
    """A task row changed under us (claimed by a poll); the caller retries the operation."""


class Loaded:
    """A workflow state plus what is needed to save it: the statuses as loaded."""

    __slots__ = ("wf", "loaded_status")

    def __init__(self, wf: WorkflowState):
        self.wf = wf
        self.loaded_status = {t.task_id: t.status for t in wf.tasks}


def _attach_sub_workflows(wf: WorkflowState) -> None:
    ids = [t.sub_workflow_id for t in wf.tasks
           if t.task_type == "SUB_WORKFLOW" and t.sub_workflow_id and not t.terminal]
    if ids:
        for row in WorkflowExecution.objects.filter(pk__in=ids).values(
                "workflow_id", "status", "output", "reason_for_incompletion", "workflow_name", "workflow_version"):
            wf.sub_workflows[row["workflow_id"]] = row


def lock_workflow(workflow_id: str) -> WorkflowState | None:
    """Lock the workflow row (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's IMMEDIATE
    transaction already holds the write lock) and load it with its tasks. Must run inside
    ``transaction.atomic()``. Returns None if the workflow does not exist."""
    qs = WorkflowExecution.objects.filter(pk=workflow_id)
    if connection.features.has_select_for_update:
        qs = qs.select_for_update()
    rows = list(qs.values(*WORKFLOW_FIELDS))
    if not rows:
        return None
    wf = WorkflowState(**rows[0])
    wf.tasks = [TaskState(**row) for row in
                TaskExecution.objects.filter(workflow_id=workflow_id).order_by("seq").values(*TASK_FIELDS)]
    _attach_sub_workflows(wf)
    return wf


def load_workflow(workflow_id: str, include_tasks: bool = True) -> WorkflowState | None:
    """Read a workflow (no lock) with its tasks ordered by seq; None if absent."""
    rows = list(WorkflowExecution.objects.filter(pk=workflow_id).values(*WORKFLOW_FIELDS))
    if not rows:
        return None
    wf = WorkflowState(**rows[0])
    if include_tasks:
        wf.tasks = [TaskState(**row) for row in
                    TaskExecution.objects.filter(workflow_id=workflow_id).order_by("seq").values(*TASK_FIELDS)]
    return wf


def insert_workflow(wf: WorkflowState) -> None:
    """Insert a new workflow row (without its tasks)."""
    WorkflowExecution.objects.create(**{f: getattr(wf, f) for f in WORKFLOW_FIELDS})


def insert_tasks(tasks: list[TaskState]) -> None:
    """Insert new task rows in one statement."""
    if tasks:
        TaskExecution.objects.bulk_create([TaskExecution(**{f: getattr(t, f) for f in TASK_FIELDS}) for t in tasks])


def save(loaded: Loaded, outcome: DeciderOutcome, *, workflow_changed: bool = True,
         extra_task_ids: set[str] | None = None) -> None:
    """Persist a decided state: insert new tasks, update changed ones (compare-and-set on
    the loaded status), update the workflow row. Raises StaleState on a lost race."""
    wf = loaded.wf
    if outcome.removed_task_ids:
        TaskExecution.objects.filter(task_id__in=outcome.removed_task_ids).delete()
    insert_tasks(outcome.new_tasks)
    new_ids = {t.task_id for t in outcome.new_tasks}
    updated = dict(outcome.updated_tasks)
    for task_id in extra_task_ids or ():
        for t in wf.tasks:
            if t.task_id == task_id:
                updated[task_id] = t
    for task_id, task in updated.items():
        if task_id in new_ids:
            continue
        expected = loaded.loaded_status.get(task_id)
        qs = TaskExecution.objects.filter(pk=task_id)
        if expected is not None:
            qs = qs.filter(status=expected)
        if qs.update(**{f: getattr(task, f) for f in _TASK_UPDATE_FIELDS}) != 1:
            raise StaleState(task_id)
    if workflow_changed or outcome.workflow_changed or outcome.new_tasks or updated:
        WorkflowExecution.objects.filter(pk=wf.workflow_id).update(
            **{f: getattr(wf, f) for f in _WORKFLOW_UPDATE_FIELDS})
