"""DECISION (legacy SWITCH): the case comes from ``caseValueParam`` or a JavaScript
``caseExpression``; output ``caseOutput: [case]``.

Source: DecisionTaskMapper.
"""
from __future__ import annotations

from apps.engine.evaluators import EvaluationError, case_string, evaluate
from apps.engine.outcome import TerminateWorkflow
from apps.engine.task_types import register
from apps.engine.task_types.switch import Branching


@register
class Decision(Branching):
    type_name = "DECISION"

    def evaluate_case(self, d, workflow_task, task_input):
        if workflow_task.get("caseExpression"):
            try:
                return case_string(evaluate("javascript", workflow_task["caseExpression"], task_input))
            except EvaluationError as exc:
                raise TerminateWorkflow(f"Error while evaluating script: {exc}", "FAILED") from None
        return case_string(task_input.get(workflow_task.get("caseValueParam")))

    def output_for(self, case):
        return {"caseOutput": [case]}
