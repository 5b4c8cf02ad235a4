"""SWITCH: choose a case and schedule its first task (``Branching`` is shared with
DECISION, the legacy form, in ``decision``).

The case value is compared as a string (``null``, ``true``, ``1``). ``defaultCase`` is
used only when no case key matches; a matched case with no tasks is a deliberate no-op
and the workflow continues after the SWITCH. Output ``evaluationResult: [case]`` and
``selectedCase``; input gets ``case`` and ``hasChildren`` when the chosen case has tasks.
Source: SwitchTaskMapper; an unknown evaluator fails the workflow
(``No evaluator registered for type: %s``); an evaluation error fails the SWITCH.
"""
from __future__ import annotations

from apps.engine.evaluators import EvaluationError, UnknownEvaluator, case_string, evaluate
from apps.engine.outcome import TerminateWorkflow
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType


class Branching(TaskType):
    """What SWITCH and DECISION share: evaluate a case, schedule its first task."""

    has_task_def = False

    def evaluate_case(self, d, workflow_task: dict, task_input: dict) -> str:
        raise NotImplementedError

    def output_for(self, case: str) -> dict:
        raise NotImplementedError

    def map(self, d, workflow_task: dict, retry_count: int) -> list[TaskState]:
        task = d.new_task(workflow_task, retry_count=retry_count)
        task.task_def_name = self.type_name
        task.start_time = d.now
        try:
            case = self.evaluate_case(d, workflow_task, task.input_data)
        except UnknownEvaluator as exc:
            raise TerminateWorkflow(str(exc), "FAILED") from None
        except EvaluationError as exc:
            task.status = "FAILED"
            task.reason_for_incompletion = str(exc)
            task.end_time = d.now
            return [task]
        task.input_data["case"] = case
        task.output_data = self.output_for(case)
        task.status = "COMPLETED"
        task.end_time = d.now
        cases = workflow_task.get("decisionCases") or {}
        selected = cases[case] if case in cases else (workflow_task.get("defaultCase") or [])
        tasks = [task]
        if selected:
            task.input_data["hasChildren"] = "true"
            tasks.extend(d.tasks_to_schedule(selected[0], retry_count))
        return tasks

    def continues_after(self, d, task: TaskState) -> bool:
        # the chosen case's tasks carry on (and continue after the SWITCH when they end)
        return task.input_data.get("hasChildren") != "true"


@register
class Switch(Branching):
    type_name = "SWITCH"

    def evaluate_case(self, d, workflow_task, task_input):
        return case_string(evaluate(workflow_task.get("evaluatorType") or "value-param",
                                    workflow_task.get("expression"), task_input))

    def output_for(self, case):
        return {"evaluationResult": [case], "selectedCase": case}
