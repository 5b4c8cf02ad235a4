"""SubWorkflowRestartSpec and SubWorkflowRerunSpec on the failed 3-level tree (``tree``
fixture): restart, rerun, and rerun from a task id, at the mid level and at the leaf. The
restarted/rerun workflow keeps its id; at the mid level it spawns a NEW leaf; every
ancestor goes back to RUNNING with its SUB_WORKFLOW task IN_PROGRESS, and completes when
the tree below completes."""
from __future__ import annotations

import pytest


def reopen(conductor, how: str, wid: str) -> None:
    if how == "restart":
        conductor.call("post", f"/workflow/{wid}/restart")
    elif how == "rerun":
        conductor.call("post", f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid})
    else:  # rerun from its first task
        first = conductor.wf(wid)["tasks"][0]["taskId"]
        conductor.call("post", f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid, "reRunFromTaskId": first})


def assert_parents_running(conductor, *wids: str) -> None:
    for wid in wids:
        assert conductor.wf(wid)["status"] == "RUNNING"
        assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS")]


def assert_all_completed(conductor, *wids: str) -> None:
    for wid in wids:
        conductor.decide(wid)
        assert conductor.wf(wid)["status"] == "COMPLETED"
        assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "COMPLETED")]


@pytest.mark.parametrize("how", ["restart", "rerun", "rerun_from_task"])
def test_on_the_mid_level(conductor, tree, how):
    """"Test restart on the mid-level", "Test rerun on the mid-level", "... with taskId"."""
    root, mid, leaf = tree
    reopen(conductor, how, mid)
    assert conductor.wf(mid)["status"] == "RUNNING"
    assert conductor.statuses(mid) == [("integration_task_1", "SCHEDULED")]
    assert_parents_running(conductor, root)
    conductor.complete("integration_task_1", {"op": "task1.done"})
    new_leaf = conductor.wf(mid)["tasks"][1]["subWorkflowId"]
    assert new_leaf and new_leaf != leaf
    assert conductor.statuses(new_leaf) == [("integration_task_1", "SCHEDULED")]
    conductor.complete("integration_task_1", {"op": "task1.done"})
    conductor.complete("integration_task_2", {"op": "task1.done"})
    assert conductor.wf(new_leaf)["status"] == "COMPLETED"
    assert conductor.statuses(new_leaf) == [("integration_task_1", "COMPLETED"), ("integration_task_2", "COMPLETED")]
    assert_all_completed(conductor, mid, root)


@pytest.mark.parametrize("how", ["restart", "rerun", "rerun_from_task"])
def test_on_the_leaf(conductor, tree, how):
    """"Test restart on the leaf", "Test rerun on the leaf-level", "... with taskId": the
    leaf runs again under the same id and its parents follow."""
    root, mid, leaf = tree
    reopen(conductor, how, leaf)
    assert conductor.wf(leaf)["status"] == "RUNNING"
    assert conductor.statuses(leaf) == [("integration_task_1", "SCHEDULED")]
    assert_parents_running(conductor, mid, root)
    conductor.complete("integration_task_1", {"op": "task1.done"})
    conductor.complete("integration_task_2", {"op": "task1.done"})
    assert conductor.wf(leaf)["status"] == "COMPLETED"
    assert conductor.child(mid, "t2") == leaf
    assert_all_completed(conductor, mid, root)
