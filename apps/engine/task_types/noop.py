"""NOOP: completes at once.

Source: Conductor's Noop system task.
"""
from __future__ import annotations

from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish

@register
class Noop(SystemTask):
    type_name = "NOOP"

    def start(self, d, task):
        finish(d, task, "COMPLETED")
