"""DECISION (legacy SWITCH): the case comes from ``caseValueParam`` or a JavaScript
``caseExpression`` (evaluated outside the workflow's lock, as SWITCH's scripts are);
output ``caseOutput: [case]``.

Source: DecisionTaskMapper.
"""
from __future__ import annotations

from apps.engine.evaluators import EvaluationError, case_string
from apps.engine.outcome import TerminateWorkflow
from apps.engine.task_types import register
from apps.engine.task_types.switch import Branching


@register
class Decision(Branching):
    type_name = "DECISION"

    def script_of(self, workflow_task):
        expression = workflow_task.get("caseExpression")
        if expression:
            return "javascript", expression
        return None, None

    def case_now(self, d, workflow_task, task_input):
        return case_string(task_input.get(workflow_task.get("caseValueParam")))

    def case_of(self, result):
        if result.error is not None:
            raise TerminateWorkflow(f"Error while evaluating script: {result.error}", "FAILED")
        return super().case_of(result)

    def output_for(self, case):
        return {"caseOutput": [case]}
