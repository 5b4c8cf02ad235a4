"""SET_VARIABLE: merge the task input into ``workflow.variables``.

Source: Conductor's SetVariable system task.
"""
from __future__ import annotations

import json

from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish

MAX_VARIABLES_BYTES = 256 * 1024


@register
class SetVariable(SystemTask):
    """Merge the task input into ``workflow.variables`` (top level, overwrite).
    Over 256 KB: FAILED_WITH_TERMINAL_ERROR with Conductor's message."""

    type_name = "SET_VARIABLE"

    def start(self, d, task):
        merged = {**(d.wf.variables or {}), **task.input_data}
        size = len(json.dumps(merged).encode())
        if size > MAX_VARIABLES_BYTES:
            finish(d, task, "FAILED_WITH_TERMINAL_ERROR", reason=(
                f"The variables payload size: {size} of workflow: {d.wf.workflow_id} is greater than the "
                f"permissible limit: {MAX_VARIABLES_BYTES // 1024} kilobytes"))
            return
        d.wf.variables = merged
        d.touch_workflow()
        finish(d, task, "COMPLETED")
