"""SWITCH: choose a case and schedule its first task (``Branching`` is shared with
DECISION, the legacy form, in ``decision``).

The case value is compared as a string (``null``, ``true``, ``1``). ``defaultCase`` is
used only when no case key matches; a matched case with no tasks is a deliberate no-op
and the workflow continues after the SWITCH. Output ``evaluationResult: [case]`` and
``selectedCase``; input gets ``case`` and ``hasChildren`` when the chosen case has tasks.
A ``value-param`` case is read when the SWITCH is scheduled; a JavaScript expression is
evaluated outside the workflow's lock (``apps.engine.evaluation``): the SWITCH waits
IN_PROGRESS until the result is applied (normally in the same request), then completes
and schedules its case, as Conductor's mapper does in one step.
Source: SwitchTaskMapper; an unknown evaluator fails the workflow
(``No evaluator registered for type: %s``); an evaluation error fails the SWITCH.
"""
from __future__ import annotations

from apps.engine import evaluation, params
from apps.engine.evaluators import EvaluationError, UnknownEvaluator, case_string, evaluate
from apps.engine.outcome import TerminateWorkflow
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType


class Branching(TaskType):
    """What SWITCH and DECISION share: evaluate a case, schedule its first task."""

    has_task_def = False

    def script_of(self, workflow_task: dict) -> tuple[str | None, str | None]:
        """``(evaluator type, expression)`` when the case comes from a script (evaluated
        outside the lock), else ``(None, None)``."""
        return None, None

    def case_now(self, d, workflow_task: dict, task_input: dict) -> str:
        """The case when no script is involved (a look-up in the input)."""
        raise NotImplementedError

    def case_of(self, result: evaluation.Evaluated) -> str:
        """The case from a script's result; raises TerminateWorkflow / EvaluationError."""
        if result.unknown_evaluator:
            raise UnknownEvaluator(result.error)
        if result.error is not None:
            raise EvaluationError(result.error)
        return case_string(result.value)

    def output_for(self, case: str) -> dict:
        raise NotImplementedError

    def map(self, d, workflow_task: dict, retry_count: int) -> list[TaskState]:
        task = d.new_task(workflow_task, retry_count=retry_count)
        task.task_def_name = self.type_name
        task.start_time = d.now
        evaluator_type, expression = self.script_of(workflow_task)
        if expression is not None:
            task.status = "IN_PROGRESS"
            d.evaluation_result(task, evaluation.SCRIPT, expression, task.input_data, evaluator_type=evaluator_type)
            return [task]
        try:
            case = self.case_now(d, workflow_task, task.input_data)
        except EvaluationError as exc:
            return [self._failed(d, task, exc)]
        return [task, *self._choose(d, task, workflow_task, case, retry_count, in_scope=False)]

    def execute(self, d, task: TaskState) -> bool:
        if task.status != "IN_PROGRESS":  # only a SWITCH waiting for its script is
            return False
        workflow_task = d.workflow_task_of(task)
        evaluator_type, expression = self.script_of(workflow_task)
        if expression is None:
            return False
        due = d.redispatch_evaluations or d.now >= evaluation.redispatch_at(task.update_time, evaluation.SCRIPT, d.config)
        newly = due and task.task_id not in d.asked
        result = d.evaluation_result(task, evaluation.SCRIPT, expression, task.input_data,
                                     evaluator_type=evaluator_type, ask=due)
        if result is None:
            if newly:
                task.update_time = d.now
                return True
            return False
        try:
            case = self.case_of(result)
        except UnknownEvaluator as exc:
            raise TerminateWorkflow(str(exc), "FAILED") from None
        except EvaluationError as exc:
            self._failed(d, task, exc)
            return True
        d.schedule(self._choose(d, task, workflow_task, case, task.retry_count, in_scope=True))
        return True

    def due_at(self, d, task: TaskState) -> int | None:
        if task.status != "IN_PROGRESS":
            return None
        return evaluation.redispatch_at(task.update_time, evaluation.SCRIPT, d.config)

    def _failed(self, d, task: TaskState, exc: Exception) -> TaskState:
        task.status = "FAILED"
        task.reason_for_incompletion = str(exc)
        task.end_time = d.now
        task.update_time = d.now
        return task

    def _choose(self, d, task: TaskState, workflow_task: dict, case: str, retry_count: int,
                in_scope: bool) -> list[TaskState]:
        """Complete the SWITCH on ``case`` and map the first task of the chosen branch (in
        the SWITCH's loop scope when it is mapped after the SWITCH itself: ``in_scope``)."""
        task.input_data["case"] = case
        task.output_data = self.output_for(case)
        task.status = "COMPLETED"
        task.end_time = d.now
        task.update_time = d.now
        cases = workflow_task.get("decisionCases") or {}
        selected = cases[case] if case in cases else (workflow_task.get("defaultCase") or [])
        if not selected:
            return []
        task.input_data["hasChildren"] = "true"
        if in_scope and task.iteration:
            return d.map_in_scope(selected[0], params.loop_scope(task), task.iteration, retry_count)
        return d.tasks_to_schedule(selected[0], retry_count)

    def continues_after(self, d, task: TaskState) -> bool:
        # the chosen case's tasks carry on (and continue after the SWITCH when they end)
        return task.input_data.get("hasChildren") != "true"


@register
class Switch(Branching):
    type_name = "SWITCH"

    def script_of(self, workflow_task):
        etype = str(workflow_task.get("evaluatorType") or "value-param")
        expression = workflow_task.get("expression")
        if etype.lower() in evaluation.JS_EVALUATORS and isinstance(expression, str) and expression.strip():
            return etype, expression
        return None, None

    def case_now(self, d, workflow_task, task_input):
        try:
            return case_string(evaluate(workflow_task.get("evaluatorType") or "value-param",
                                        workflow_task.get("expression"), task_input))
        except UnknownEvaluator as exc:
            raise TerminateWorkflow(str(exc), "FAILED") from None

    def output_for(self, case):
        return {"evaluationResult": [case], "selectedCase": case}
