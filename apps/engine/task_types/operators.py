"""Small synchronous system tasks: NOOP, HUMAN, SET_VARIABLE, TERMINATE, INLINE, LAMBDA,
JSON_JQ_TRANSFORM. Each runs inside the decide that schedules it.

Sources: Noop, Human, SetVariable, Terminate, Inline, Lambda, JsonJqTransform system
tasks of Conductor (conductor-reference §5).
"""
from __future__ import annotations

import json

from apps.engine import jq_sandbox
from apps.engine.decider import TerminateWorkflow
from apps.engine.evaluators import EvaluationError, UnknownEvaluator, evaluate, evaluate_js
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType

MAX_VARIABLES_BYTES = 256 * 1024


def jq_time_limit() -> float:
    """Seconds a JSON_JQ_TRANSFORM program may run (``CONDUCTOR["JQ_TIME_LIMIT_SECONDS"]``)."""
    from django.conf import settings

    return float(settings.CONDUCTOR.get("JQ_TIME_LIMIT_SECONDS", jq_sandbox.DEFAULT_TIME_LIMIT_SECONDS))


def finish(d, task: TaskState, status: str, output: dict | None = None, reason: str | None = None) -> None:
    """Set a task's outcome (status, output, reason, start/end times)."""
    task.status = status
    if output is not None:
        task.output_data = output
    if reason is not None:
        task.reason_for_incompletion = reason
    if not task.start_time:
        task.start_time = d.now
    task.update_time = d.now
    if task.terminal:
        task.end_time = d.now
    d.touch(task)


class SystemTask(TaskType):
    """A server-side task; no TaskDef needed unless registered (no retries by default)."""

    has_task_def = True


@register
class Noop(SystemTask):
    type_name = "NOOP"

    def start(self, d, task):
        finish(d, task, "COMPLETED")


@register
class Human(SystemTask):
    """IN_PROGRESS until completed or failed through the task update API."""

    type_name = "HUMAN"

    def start(self, d, task):
        finish(d, task, "IN_PROGRESS")


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


@register
class Inline(SystemTask):
    """Evaluate ``expression`` with ``evaluatorType`` (javascript/graaljs/value-param) over
    ``$`` = the whole resolved input; output ``{"result": value}``. A script error fails
    the task terminally with ``output.error`` (re-running gives the same error)."""

    type_name = "INLINE"

    def start(self, d, task):
        params = task.input_data
        try:
            result = evaluate(params.get("evaluatorType") or "javascript", params.get("expression"), params)
        except (UnknownEvaluator, EvaluationError) as exc:
            finish(d, task, "FAILED_WITH_TERMINAL_ERROR", output={"error": str(exc)}, reason=str(exc))
            return
        finish(d, task, "COMPLETED", output={"result": result})


@register
class Lambda(SystemTask):
    """Legacy LAMBDA: ``scriptExpression`` is a function body over ``$`` (the input)."""

    type_name = "LAMBDA"

    def start(self, d, task):
        script = task.input_data.get("scriptExpression")
        if not isinstance(script, str) or not script.strip():
            finish(d, task, "FAILED", reason="Empty 'scriptExpression' in Lambda task's input parameters. "
                                             "A non-empty String value must be provided.")
            return
        try:
            result = evaluate_js(f"(function(){{ {script} }})()", task.input_data)
        except EvaluationError as exc:
            finish(d, task, "FAILED", output={"error": str(exc)}, reason=str(exc))
            return
        finish(d, task, "COMPLETED", output={"result": result})


@register
class JsonJqTransform(SystemTask):
    """Apply the jq ``queryExpression`` to the whole resolved input; output
    ``{"result": first value or null, "resultList": all values}``; errors fail the task
    with ``output.error``. The program runs in a helper process (``jq_sandbox``) bounded by
    ``CONDUCTOR["JQ_TIME_LIMIT_SECONDS"]``: a runaway program fails its own task and
    holds nothing else up."""

    type_name = "JSON_JQ_TRANSFORM"

    def start(self, d, task):
        expression = task.input_data.get("queryExpression")
        if not isinstance(expression, str) or not expression.strip():
            finish(d, task, "FAILED", reason="Missing 'queryExpression' in input parameters")
            return
        try:
            results = jq_sandbox.evaluate(expression, task.input_data, jq_time_limit())
        except jq_sandbox.JqError as exc:
            message = str(exc)
            finish(d, task, "FAILED", output={"error": message}, reason=message)
            return
        finish(d, task, "COMPLETED", output={"result": results[0] if results else None, "resultList": results})
