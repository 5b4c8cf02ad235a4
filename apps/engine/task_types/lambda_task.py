"""LAMBDA (legacy): run ``scriptExpression`` as a JavaScript function body over the input,
outside the workflow's lock (``base.EvaluatingTask``).

Source: Conductor's Lambda system task.
"""
from __future__ import annotations

from apps.engine import evaluation
from apps.engine.task_types import register
from apps.engine.task_types.base import EvaluatingTask, finish


@register
class Lambda(EvaluatingTask):
    """Legacy LAMBDA: ``scriptExpression`` is a function body over ``$`` (the input)."""

    type_name = "LAMBDA"
    kind = evaluation.LAMBDA

    def settle_at_once(self, d, task):
        script = task.input_data.get("scriptExpression")
        if not isinstance(script, str) or not script.strip():
            finish(d, task, "FAILED", reason="Empty 'scriptExpression' in Lambda task's input parameters. "
                                             "A non-empty String value must be provided.")
            return True
        return False

    def spec(self, task):
        return task.input_data.get("scriptExpression"), task.input_data, None

    def settle(self, d, task, result):
        if result.error is not None:
            finish(d, task, "FAILED", output={"error": result.error}, reason=result.error)
        else:
            finish(d, task, "COMPLETED", output={"result": result.value})
