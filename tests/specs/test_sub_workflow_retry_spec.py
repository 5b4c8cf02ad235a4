"""SubWorkflowRetrySpec: a 3-level tree (root -> mid-level -> leaf, the names given by
``${workflow.input.subwf}`` expressions) fails because integration_task_2 (retryCount 0)
fails in the leaf. A retry at each level, with and without ``resumeSubworkflowTasks``:
without it a retried SUB_WORKFLOW task starts a NEW child; with it (or on the leaf) the
failed leaf task is retried in place and every ancestor goes back to RUNNING.
The failed tree is the ``tree`` fixture (conftest), the spec's ``setup``."""
from __future__ import annotations

import pytest



def retried_pair(conductor, wid: str) -> tuple[dict, dict]:
    tasks = conductor.wf(wid)["tasks"]
    assert tasks[1]["status"] == "FAILED" and tasks[1]["retried"]
    assert tasks[2]["retriedTaskId"] == tasks[1]["taskId"]
    return tasks[1], tasks[2]


def assert_resumed_in_place(conductor, root, mid, leaf):
    """The leaf's failed task is retried; the mid-level and root SUB_WORKFLOW tasks are
    IN_PROGRESS again (same tasks, same children); completing it completes all three."""
    assert conductor.wf(leaf)["status"] == "RUNNING"
    _, retry = retried_pair(conductor, leaf)
    assert retry["status"] == "SCHEDULED"
    for wid in (mid, root):
        conductor.decide(wid)
        assert conductor.wf(wid)["status"] == "RUNNING"
        assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS")]
    assert conductor.child(root, "t2") == mid and conductor.child(mid, "t2") == leaf
    conductor.complete("integration_task_2", {"op": "task1.done"})
    assert conductor.wf(leaf)["status"] == "COMPLETED"
    _, retry = retried_pair(conductor, leaf)
    assert retry["status"] == "COMPLETED"
    for wid in (mid, root):
        conductor.decide(wid)
        assert conductor.wf(wid)["status"] == "COMPLETED"
        assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "COMPLETED")]


def complete_new_leaf(conductor, parent: str, old_leaf: str, ref_index: int) -> str:
    new_leaf = conductor.wf(parent)["tasks"][ref_index]["subWorkflowId"]
    assert new_leaf and new_leaf != old_leaf
    assert conductor.statuses(new_leaf) == [("integration_task_1", "SCHEDULED")]
    conductor.complete("integration_task_1", {"op": "task1.done"})
    conductor.complete("integration_task_2", {"op": "task2.done"})
    assert conductor.wf(new_leaf)["status"] == "COMPLETED"
    return new_leaf


def test_retry_on_the_root(conductor, tree):
    """"Test retry on the root": a NEW mid-level workflow, which spawns a NEW leaf."""
    root, mid, leaf = tree
    conductor.call("post", f"/workflow/{root}/retry")
    conductor.complete("integration_task_1", {"op1": "task1.done"})  # the new mid-level's first task
    assert conductor.wf(root)["status"] == "RUNNING"
    _, retry = retried_pair(conductor, root)
    assert retry["status"] == "IN_PROGRESS"
    new_mid = retry["subWorkflowId"]
    assert new_mid != mid
    assert conductor.statuses(new_mid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS")]
    complete_new_leaf(conductor, new_mid, leaf, 1)
    conductor.decide(new_mid)
    conductor.decide(root)
    assert conductor.wf(new_mid)["status"] == "COMPLETED"
    assert conductor.wf(root)["status"] == "COMPLETED"
    _, retry = retried_pair(conductor, root)
    assert retry["status"] == "COMPLETED"


def test_retry_on_the_root_with_resume(conductor, tree):
    root, mid, leaf = tree
    conductor.call("post", f"/workflow/{root}/retry", params={"resumeSubworkflowTasks": True})
    assert_resumed_in_place(conductor, root, mid, leaf)


def test_retry_on_the_mid_level(conductor, tree):
    """"Test retry on the mid-level": a NEW leaf; the root goes back to RUNNING."""
    root, mid, leaf = tree
    conductor.call("post", f"/workflow/{mid}/retry")
    assert conductor.wf(mid)["status"] == "RUNNING"
    _, retry = retried_pair(conductor, mid)
    assert retry["status"] == "IN_PROGRESS"
    assert conductor.wf(root)["status"] == "RUNNING"
    assert conductor.statuses(root)[1] == ("SUB_WORKFLOW", "IN_PROGRESS")
    complete_new_leaf(conductor, mid, leaf, 2)
    conductor.decide(mid)
    conductor.decide(root)
    assert conductor.wf(mid)["status"] == "COMPLETED"
    _, retry = retried_pair(conductor, mid)
    assert retry["status"] == "COMPLETED"
    assert conductor.wf(root)["status"] == "COMPLETED"
    assert conductor.statuses(root) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "COMPLETED")]


def test_retry_on_the_mid_level_with_resume(conductor, tree):
    root, mid, leaf = tree
    conductor.call("post", f"/workflow/{mid}/retry", params={"resumeSubworkflowTasks": True})
    assert_resumed_in_place(conductor, root, mid, leaf)


@pytest.mark.parametrize("resume", [False, True], ids=["plain", "resume"])
def test_retry_on_the_leaf(conductor, tree, resume):
    root, mid, leaf = tree
    conductor.call("post", f"/workflow/{leaf}/retry", params={"resumeSubworkflowTasks": resume})
    assert_resumed_in_place(conductor, root, mid, leaf)
