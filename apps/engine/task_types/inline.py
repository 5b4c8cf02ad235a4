"""INLINE: evaluate a script or a value expression over the task input.

Source: Conductor's Inline system task.
"""
from __future__ import annotations

from apps.engine.evaluators import EvaluationError, UnknownEvaluator, evaluate
from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish

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
