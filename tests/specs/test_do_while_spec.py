"""DoWhileSpec: INLINE -> SWITCH -> WAIT bodies over iterations (the body reads the loop's
``iteration``, 1 in the first pass), LAMBDA bodies reading ``${loopTask['iteration']}``,
and a SET_VARIABLE body that ends the loop."""
from __future__ import annotations

from tests.specs.definitions import DO_WHILE_ITERATION_FIX, DO_WHILE_SET_VARIABLE_FIX, DO_WHILE_WITH_DECISION_TASK


def test_do_while_with_decision_task(conductor):
    """"Test workflow with Do While task contains decision task": list [1, 2]; the INLINE
    body reads ``$.list.get($.iterator - 1)`` (a Java List method in Conductor's GraalJS;
    our JavaScript offers ``get``/``size`` on arrays for such scripts)."""
    conductor.workflow_defs(DO_WHILE_WITH_DECISION_TASK)
    wid = conductor.start("DO_While_with_Decision_task", {"list": [1, 2]}, correlationId="looptest")
    wf = conductor.wf(wid)
    assert wf["status"] == "RUNNING"
    assert conductor.statuses(wid) == [("DO_WHILE", "IN_PROGRESS"), ("INLINE", "COMPLETED"),
                                       ("SWITCH", "COMPLETED"), ("WAIT", "IN_PROGRESS")]
    first = wf["tasks"][1]
    assert first["inputData"]["iterator"] == 1  # the iteration a body task reads in its first pass
    assert first["outputData"]["result"] == 1
    conductor.result(wf["tasks"][3], "COMPLETED")
    wf = conductor.wf(wid)
    assert wf["status"] == "RUNNING"
    assert conductor.statuses(wid) == [("DO_WHILE", "IN_PROGRESS"), ("INLINE", "COMPLETED"), ("SWITCH", "COMPLETED"),
                                       ("WAIT", "COMPLETED"), ("INLINE", "COMPLETED"), ("INLINE", "COMPLETED"),
                                       ("SWITCH", "COMPLETED"), ("WAIT", "IN_PROGRESS")]
    assert wf["tasks"][0]["iteration"] == 2
    assert wf["tasks"][5]["inputData"]["iterator"] == 2 and wf["tasks"][5]["outputData"]["result"] == 2
    conductor.result(wf["tasks"][7], "COMPLETED")
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert conductor.statuses(wid) == [("DO_WHILE", "COMPLETED"), ("INLINE", "COMPLETED"), ("SWITCH", "COMPLETED"),
                                       ("WAIT", "COMPLETED"), ("INLINE", "COMPLETED"), ("INLINE", "COMPLETED"),
                                       ("SWITCH", "COMPLETED"), ("WAIT", "COMPLETED"), ("INLINE", "COMPLETED")]
    assert wf["tasks"][0]["iteration"] == 2


def test_loop_over_task_reads_the_iteration(conductor):
    """"Test workflow with Do While task contains loop over task that use iteration in
    script expression": loop 2, results 0 and 1."""
    conductor.workflow_defs(DO_WHILE_ITERATION_FIX)
    wid = conductor.start("Do_While_Workflow_Iteration_Fix", {"loop": 2}, correlationId="looptest")
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert conductor.statuses(wid) == [("DO_WHILE", "COMPLETED"), ("LAMBDA", "COMPLETED"), ("LAMBDA", "COMPLETED")]
    assert [t["outputData"]["result"] for t in wf["tasks"][1:]] == [0, 1]


def test_set_variable_in_the_body_ends_the_loop(conductor):
    """"Test workflow with Do While task contains set variable task"."""
    conductor.workflow_defs(DO_WHILE_SET_VARIABLE_FIX)
    wid = conductor.start("do_while_Set_variable_fix", {"value": 2}, correlationId="looptest")
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert conductor.statuses(wid) == [("DO_WHILE", "COMPLETED"), ("SET_VARIABLE", "COMPLETED")]
    assert wf["tasks"][1]["inputData"]["value"] == "0"
