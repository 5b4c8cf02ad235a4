"""JSON_JQ_TRANSFORM: apply a jq expression to the task input.

Source: Conductor's JsonJqTransform system task.
"""
from __future__ import annotations

from functools import lru_cache

import jq

from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish


@lru_cache(maxsize=512)
def _jq_program(expression: str):
    return jq.compile(expression)


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
            results = _jq_program(expression).input_value(task.input_data).all()
        except ValueError as exc:
            message = str(exc)
            finish(d, task, "FAILED", output={"error": message}, reason=message)
            return
        finish(d, task, "COMPLETED", output={"result": results[0] if results else None, "resultList": results})
