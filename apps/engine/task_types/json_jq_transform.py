"""JSON_JQ_TRANSFORM: apply a jq expression to the task input.

The program runs in a helper process (``apps.engine.jq_sandbox``) bounded by
``CONDUCTOR["JQ_TIME_LIMIT_SECONDS"]``: a runaway program fails its own task and holds
nothing else up.
Source: Conductor's JsonJqTransform system task.
"""
from __future__ import annotations

from apps.engine import jq_sandbox
from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish


def jq_time_limit(d) -> float:
    """Seconds a JSON_JQ_TRANSFORM program may run (``CONDUCTOR["JQ_TIME_LIMIT_SECONDS"]``,
    from the decider's ``config``)."""
    return float(d.config.get("JQ_TIME_LIMIT_SECONDS", jq_sandbox.DEFAULT_TIME_LIMIT_SECONDS))


@register
class JsonJqTransform(SystemTask):
    """Apply the jq ``queryExpression`` to the whole resolved input; output
    ``{"result": first value or null, "resultList": all values}``; errors fail the task
    with ``output.error``."""

    type_name = "JSON_JQ_TRANSFORM"

    def start(self, d, task):
        expression = task.input_data.get("queryExpression")
        if not isinstance(expression, str) or not expression.strip():
            finish(d, task, "FAILED", reason="Missing 'queryExpression' in input parameters")
            return
        try:
            results = jq_sandbox.evaluate(expression, task.input_data, jq_time_limit(d))
        except jq_sandbox.JqError as exc:
            message = str(exc)
            finish(d, task, "FAILED", output={"error": message}, reason=message)
            return
        finish(d, task, "COMPLETED", output={"result": results[0] if results else None, "resultList": results})
