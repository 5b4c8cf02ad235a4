"""SimpleWorkflowSpec: failedReferenceTaskNames / failedTaskNames. Conductor fills them
when a workflow completes or is terminated (WorkflowExecutorOps.completeWorkflow /
terminateWorkflow) with every task whose status is FAILED or FAILED_WITH_TERMINAL_ERROR,
retried attempts included."""
from __future__ import annotations

from tests.specs.definitions import LINEAR_WORKFLOW_T1_T2

INPUT = {"param1": "p1 value", "param2": "p2 value"}


def test_terminal_error_fails_the_workflow_and_names_the_task(conductor):
    """"Test simple workflow terminal error condition" (integration_task_1 retryCount 1)."""
    conductor.task_defs("integration_task_1", "integration_task_2")
    definition = {**LINEAR_WORKFLOW_T1_T2, "outputParameters": {
        **LINEAR_WORKFLOW_T1_T2["outputParameters"], "validationErrors": "${t1.output.ErrorMessage}"}}
    conductor.workflow_defs(definition)
    wid = conductor.start("integration_test_wf", INPUT, correlationId="unit_test_1")
    assert conductor.statuses(wid) == [("integration_task_1", "SCHEDULED")]
    # restarting a running workflow is refused
    conductor.call("post", f"/workflow/{wid}/restart", status=409)
    reason = "NON TRANSIENT ERROR OCCURRED: An integration point required to complete the task is down"
    t1 = conductor.fail("integration_task_1", reason, terminal=True,
                        output={"TERMINAL_ERROR": "Integration endpoint down: FOOBAR",
                                "ErrorMessage": "There was a terminal error"})
    wf = conductor.wf(wid)
    assert wf["status"] == "FAILED"
    assert wf["reasonForIncompletion"] == f"Task {t1['taskId']} failed with status: FAILED and reason: '{reason}'"
    assert wf["output"]["o1"] == "p1 value"
    assert wf["output"]["validationErrors"] == "There was a terminal error"
    assert conductor.task(wid, "t1")["retryCount"] == 0
    assert set(wf["failedReferenceTaskNames"]) == {"t1"}
    assert set(wf["failedTaskNames"]) == {"integration_task_1"}


def test_failed_attempts_are_named_even_when_a_retry_completes(conductor):
    """"Test Simple Workflow with response timeout": integration_task_2 (retryCount 2)
    fails twice, the third attempt completes; the COMPLETED workflow still names t2."""
    conductor.task_defs("integration_task_1")
    conductor.task_defs("integration_task_2", retryCount=2, responseTimeoutSeconds=10)
    conductor.workflow_defs(LINEAR_WORKFLOW_T1_T2)
    wid = conductor.start("integration_test_wf", INPUT)
    t1 = conductor.poll("integration_task_1")
    assert (t1["inputData"]["p1"], t1["inputData"]["p2"]) == ("p1 value", "p2 value")
    conductor.result(t1, "COMPLETED", {"op": "task1.output -> p1 value.p2 value"})
    for _ in range(2):
        task = conductor.fail("integration_task_2", "failure...0")
        assert task["inputData"]["tp2"] == "task1.output -> p1 value.p2 value"
        assert task["inputData"]["tp1"] == "p1 value"
    conductor.complete("integration_task_2")
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert [(t["taskType"], t["status"]) for t in wf["tasks"]] == [
        ("integration_task_1", "COMPLETED"), ("integration_task_2", "FAILED"),
        ("integration_task_2", "FAILED"), ("integration_task_2", "COMPLETED")]
    assert wf["tasks"][1]["taskId"] == wf["tasks"][2]["retriedTaskId"]
    assert wf["tasks"][2]["taskId"] == wf["tasks"][3]["retriedTaskId"]
    assert set(wf["failedReferenceTaskNames"]) == {"t2"}
    assert set(wf["failedTaskNames"]) == {"integration_task_2"}


def test_retries_exhausted_then_workflow_retry(conductor):
    """"Test simple workflow with retry at workflow level" (integration_task_1 retryCount 1)."""
    conductor.task_defs("integration_task_1", "integration_task_2")
    conductor.workflow_defs(LINEAR_WORKFLOW_T1_T2)
    wid = conductor.start("integration_test_wf", INPUT, correlationId="retry_test")
    wf = conductor.wf(wid)
    assert wf["tasks"][0]["status"] == "SCHEDULED"
    assert wf["tasks"][0]["inputData"]["p3"] == wf["tasks"][0]["taskId"]
    conductor.fail("integration_task_1", "failure...0")
    wf = conductor.wf(wid)
    assert wf["status"] == "RUNNING"
    assert [t["status"] for t in wf["tasks"]] == ["FAILED", "SCHEDULED"]
    assert wf["tasks"][1]["inputData"]["p3"] == wf["tasks"][1]["taskId"]
    conductor.fail("integration_task_1", "failure...0")
    wf = conductor.wf(wid)
    assert wf["status"] == "FAILED"
    assert [t["status"] for t in wf["tasks"]] == ["FAILED", "FAILED"]
    assert set(wf["failedReferenceTaskNames"]) == {"t1"}
    assert set(wf["failedTaskNames"]) == {"integration_task_1"}
    conductor.call("post", f"/workflow/{wid}/retry")
    wf = conductor.wf(wid)
    assert wf["status"] == "RUNNING"
    assert [t["status"] for t in wf["tasks"]] == ["FAILED", "FAILED", "SCHEDULED"]
    assert wf["tasks"][2]["inputData"]["p3"] == wf["tasks"][2]["taskId"]
    conductor.complete("integration_task_1")
    assert [t["status"] for t in conductor.wf(wid)["tasks"]] == ["FAILED", "FAILED", "COMPLETED", "SCHEDULED"]
    conductor.complete("integration_task_2")
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert set(wf["failedReferenceTaskNames"]) == {"t1"}
    assert set(wf["failedTaskNames"]) == {"integration_task_1"}
