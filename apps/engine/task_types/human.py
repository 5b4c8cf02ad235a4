"""HUMAN: stays IN_PROGRESS until completed or failed through the task update API.

Source: Conductor's Human system task.
"""
from __future__ import annotations

from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish

@register
class Human(SystemTask):
    """IN_PROGRESS until completed or failed through the task update API."""

    type_name = "HUMAN"

    def start(self, d, task):
        finish(d, task, "IN_PROGRESS")
