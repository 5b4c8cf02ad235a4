"""SubWorkflowSpec: the child's name is the expression ``${workflow.input.subwf}``; a parent
timing out terminates its child and retrying the child revives the parent; terminating the
child terminates the parent; retry with resumeSubworkflowTasks retries the child in place."""
from __future__ import annotations

from tests.specs.definitions import LINEAR_WORKFLOW_T1_T2, SUB_WORKFLOW, WORKFLOW_WITH_SUBWORKFLOW

INPUT = {"param1": "p1 value", "param2": "p2 value", "subwf": "sub_workflow"}


def setup(conductor, **parent_overrides) -> None:
    conductor.task_defs("integration_task_1", "integration_task_2")
    conductor.task_defs("simple_task_in_sub_wf", retryCount=0)
    conductor.workflow_defs(SUB_WORKFLOW, LINEAR_WORKFLOW_T1_T2, {**WORKFLOW_WITH_SUBWORKFLOW, **parent_overrides})


def test_parent_timed_out_terminates_child_and_retrying_the_child_revives_it(conductor):
    """"Test retrying a subworkflow where parent workflow timed out due to workflowTimeout"."""
    setup(conductor, timeoutPolicy="TIME_OUT_WF", timeoutSeconds=10)
    wid = conductor.start("integration_test_wf_with_sub_wf", INPUT, correlationId="wf_with_subwf_test_1")
    assert conductor.statuses(wid) == [("integration_task_1", "SCHEDULED")]
    conductor.complete("integration_task_1", {"op": "task1.done"})
    assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS")]
    sub_task_id = conductor.task(wid, "t2")["taskId"]
    child = conductor.child(wid, "t2")
    assert conductor.wf(child)["workflowName"] == "sub_workflow"
    assert conductor.statuses(child) == [("simple_task_in_sub_wf", "SCHEDULED")]

    conductor.tick(10.5)
    conductor.decide(wid)
    assert conductor.wf(wid)["status"] == "TIMED_OUT"
    assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "CANCELED")]
    assert conductor.wf(child)["status"] == "TERMINATED"
    assert conductor.statuses(child) == [("simple_task_in_sub_wf", "CANCELED")]

    conductor.call("post", f"/workflow/{child}/retry")
    assert conductor.wf(child)["status"] == "RUNNING"
    assert conductor.statuses(child) == [("simple_task_in_sub_wf", "CANCELED"), ("simple_task_in_sub_wf", "SCHEDULED")]
    assert conductor.wf(wid)["status"] == "RUNNING"
    assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS")]

    conductor.complete("simple_task_in_sub_wf", {"op": "simple_task_in_sub_wf.done"})
    assert conductor.wf(child)["status"] == "COMPLETED"
    assert conductor.api.task(sub_task_id)["status"] == "COMPLETED"
    conductor.decide(wid)
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "COMPLETED")]
    assert wf["output"]["op"] == "simple_task_in_sub_wf.done"


def test_terminating_the_child_terminates_the_parent(conductor):
    """"Test terminating a subworkflow terminates parent workflow"."""
    setup(conductor)
    wid = conductor.start("integration_test_wf_with_sub_wf", INPUT, correlationId="wf_with_subwf_test_1")
    conductor.complete("integration_task_1", {"op": "task1.done"})
    child = conductor.child(wid, "t2")
    assert conductor.statuses(child) == [("simple_task_in_sub_wf", "SCHEDULED")]
    reason = "terminating from a test case"
    conductor.call("delete", f"/workflow/{child}", params={"reason": reason})
    wf_child = conductor.wf(child)
    assert wf_child["status"] == "TERMINATED"
    assert wf_child["reasonForIncompletion"] == reason
    assert conductor.statuses(child) == [("simple_task_in_sub_wf", "CANCELED")]
    conductor.decide(wid)
    wf = conductor.wf(wid)
    assert wf["status"] == "TERMINATED"
    assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "CANCELED")]
    assert reason in wf["reasonForIncompletion"]


def test_retry_with_resume_retries_the_failed_child_in_place(conductor):
    """"Test retrying a workflow with subworkflow resume" (integration_task_2 retryCount 0)."""
    setup(conductor)
    conductor.task_defs("integration_task_2", retryCount=0)
    wid = conductor.start("integration_test_wf_with_sub_wf", {**INPUT, "subwf": "integration_test_wf"},
                          correlationId="wf_retry_with_subwf_resume_test")
    conductor.complete("integration_task_1", {"op": "task1.done"})
    assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS")]
    child = conductor.child(wid, "t2")
    assert conductor.statuses(child) == [("integration_task_1", "SCHEDULED")]
    conductor.complete("integration_task_1", {"op": "task1.done"})
    assert conductor.statuses(child) == [("integration_task_1", "COMPLETED"), ("integration_task_2", "SCHEDULED")]
    conductor.fail("integration_task_2", "failed")
    assert conductor.wf(child)["status"] == "FAILED"
    conductor.decide(wid)
    assert conductor.wf(wid)["status"] == "FAILED"
    assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "FAILED")]

    conductor.call("post", f"/workflow/{wid}/retry", params={"resumeSubworkflowTasks": True})
    assert conductor.wf(child)["status"] == "RUNNING"
    assert conductor.statuses(child) == [("integration_task_1", "COMPLETED"), ("integration_task_2", "FAILED"),
                                         ("integration_task_2", "SCHEDULED")]
    assert conductor.wf(wid)["status"] == "RUNNING"
    assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS")]
    conductor.complete("integration_task_2", {"op": "task2.done"})
    assert conductor.wf(child)["status"] == "COMPLETED"
    conductor.decide(wid)
    assert conductor.wf(wid)["status"] == "COMPLETED"
    assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "COMPLETED")]
    assert conductor.child(wid, "t2") == child
