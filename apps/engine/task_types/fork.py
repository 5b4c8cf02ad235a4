"""FORK: the marker task a fork opens with (COMPLETED at once), and what every fork
operator shares: building that marker and the JOIN that must follow it.

A fork creates the ``FORK`` task, the first task of every branch and the JOIN that must
follow it (see ``fork_join``, ``fork_join_dynamic``, ``join``).
Source: ForkJoinTaskMapper / ForkJoinDynamicTaskMapper.
"""
from __future__ import annotations

from apps.engine.outcome import TerminateWorkflow
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType
from apps.engine.task_types.join import Join


def fork_task(d, workflow_task: dict, retry_count: int) -> TaskState:
    """The COMPLETED ``FORK`` marker task that opens a fork."""
    task = d.new_task(workflow_task, task_type="FORK", retry_count=retry_count)
    task.task_def_name = "FORK"
    task.status = "COMPLETED"
    task.start_time = task.end_time = d.now
    return task


def join_after(d, workflow_task: dict, retry_count: int, message: str, join_on: list | None = None) -> list[TaskState]:
    """The JOIN that must follow a fork in the definition (built with ``joinOn``), or
    ``TerminateWorkflow(message)`` when the next WorkflowTask is not a JOIN."""
    join_wt = d.blueprint.next_task(workflow_task["taskReferenceName"])
    if join_wt is None or join_wt.get("type") != "JOIN":
        raise TerminateWorkflow(message, "FAILED")
    join = Join.build(d, join_wt, retry_count, join_on)
    return [join]


@register
class Fork(TaskType):
    """The ``FORK`` marker task created by fork operators; already COMPLETED."""

    type_name = "FORK"
    has_task_def = False
