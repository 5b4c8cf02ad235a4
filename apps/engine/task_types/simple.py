"""SIMPLE: a worker task, polled from queue ``[domain:]<task def name>``.

Source: SimpleTaskMapper / UserDefinedTaskMapper. ``startDelay`` (seconds) on the
WorkflowTask delays the first delivery. Workers report through ``task_update``.
"""
from __future__ import annotations

from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType


@register
class Simple(TaskType):
    type_name = "SIMPLE"
    is_worker = True

    def start(self, d, task: TaskState) -> None:
        if task.visible_at <= d.now:
            start_delay = int(d.workflow_task_of(task).get("startDelay") or 0)
            if start_delay > 0 and task.retry_count == 0:
                task.start_delay_seconds = start_delay
                task.callback_after_seconds = start_delay
                task.visible_at = d.now + start_delay * 1000
        d.make_pollable(task)

    def cancel(self, d, task: TaskState) -> None:
        task.queue_name = ""
