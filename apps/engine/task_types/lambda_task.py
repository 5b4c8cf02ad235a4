"""LAMBDA (legacy): run ``scriptExpression`` as a JavaScript function body over the input.

Source: Conductor's Lambda system task.
"""
from __future__ import annotations

from apps.engine.evaluators import EvaluationError, evaluate_js
from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish

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
