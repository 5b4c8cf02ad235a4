"""SUB_WORKFLOW: run another workflow as a child and mirror its end.

SUB_WORKFLOW starts a child (deterministic id from parent id, task id and retry count,
so a repeated start finds the same child) with the task's input, the parent's
correlationId, ``subWorkflowParam.taskToDomain`` or the parent's, and
``subWorkflowParam.priority`` or the parent's; ``version`` None means latest and an
inline ``workflowDefinition`` runs without registration. The task mirrors the child:
RUNNING/PAUSED -> IN_PROGRESS, COMPLETED -> COMPLETED (child output merged into the task
output with ``subWorkflowId``), FAILED -> FAILED, TIMED_OUT -> TIMED_OUT, TERMINATED ->
CANCELED, with reason ``Sub workflow <name.version/id> failure reason: <reason>``.
Ending the parent terminates a running child (``Parent workflow has been terminated with
reason: %s`` with the parent's reasonForIncompletion, else ``... with status %s``).
Sources: SubWorkflowTaskMapper, SubWorkflow.
"""
from __future__ import annotations

import contextvars
import logging

from apps.core.errors import ConductorError
from apps.core.ids import sub_workflow_id
from apps.engine import params
from apps.engine.blueprint import Blueprint
from apps.engine.state import TaskState
from apps.engine.status import ACTIVE_WORKFLOW
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType, act_once

log = logging.getLogger(__name__)

# A child starts inside its parent's transaction, so a chain of sub-workflows that start
# one another at once (a cycle through a dynamic name) nests calls: past this depth the
# SUB_WORKFLOW task fails with a reason instead of exhausting the stack.
MAX_INLINE_NESTING = 16
_nesting = contextvars.ContextVar("sub_workflow_nesting", default=0)
_STATUS = {"COMPLETED": "COMPLETED", "FAILED": "FAILED", "TIMED_OUT": "TIMED_OUT", "TERMINATED": "CANCELED"}


def resolved_param(wf, param: dict, env=None) -> dict:
    """``subWorkflowParam`` with ``${...}`` expressions in ``name``, ``version``,
    ``priority``, ``taskToDomain`` resolved against the parent, and ``workflowDefinition``
    too when it is an expression (a string) naming a definition. An inline definition
    (an object) is left alone: its ``${workflow.input...}`` belong to the child
    (Conductor's SubWorkflowTaskMapper.getSubWorkflowInputParameters resolves the
    definition only when it is a String). ``env`` is what
    ``${workflow.env.X}`` reads."""
    out = dict(param)
    doc = None
    for key in ("name", "version", "priority", "taskToDomain", "workflowDefinition"):
        value = out.get(key)
        if key == "workflowDefinition" and not isinstance(value, str):
            continue
        if isinstance(value, (str, dict)) and "${" in str(value):
            doc = doc or params.Document(wf, env)
            out[key] = params.resolve_value(value, doc)
    return out


def _started(task: TaskState, now: int) -> None:
    task.status = "IN_PROGRESS"
    task.start_time = task.start_time or now
    task.update_time = now


@register
class SubWorkflow(TaskType):
    type_name = "SUB_WORKFLOW"

    def start(self, d, task: TaskState) -> None:
        d.act("start_sub_workflow", task)

    def execute(self, d, task: TaskState) -> bool:
        if not task.sub_workflow_id:
            if task.status == "SCHEDULED":
                act_once(d, "start_sub_workflow", task)  # recovery: a start that never happened
            return False
        child = d.wf.sub_workflows.get(task.sub_workflow_id)
        if child is None:
            return False
        status = child["status"]
        if status in ACTIVE_WORKFLOW:
            if task.status != "IN_PROGRESS":
                task.status = "IN_PROGRESS"
                return True
            return False
        task.status = _STATUS[status]
        task.output_data = {**(task.output_data or {}), **(child.get("output") or {}),
                            "subWorkflowId": task.sub_workflow_id}
        if task.status != "COMPLETED":
            task.reason_for_incompletion = (f"Sub workflow {child['workflow_name']}.{child['workflow_version']}/"
                                            f"{task.sub_workflow_id} failure reason: {child.get('reason_for_incompletion')}")
        task.end_time = d.now
        task.update_time = d.now
        return True

    def due_at(self, d, task: TaskState) -> int | None:
        # A lost "child ended" notification is repaired by the sweeper.
        return max(task.update_time, task.scheduled_time) + int(d.config.get("SUB_WORKFLOW_REPAIR_MS", 30_000))

    def cancel(self, d, task: TaskState) -> None:
        if task.sub_workflow_id:
            reason = (f"Parent workflow has been terminated with reason: {d.wf.reason_for_incompletion}"
                      if d.wf.reason_for_incompletion else
                      f"Parent workflow has been terminated with status {d.wf.status}")
            d.act("terminate_sub_workflow", task, reason=reason)

    # --- executor side (inside the parent's transaction) ------------------------------------

    def apply_inline(self, wf, outcome, action, now: int, services) -> bool:
        task = action.task
        if action.kind == "terminate_sub_workflow":
            try:
                services.workflow_terminate(workflow_id=task.sub_workflow_id,
                                            reason=action.data.get("reason") or "Parent workflow has been terminated")
            except ConductorError as exc:
                log.info("terminating child %s: %s", task.sub_workflow_id, exc)
            return False
        if task.status != "SCHEDULED" or task.sub_workflow_id:
            return False
        wt = task.workflow_task or self._workflow_task(wf, task)
        param = resolved_param(wf, wt.get("subWorkflowParam") or {}, services.env)
        inline = param.get("workflowDefinition")
        child_id = sub_workflow_id(wf.workflow_id, task.task_id, task.retry_count)
        if services.workflow_summary(child_id) is None:
            priority = param.get("priority")
            version = param.get("version")
            if isinstance(version, str) and version.strip().lstrip("-").isdigit():
                version = int(version)
            depth = _nesting.get()
            if depth >= MAX_INLINE_NESTING:
                task.status = "FAILED_WITH_TERMINAL_ERROR"
                task.reason_for_incompletion = (f"Sub workflow nesting is deeper than {MAX_INLINE_NESTING} levels "
                                                "(a workflow that starts itself?)")
                task.end_time = now
                return True
            token = _nesting.set(depth + 1)
            try:
                services.workflow_start(
                    name=param.get("name") or (inline or {}).get("name"),
                    version=version if not inline else None,
                    input=dict(task.input_data),
                    correlation_id=wf.correlation_id,
                    priority=priority if isinstance(priority, int) else wf.priority,
                    task_to_domain=param.get("taskToDomain") or wf.task_to_domain,
                    workflow_def=inline if isinstance(inline, dict) else None,
                    parent_workflow_id=wf.workflow_id,
                    parent_workflow_task_id=task.task_id,
                    workflow_id=child_id,
                    not_found="name",
                )
            except ConductorError as exc:
                task.status = "FAILED"
                task.reason_for_incompletion = exc.message
                task.end_time = now
                return True
            finally:
                _nesting.reset(token)
        task.sub_workflow_id = child_id
        task.output_data = {**(task.output_data or {}), "subWorkflowId": child_id}
        _started(task, now)
        child = services.workflow_summary(child_id)
        if child:
            wf.sub_workflows[child_id] = child
        return True

    @staticmethod
    def _workflow_task(wf, task):
        return Blueprint(wf.definition).get(params.definition_ref(task)) or {}
