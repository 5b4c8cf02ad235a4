"""EXCLUSIVE_JOIN: complete with the output of the one branch that ran.

Source: ExclusiveJoinTaskMapper, ExclusiveJoin.
"""
from __future__ import annotations

from apps.engine import params
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType
from apps.engine.task_types.join import Join


@register
class ExclusiveJoin(TaskType):
    """Completes with the output of the first joinOn task that ran (else of the first
    ``defaultExclusiveJoinTask`` that ran); fails if that task failed."""

    type_name = "EXCLUSIVE_JOIN"
    has_task_def = False

    def map(self, d, workflow_task, retry_count):
        return [Join.build(d, workflow_task, retry_count)]

    def execute(self, d, task: TaskState) -> bool:
        suffix = params.loop_scope(task)
        wt = d.workflow_task_of(task)
        found = None
        for group in (task.input_data.get("joinOn") or [], wt.get("defaultExclusiveJoinTask") or []):
            for ref in group:
                candidate = d.wf.task_by_ref(ref + suffix if suffix and not ref.endswith(suffix) else ref)
                if candidate is None or candidate.status == "SKIPPED":
                    continue
                found = candidate
                break
            if found is not None:
                break
        if found is None or not found.terminal:
            return False
        if not found.successful:
            task.status = "FAILED"
            task.reason_for_incompletion = found.reason_for_incompletion
        else:
            task.status = "COMPLETED"
            task.output_data = found.output_data
        task.end_time = d.now
        return True
