"""START_WORKFLOW: start an unrelated workflow (fire and forget); the task completes with
``{"workflowId"}`` or fails with ``startWorkflow validation failed. <reason>``.

Source: Conductor's StartWorkflow system task.
"""
from __future__ import annotations

from apps.core.errors import ConductorError
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType


@register
class StartWorkflow(TaskType):
    type_name = "START_WORKFLOW"

    def start(self, d, task: TaskState) -> None:
        d.act("start_workflow", task)

    def apply_inline(self, wf, outcome, action, now: int, services) -> bool:
        task = action.task
        if task.status != "SCHEDULED":
            return False
        request = task.input_data.get("startWorkflow")
        task.start_time = now
        task.end_time = now
        if not isinstance(request, dict):
            task.status = "FAILED"
            task.reason_for_incompletion = "Missing 'startWorkflow' in input data."
            return True
        try:
            started = services.workflow_start(
                name=request.get("name"), version=request.get("version"), input=request.get("input") or {},
                correlation_id=request.get("correlationId") or wf.correlation_id,
                priority=request.get("priority"), task_to_domain=request.get("taskToDomain") or wf.task_to_domain,
                workflow_def=request.get("workflowDef"), not_found="name")
        except ConductorError as exc:
            task.status = "FAILED"
            task.reason_for_incompletion = f"startWorkflow validation failed. {exc.message}"
            return True
        task.status = "COMPLETED"
        task.output_data = {"workflowId": started}
        return True
