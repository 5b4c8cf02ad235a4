"""LambdaAndTerminateTaskSpec: a TERMINATE task in one fork branch ends the workflow
COMPLETED, cancels the JOIN and the running SUB_WORKFLOW of the other branch, and the
child is terminated with "Parent workflow has been terminated with reason: ..."
(SubWorkflow.cancel: the parent's reasonForIncompletion, else its status)."""
from __future__ import annotations

from tests.specs.definitions import TERMINATE_TASK_PARENT_WF, TERMINATE_TASK_SUB_WF


def test_terminate_in_a_fork_cancels_the_running_sub_workflow(conductor):
    """"Test workflow with a terminate task when the workflow has a subworkflow"."""
    conductor.task_defs("integration_task_3")
    conductor.workflow_defs(TERMINATE_TASK_SUB_WF, TERMINATE_TASK_PARENT_WF)
    wid = conductor.start("test_terminate_task_parent_wf", {"a": 1})
    wf = conductor.wf(wid)
    assert [(t["taskType"], t["status"], t["seq"]) for t in wf["tasks"]] == [
        ("FORK", "COMPLETED", 1), ("LAMBDA", "COMPLETED", 2), ("LAMBDA", "COMPLETED", 3),
        ("JOIN", "IN_PROGRESS", 4), ("SUB_WORKFLOW", "IN_PROGRESS", 5), ("WAIT", "IN_PROGRESS", 6)]
    assert [t["referenceTaskName"] for t in wf["tasks"][1:3]] == ["lambdaTask1", "lambdaTask2"]
    child = conductor.child(wid, "test_terminate_subworkflow")
    assert conductor.wf(child)["status"] == "RUNNING"
    assert conductor.statuses(child) == [("integration_task_3", "SCHEDULED")]

    wait = conductor.task(wid, "basicJavaA")
    conductor.result(wait, "COMPLETED")
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert "Workflow is COMPLETED by TERMINATE task" in wf["reasonForIncompletion"]
    assert [(t["taskType"], t["status"], t["seq"]) for t in wf["tasks"]] == [
        ("FORK", "COMPLETED", 1), ("LAMBDA", "COMPLETED", 2), ("LAMBDA", "COMPLETED", 3),
        ("JOIN", "CANCELED", 4), ("SUB_WORKFLOW", "CANCELED", 5), ("WAIT", "COMPLETED", 6),
        ("TERMINATE", "COMPLETED", 7)]
    sub = conductor.wf(child)
    assert sub["status"] == "TERMINATED"
    assert "Parent workflow has been terminated with reason: Workflow is COMPLETED by TERMINATE task" in \
        sub["reasonForIncompletion"]
    assert conductor.statuses(child) == [("integration_task_3", "CANCELED")]
