"""DynamicForkJoinSpec "Retry a failed dynamic fork join workflow with forked subworkflow":
a dynamic fork of a SUB_WORKFLOW (integration_test_wf3) and a SIMPLE task; the child fails
(integration_task_2 retryCount 0), which fails the parent and cancels its JOIN; a retry
with resumeSubworkflowTasks retries the child's failed task in place, brings the same
SUB_WORKFLOW task and JOIN back to IN_PROGRESS, and the workflow then completes.
(The definition's inline taskDefinitions are replaced by registered ones.)"""
from __future__ import annotations

from tests.specs.definitions import simple

DYNAMIC_FORK_JOIN_WF = {
    "name": "DynamicFanInOutTest",
    "tasks": [
        simple("integration_task_1", "dt1", p1="${workflow.input.param1}", p2="${workflow.input.param2}"),
        {"name": "fork", "taskReferenceName": "dynamicfanouttask", "type": "FORK_JOIN_DYNAMIC",
         "inputParameters": {"dynamicTasks": "${dt1.output.dynamicTasks}",
                             "dynamicTasksInput": "${dt1.output.dynamicTasksInput}"},
         "dynamicForkTasksParam": "dynamicTasks", "dynamicForkTasksInputParamName": "dynamicTasksInput"},
        {"name": "join", "taskReferenceName": "dynamicfanouttask_join", "type": "JOIN"},
        simple("integration_task_4", "task4"),
    ],
    "inputParameters": ["param1", "param2"],
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}
SIMPLE_WORKFLOW_3 = {
    "name": "integration_test_wf3",
    "tasks": [simple("integration_task_1", "t1", p1="${workflow.input.param1}", p2="${workflow.input.param2}",
                     someNullKey=None),
              simple("integration_task_2", "t2", tp1="${workflow.input.param1}", tp2="${t1.output.op}"),
              simple("integration_task_3", "t3", tp1="${workflow.input.param1}", tp2="${t1.output.op}")],
    "inputParameters": ["param1", "param2"],
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}
PARENT_TASKS = ["integration_task_1", "FORK", "SUB_WORKFLOW", "integration_task_10", "JOIN"]


def parent(conductor, wid, *statuses):
    assert conductor.statuses(wid) == list(zip(PARENT_TASKS, statuses))


def test_retry_with_resume_of_a_dynamic_fork_with_a_sub_workflow(conductor):
    conductor.task_defs("integration_task_1", "integration_task_3", "integration_task_4", "integration_task_10")
    conductor.task_defs("integration_task_2", retryCount=0)
    conductor.workflow_defs(SIMPLE_WORKFLOW_3, DYNAMIC_FORK_JOIN_WF)
    wid = conductor.start("DynamicFanInOutTest", {}, correlationId="dynamic_fork_join_wf_subwf")
    assert conductor.statuses(wid) == [("integration_task_1", "SCHEDULED")]
    dynamic_tasks = [
        {"name": "sub_wf_task", "taskReferenceName": "xdt1", "type": "SUB_WORKFLOW",
         "subWorkflowParam": {"name": "integration_test_wf3", "version": 1}},
        {"name": "integration_task_10", "taskReferenceName": "xdt10"},
    ]
    conductor.complete("integration_task_1", {"dynamicTasks": dynamic_tasks, "dynamicTasksInput": {
        "xdt1": {"p1": "q1", "p2": "q2"}, "xdt10": {"k2": "v2"}}})
    parent(conductor, wid, "COMPLETED", "COMPLETED", "IN_PROGRESS", "SCHEDULED", "IN_PROGRESS")
    assert conductor.wf(wid)["tasks"][4]["referenceTaskName"] == "dynamicfanouttask_join"
    join_id = conductor.wf(wid)["tasks"][4]["taskId"]
    child = conductor.child(wid, "xdt1")
    assert conductor.statuses(child) == [("integration_task_1", "SCHEDULED")]

    conductor.complete("integration_task_10")
    parent(conductor, wid, "COMPLETED", "COMPLETED", "IN_PROGRESS", "COMPLETED", "IN_PROGRESS")
    conductor.complete("integration_task_1")
    assert conductor.statuses(child) == [("integration_task_1", "COMPLETED"), ("integration_task_2", "SCHEDULED")]
    conductor.fail("integration_task_2", "failure")
    conductor.decide(wid)
    assert conductor.wf(child)["status"] == "FAILED"
    assert conductor.wf(wid)["status"] == "FAILED"
    parent(conductor, wid, "COMPLETED", "COMPLETED", "FAILED", "COMPLETED", "CANCELED")

    conductor.call("post", f"/workflow/{wid}/retry", params={"resumeSubworkflowTasks": True})
    assert conductor.wf(wid)["status"] == "RUNNING"
    parent(conductor, wid, "COMPLETED", "COMPLETED", "IN_PROGRESS", "COMPLETED", "IN_PROGRESS")
    assert conductor.wf(wid)["tasks"][4]["taskId"] == join_id
    assert conductor.child(wid, "xdt1") == child
    assert conductor.wf(child)["status"] == "RUNNING"
    assert conductor.statuses(child) == [("integration_task_1", "COMPLETED"), ("integration_task_2", "FAILED"),
                                         ("integration_task_2", "SCHEDULED")]
    conductor.decide(wid)
    parent(conductor, wid, "COMPLETED", "COMPLETED", "IN_PROGRESS", "COMPLETED", "IN_PROGRESS")
    conductor.complete("integration_task_2")
    assert conductor.statuses(child)[3] == ("integration_task_3", "SCHEDULED")
    conductor.complete("integration_task_3")
    assert conductor.wf(child)["status"] == "COMPLETED"
    conductor.decide(wid)
    assert conductor.statuses(wid) == list(zip(PARENT_TASKS + ["integration_task_4"], [
        "COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED", "SCHEDULED"]))
    conductor.complete("integration_task_4")
    assert conductor.wf(wid)["status"] == "COMPLETED"
    assert [s for _, s in conductor.statuses(wid)] == ["COMPLETED"] * 6
