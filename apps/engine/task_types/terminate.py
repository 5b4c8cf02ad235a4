"""TERMINATE: end the workflow with a chosen status from inside it.

Source: Conductor's Terminate system task.
"""
from __future__ import annotations

from apps.engine.outcome import TerminateWorkflow
from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish

@register
class Terminate(SystemTask):
    """End the workflow with ``terminationStatus`` (COMPLETED, FAILED, TERMINATED); the
    task completes with ``workflowOutput`` as output, which becomes the workflow output."""

    type_name = "TERMINATE"

    def start(self, d, task):
        status = task.input_data.get("terminationStatus")
        if status not in ("COMPLETED", "FAILED", "TERMINATED"):
            finish(d, task, "FAILED", reason="given termination status is not valid")
            return
        output = task.input_data.get("workflowOutput")
        if output is None:
            output = {}
        elif not isinstance(output, dict):
            output = {"output": output}
        finish(d, task, "COMPLETED", output=output)
        reason = task.input_data.get("terminationReason") or \
            f"Workflow is {status} by TERMINATE task: {task.task_id}"
        raise TerminateWorkflow(reason, status, task)
