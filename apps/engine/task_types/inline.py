"""INLINE: evaluate a script or a value expression over the task input.

A JavaScript expression runs outside the workflow's lock (``base.EvaluatingTask``): the
task is IN_PROGRESS until its result is applied, normally right after the decide that
scheduled it, in the same request. ``value-param`` (a key look-up) and input errors are
settled at once.
Source: Conductor's Inline system task.
"""
from __future__ import annotations

from apps.engine import evaluation
from apps.engine.evaluators import EvaluationError, UnknownEvaluator, evaluate
from apps.engine.task_types import register
from apps.engine.task_types.base import EvaluatingTask, finish


@register
class Inline(EvaluatingTask):
    """Evaluate ``expression`` with ``evaluatorType`` (javascript/graaljs/value-param) over
    ``$`` = the whole resolved input; output ``{"result": value}``. A script error fails
    the task terminally with ``output.error`` (re-running gives the same error)."""

    type_name = "INLINE"

    def settle_at_once(self, d, task):
        params = task.input_data
        etype = str(params.get("evaluatorType") or "javascript")
        expression = params.get("expression")
        if etype.lower() in evaluation.JS_EVALUATORS and isinstance(expression, str) and expression.strip():
            return False
        try:  # value-param, an unknown evaluator or an empty expression: no script runs
            result = evaluate(etype, expression, params)
        except (UnknownEvaluator, EvaluationError) as exc:
            self.settle(d, task, evaluation.Evaluated("", error=str(exc)))
            return True
        self.settle(d, task, evaluation.Evaluated("", value=result))
        return True

    def spec(self, task):
        params = task.input_data
        return params.get("expression"), params, str(params.get("evaluatorType") or "javascript")

    def settle(self, d, task, result):
        if result.error is not None:
            finish(d, task, "FAILED_WITH_TERMINAL_ERROR", output={"error": result.error}, reason=result.error)
        else:
            finish(d, task, "COMPLETED", output={"result": result.value})
