"""JSON_JQ_TRANSFORM: apply a jq expression to the task input.

The program runs outside the workflow's lock (``base.EvaluatingTask``), in a helper
process (``apps.engine.jq_sandbox``) bounded by ``CONDUCTOR["JQ_TIME_LIMIT_SECONDS"]``: a
runaway program fails its own task and holds nothing else up.
Source: Conductor's JsonJqTransform system task.
"""
from __future__ import annotations

from apps.engine import evaluation
from apps.engine.task_types import register
from apps.engine.task_types.base import EvaluatingTask, finish



@register
class JsonJqTransform(EvaluatingTask):
    """Apply the jq ``queryExpression`` to the whole resolved input; output
    ``{"result": first value or null, "resultList": all values}``; errors fail the task
    with ``output.error``."""

    type_name = "JSON_JQ_TRANSFORM"
    kind = evaluation.JQ

    def settle_at_once(self, d, task):
        expression = task.input_data.get("queryExpression")
        if not isinstance(expression, str) or not expression.strip():
            finish(d, task, "FAILED", reason="Missing 'queryExpression' in input parameters")
            return True
        return False

    def spec(self, task):
        return task.input_data.get("queryExpression"), task.input_data, None

    def settle(self, d, task, result):
        if result.error is not None:
            finish(d, task, "FAILED", output={"error": result.error}, reason=result.error)
            return
        results = result.value or []
        finish(d, task, "COMPLETED", output={"result": results[0] if results else None, "resultList": results})
