"""ForkJoinSpec, permissive flows. A permissive task that fails inside a fork neither fails
the workflow nor cancels its sibling branches; the JOIN fails once every task it waits on
has ended (Join.execute: isPermissive && !allTasksTerminal keeps waiting), and a workflow
retry re-schedules the failed branches.

Difference in timing only: Conductor's JOIN is an async system task, so its specs show it
IN_PROGRESS until ``asyncSystemTaskExecutor.execute(joinTask)``; ours is evaluated by the
decider in the same decision, so the states the spec reaches after that call are checked
right after the last branch ends."""
from __future__ import annotations

from tests.specs.definitions import FORK_JOIN_PERMISSIVE_WF, FORK_JOIN_PERMISSIVE_WF_2


def test_permissive_failure_in_a_fork_fails_the_join_after_the_other_branch(conductor):
    """"Test a simple workflow with fork join permissive failure flow" (integration_task_1
    retryCount 0)."""
    conductor.task_defs("integration_task_1", retryCount=0, timeoutSeconds=0)
    conductor.task_defs("integration_task_2", "integration_task_3")
    conductor.workflow_defs(FORK_JOIN_PERMISSIVE_WF)
    wid = conductor.start("FanInOutPermissiveTest", {}, correlationId="fanoutTest")
    wf = conductor.wf(wid)
    assert conductor.statuses(wid) == [("FORK", "COMPLETED"), ("integration_task_1", "SCHEDULED"),
                                       ("integration_task_2", "SCHEDULED"), ("JOIN", "IN_PROGRESS")]
    assert wf["tasks"][1]["workflowTask"]["permissive"] and wf["tasks"][2]["workflowTask"]["permissive"]
    conductor.fail("integration_task_1", "Failed...")
    assert conductor.wf(wid)["status"] == "RUNNING"
    assert conductor.statuses(wid) == [("FORK", "COMPLETED"), ("integration_task_1", "FAILED"),
                                       ("integration_task_2", "SCHEDULED"), ("JOIN", "IN_PROGRESS")]
    conductor.complete("integration_task_2")
    conductor.decide(wid)
    assert conductor.wf(wid)["status"] == "FAILED"
    assert conductor.statuses(wid) == [("FORK", "COMPLETED"), ("integration_task_1", "FAILED"),
                                       ("integration_task_2", "COMPLETED"), ("JOIN", "FAILED")]


def test_retrying_a_failed_permissive_fork_join_workflow(conductor):
    """"Test retrying a failed permissive fork join workflow" (the integration_p_task_0_RT_*
    definitions have retryCount 0)."""
    conductor.task_defs(*(f"integration_p_task_0_RT_{i}" for i in range(1, 5)), retryCount=0)
    conductor.workflow_defs(FORK_JOIN_PERMISSIVE_WF_2)
    wid = conductor.start("FanInOutPermissiveTest_2", {}, correlationId="fanoutTest")
    assert [s for _, s in conductor.statuses(wid)] == ["COMPLETED", "SCHEDULED", "SCHEDULED", "IN_PROGRESS"]
    conductor.complete("integration_p_task_0_RT_1")
    assert [s for _, s in conductor.statuses(wid)] == ["COMPLETED", "COMPLETED", "SCHEDULED", "IN_PROGRESS",
                                                        "SCHEDULED"]
    conductor.fail("integration_p_task_0_RT_2", "Failed....")
    conductor.decide(wid)
    # not failed until the permissive forked tasks have all ended
    assert conductor.wf(wid)["status"] == "RUNNING"
    assert [s for _, s in conductor.statuses(wid)] == ["COMPLETED", "COMPLETED", "FAILED", "IN_PROGRESS",
                                                        "SCHEDULED"]
    conductor.fail("integration_p_task_0_RT_3", "Failed....")
    conductor.decide(wid)
    assert conductor.wf(wid)["status"] == "FAILED"
    assert [s for _, s in conductor.statuses(wid)] == ["COMPLETED", "COMPLETED", "FAILED", "FAILED", "FAILED"]

    conductor.call("post", f"/workflow/{wid}/retry")
    assert conductor.wf(wid)["status"] == "RUNNING"
    assert [s for _, s in conductor.statuses(wid)] == ["COMPLETED", "COMPLETED", "FAILED", "IN_PROGRESS", "FAILED",
                                                        "SCHEDULED", "SCHEDULED"]
    conductor.complete("integration_p_task_0_RT_3")
    conductor.complete("integration_p_task_0_RT_2")
    conductor.decide(wid)
    conductor.complete("integration_p_task_0_RT_4")
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert [s for _, s in conductor.statuses(wid)] == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED", "FAILED",
                                                        "COMPLETED", "COMPLETED", "COMPLETED"]


def test_permissive_sub_workflow_forks_terminated_by_the_user(conductor):
    """"Test fork join with permissive sub workflow forks terminated by the user": the
    JOIN is CANCELED and the parent TERMINATED, not FAILED."""
    from tests.specs.definitions import SUB_WORKFLOW, WORKFLOW_FORK_JOIN_PERMISSIVE_SW

    conductor.task_defs("simple_task_in_sub_wf", retryCount=0)
    conductor.workflow_defs(SUB_WORKFLOW, WORKFLOW_FORK_JOIN_PERMISSIVE_SW)
    wid = conductor.start("integration_test_fork_join_permissive_sw", {"param1": "p1 value", "param2": "p2 value"})
    assert conductor.statuses(wid) == [("FORK", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS"),
                                       ("SUB_WORKFLOW", "IN_PROGRESS"), ("JOIN", "IN_PROGRESS")]
    children = [conductor.child(wid, "st1"), conductor.child(wid, "st2")]
    assert [conductor.wf(c)["status"] for c in children] == ["RUNNING", "RUNNING"]
    for child in children:
        conductor.call("delete", f"/workflow/{child}", params={"reason": "terminated by the user"})
    assert [conductor.wf(c)["status"] for c in children] == ["TERMINATED", "TERMINATED"]
    conductor.decide(wid)
    assert conductor.wf(wid)["status"] == "TERMINATED"
    assert conductor.statuses(wid) == [("FORK", "COMPLETED"), ("SUB_WORKFLOW", "CANCELED"),
                                       ("SUB_WORKFLOW", "CANCELED"), ("JOIN", "CANCELED")]


def test_fork_join_with_optional_sub_workflows_that_fail(conductor):
    """"Test fork join with sub workflows containing optional tasks": both optional
    SUB_WORKFLOWs' children fail, each ends COMPLETED_WITH_ERRORS, so does the JOIN, and the
    workflow COMPLETES; re-running one child afterwards leaves the COMPLETED parent as it is."""
    from tests.specs.definitions import SUB_WORKFLOW, WORKFLOW_FORK_JOIN_OPTIONAL_SW

    conductor.task_defs("simple_task_in_sub_wf", retryCount=0)
    conductor.workflow_defs(SUB_WORKFLOW, WORKFLOW_FORK_JOIN_OPTIONAL_SW)
    wid = conductor.start("integration_test_fork_join_optional_sw", {"param1": "p1 value", "param2": "p2 value"})
    assert conductor.statuses(wid) == [("FORK", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS"),
                                       ("SUB_WORKFLOW", "IN_PROGRESS"), ("JOIN", "IN_PROGRESS")]
    assert conductor.task(wid, "fanouttask_join")["inputData"]["joinOn"] == ["st1", "st2"]
    children = [conductor.child(wid, "st1"), conductor.child(wid, "st2")]
    for child in children:
        assert conductor.statuses(child) == [("simple_task_in_sub_wf", "SCHEDULED")]
    conductor.fail("simple_task_in_sub_wf", "Failed....")
    conductor.fail("simple_task_in_sub_wf", "Failed....")
    for child in children:
        assert conductor.wf(child)["status"] == "FAILED"
        assert conductor.statuses(child) == [("simple_task_in_sub_wf", "FAILED")]
    conductor.decide(wid)
    done = [("FORK", "COMPLETED"), ("SUB_WORKFLOW", "COMPLETED_WITH_ERRORS"),
            ("SUB_WORKFLOW", "COMPLETED_WITH_ERRORS"), ("JOIN", "COMPLETED_WITH_ERRORS")]
    assert conductor.wf(wid)["status"] == "COMPLETED"
    assert conductor.statuses(wid) == done

    conductor.call("post", f"/workflow/{children[0]}/rerun", {"reRunFromWorkflowId": children[0]})
    assert conductor.wf(children[0])["status"] == "RUNNING"
    assert conductor.statuses(children[0]) == [("simple_task_in_sub_wf", "SCHEDULED")]
    assert conductor.wf(wid)["status"] == "COMPLETED"
    assert conductor.statuses(wid) == done
