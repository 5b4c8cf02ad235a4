"""FORK_JOIN: run the first task of every ``forkTasks`` branch in parallel, followed by
the JOIN that waits for them.

Source: ForkJoinTaskMapper.
"""
from __future__ import annotations

from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType
from apps.engine.task_types.fork import fork_task, join_after


@register
class ForkJoin(TaskType):
    type_name = "FORK_JOIN"
    has_task_def = False

    def map(self, d, workflow_task, retry_count):
        tasks = [fork_task(d, workflow_task, retry_count)]
        for branch in workflow_task.get("forkTasks") or []:
            if branch:
                tasks.extend(d.tasks_to_schedule(branch[0], retry_count))
        tasks.extend(join_after(d, workflow_task, retry_count,
                                 "Fork task definition is not followed by a join task.  Check the blueprint"))
        return tasks
