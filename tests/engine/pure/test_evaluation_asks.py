"""The pure decider never runs a script: it asks (an ``evaluate`` action) and applies a
result handed back by the executor only when it was computed from the task's current
inputs (apps.engine.evaluation). Covers INLINE, SWITCH and DO_WHILE."""
from __future__ import annotations

import random

from apps.core.ids import new_id
from apps.engine import decider, evaluation
from tests.factories import T0, simple_task, workflow_state


def decide(wf, now=T0, evaluated=None):
    return decider.decide(wf, new_id=new_id, rng=random.Random(1), now_ms=now, evaluated=evaluated)


def asked(outcome) -> list[evaluation.Request]:
    return [a.data["request"] for a in outcome.actions if a.kind == "evaluate"]


def answer(outcome) -> dict:
    """Run what ``outcome`` asked for, as the executor does outside the lock."""
    return {r.key: evaluation.run(r) for r in asked(outcome)}


def test_an_inline_script_is_asked_for_and_its_result_applied_by_the_next_decide():
    wf = workflow_state([{"name": "calc", "taskReferenceName": "calc", "type": "INLINE",
                          "inputParameters": {"evaluatorType": "javascript", "expression": "$.x * 2",
                                              "x": "${workflow.input.x}"}}], input={"x": 21})
    first = decide(wf)
    [request] = asked(first)
    [calc] = wf.tasks
    assert calc.status == "IN_PROGRESS" and calc.output_data == {}
    assert request.task_id == calc.task_id and request.bindings["x"] == 21

    # a result computed from other inputs (a stale evaluation) is not applied
    stale = evaluation.Evaluated(evaluation.key(evaluation.SCRIPT, "javascript", "$.x * 2", {"x": 1}), value=2)
    decide(wf, T0 + 1, evaluated={stale.key: stale})
    assert calc.status == "IN_PROGRESS"

    decide(wf, T0 + 2, evaluated=answer(first))
    assert calc.status == "COMPLETED" and calc.output_data == {"result": 42}
    assert wf.status == "COMPLETED"


def test_a_waiting_task_is_asked_for_again_only_after_its_time_limit_and_grace():
    wf = workflow_state([{"name": "calc", "taskReferenceName": "calc", "type": "INLINE",
                          "inputParameters": {"evaluatorType": "javascript", "expression": "1"}}])
    decide(wf)
    again_at = evaluation.redispatch_at(T0, evaluation.SCRIPT, {})
    assert wf.next_decide_at == again_at  # the sweeper comes back for a lost evaluation
    assert asked(decide(wf, again_at - 1)) == []
    assert len(asked(decide(wf, again_at))) == 1


def test_a_switch_script_waits_in_progress_then_schedules_its_case():
    wf = workflow_state([{"name": "sw", "taskReferenceName": "sw", "type": "SWITCH", "evaluatorType": "javascript",
                          "expression": "$.x > 1 ? 'yes' : 'no'", "inputParameters": {"x": "${workflow.input.x}"},
                          "decisionCases": {"yes": [simple_task("t_yes", "yes_task")],
                                            "no": [simple_task("t_no", "no_task")]}}], input={"x": 5})
    first = decide(wf)
    assert [(t.reference_task_name, t.status) for t in wf.tasks] == [("sw", "IN_PROGRESS")]
    assert len(asked(first)) == 1
    decide(wf, T0 + 1, evaluated=answer(first))
    assert [(t.reference_task_name, t.status) for t in wf.tasks] == [("sw", "COMPLETED"), ("yes_task", "SCHEDULED")]
    assert wf.tasks[0].output_data == {"evaluationResult": ["yes"], "selectedCase": "yes"}


def test_a_value_param_switch_needs_no_evaluation():
    wf = workflow_state([{"name": "sw", "taskReferenceName": "sw", "type": "SWITCH", "evaluatorType": "value-param",
                          "expression": "c", "inputParameters": {"c": "no"},
                          "decisionCases": {"no": [simple_task("t_no", "no_task")]}}])
    assert asked(decide(wf)) == []
    assert [(t.reference_task_name, t.status) for t in wf.tasks] == [("sw", "COMPLETED"), ("no_task", "SCHEDULED")]


def test_a_loop_condition_is_asked_for_once_per_iteration_and_applied_when_it_comes():
    body = {"name": "noop", "taskReferenceName": "step", "type": "SET_VARIABLE", "inputParameters": {"n": 1}}
    wf = workflow_state([{"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
                          "loopCondition": "$.loop['iteration'] < 2", "loopOver": [body]}])
    first = decide(wf)
    loop = wf.tasks[0]
    [request] = asked(first)
    assert loop.status == "IN_PROGRESS" and loop.evaluation_key == request.key
    # another decide meanwhile (a parallel write) does not ask again
    assert asked(decide(wf, T0 + 1)) == []
    second = decide(wf, T0 + 2, evaluated=answer(first))
    assert loop.output_data["iteration"] == 2 and loop.status == "IN_PROGRESS"
    third = decide(wf, T0 + 3, evaluated=answer(second))
    assert loop.status == "COMPLETED" and loop.evaluation_key == ""
    assert asked(third) == [] and wf.status == "COMPLETED"
