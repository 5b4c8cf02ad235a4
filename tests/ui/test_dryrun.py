"""Dry runs on the confirmation pages of retry, rerun, restart and skip (issue #13): the
page says what will be scheduled again, which sub-workflows are touched and which side
effects may repeat, changes nothing, and the action then does what the dry run said."""
from __future__ import annotations

import re

import pytest

from apps.engine import executor, queue, selectors
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.ui import dryrun
from tests.ui.conftest import register_chain

pytestmark = pytest.mark.django_db


def failed_at_b(name: str) -> str:
    """A chain a -> b where the worker completed a and failed b."""
    wf_id = executor.workflow_start(name=name, version=None, input={"x": 1})
    a = queue.task_poll(task_type=f"{name}_a", worker_id="w")[0]
    executor.task_update(task_result={"workflowInstanceId": wf_id, "taskId": a.task_id, "status": "COMPLETED"})
    b = queue.task_poll(task_type=f"{name}_b", worker_id="w")[0]
    executor.task_update(task_result={"workflowInstanceId": wf_id, "taskId": b.task_id, "status": "FAILED",
                                      "reasonForIncompletion": "card declined"})
    assert WorkflowExecution.objects.get(pk=wf_id).status == "FAILED"
    return wf_id


def snapshot(wf_id: str):
    return (WorkflowExecution.objects.filter(pk=wf_id).values_list("status", "update_time").first(),
            sorted(TaskExecution.objects.filter(workflow_id=wf_id).values_list("task_id", "status", "update_time")))


def test_retry_dry_run_then_retry(operator_client):
    name = register_chain()
    wf_id = failed_at_b(name)
    before = snapshot(wf_id)
    html = operator_client.get(f"/execution/{wf_id}/action/retry").content.decode()
    assert snapshot(wf_id) == before  # a dry run changes nothing
    again = re.search(r'id="dry-run-again".*?</table>', html, re.S).group(0)
    assert ">b<" in again and ">a<" not in again
    effects = re.search(r'<ul id="dry-run-effects">.*?</ul>', html, re.S).group(0)
    assert ">b<" in effects and ">a<" not in effects  # b started at a worker: it may repeat
    assert 'id="dry-run-subs">None touched.' in html and "dry-run-removed" not in html

    operator_client.post(f"/execution/{wf_id}/action/retry")
    wf = selectors.workflow_get(workflow_id=wf_id)
    scheduled = [t.reference_task_name for t in wf.tasks if t.status == "SCHEDULED"]
    assert scheduled == ["b"] and [t.reference_task_name for t in wf.tasks].count("a") == 1


def test_restart_and_rerun_dry_runs_count_what_is_removed(operator_client):
    name = register_chain()
    wf_id = failed_at_b(name)
    wf = selectors.workflow_get(workflow_id=wf_id)
    restart = dryrun.plan("restart", wf)
    assert restart["removed"] == 2 and [t["ref"] for t in restart["again"]] == ["a", "b"]
    assert [t["ref"] for t in restart["side_effects"]] == ["a", "b"] and restart["refused"] is None
    latest = dryrun.plan("restart_latest", wf, latest_version=3)
    assert "v1 → v3" in latest["summary"]

    a = next(t for t in wf.tasks if t.reference_task_name == "a")
    html = operator_client.get(f"/execution/{wf_id}/task-action/rerun", {"task": a.task_id}).content.decode()
    assert 'id="dry-run-removed">1 task execution will be removed' in html
    operator_client.post(f"/execution/{wf_id}/task-action/rerun?task={a.task_id}", {"task_input": "{}"})
    after = selectors.workflow_get(workflow_id=wf_id)
    assert [(t.reference_task_name, t.status) for t in after.tasks] == [("a", "SCHEDULED")]


def test_refusals_are_shown_before_the_click(operator_client):
    name = register_chain()
    wf_id = executor.workflow_start(name=name, version=None, input={"x": 1})
    html = operator_client.get(f"/execution/{wf_id}/action/restart").content.decode()
    assert f"The engine will refuse: Workflow: {wf_id} is not in terminal state, unable to restart." in html
    # skip: b has not been scheduled yet, a has
    ok = operator_client.get(f"/execution/{wf_id}/task-action/skip", {"ref": "b"}).content.decode()
    assert "b is marked SKIPPED" in ok and "dry-run-refused" not in ok
    wf = selectors.workflow_get(workflow_id=wf_id)
    assert dryrun.plan("skip", wf, ref="a")["refused"] == "The task referenced a has already been processed, cannot be skipped"


def test_sub_workflows_touched_by_a_retry(db):
    from tests.search.builders import make_task, make_workflow

    parent = make_workflow("p", status="FAILED")
    make_task(parent, task_def_name="child", task_type="SUB_WORKFLOW", status="FAILED", ref="child_ref")
    TaskExecution.objects.filter(workflow=parent).update(sub_workflow_id="child-1")
    wf = selectors.workflow_get(workflow_id=parent.workflow_id)
    resume = dryrun.plan("retry_resume", wf)
    assert resume["sub_workflows"] == [{"ref": "child_ref", "child": "child-1",
                                        "what": "the failed child execution is retried (resumed)"}]
    assert dryrun.plan("retry", wf)["sub_workflows"][0]["what"] == "a new child execution is started"


# --- definition version diff ----------------------------------------------------------------

def test_definition_diff_text_graph_overlay_and_links(viewer_client):
    from apps.metadata import services
    from apps.ui import selectors as ui_selectors

    name = register_chain(refs=("a", "b", "c"))
    v1 = services.workflow_def_get(name=name, version=1)
    tasks = [dict(t) for t in v1["tasks"] if t["taskReferenceName"] != "c"]
    tasks[1] = {**tasks[1], "inputParameters": {"x": "${workflow.input.y}"}}
    tasks.append({**tasks[0], "taskReferenceName": "d"})
    services.workflow_def_register(workflow_def={**v1, "version": 2, "tasks": tasks})
    wf_id = executor.workflow_start(name=name, version=1, input={"x": 1})

    diff = ui_selectors.definition_diff(v1, services.workflow_def_get(name=name, version=2))
    assert (diff["added"], diff["removed"], diff["changed"]) == (["d"], ["c"], ["b"])
    assert any(line["kind"] == "add" and "workflow.input.y" in line["text"] for line in diff["lines"])
    assert ui_selectors.definition_diff(v1, v1)["lines"] == []

    html = viewer_client.get(f"/definitions/{name}/diff").content.decode()
    assert f"v1 → v2" in html and "<code>d</code>" in html and "<code>c</code>" in html
    assert '"diff": "added"' in html and '"diff": "changed"' in html and '"diff": "removed"' in html
    # reachable from the definition page and from an execution that ran on v1
    assert f"/definitions/{name}/diff?from=1&amp;to=2" in viewer_client.get(f"/definitions/{name}/2").content.decode()
    page = viewer_client.get(f"/execution/{wf_id}").content.decode()
    assert 'id="newer-definition"' in page and "latest is v2" in page
    assert viewer_client.get(f"/definitions/{name}/diff", {"from": 7}).status_code == 404
    for key in ("from", "to"):  # not a version number: a 400 naming the parameter (was a 404)
        resp = viewer_client.get(f"/definitions/{name}/diff", {key: "a"})
        assert resp.status_code == 400 and f"Query parameter &#x27;{key}&#x27;" in resp.content.decode()


def test_diff_overlay_draws_removed_tasks_with_their_old_edges():
    from apps.ui import selectors as ui_selectors
    from apps.ui.graph import diff_overlay

    def wf(refs):
        return {"name": "w", "version": 1, "tasks": [{"name": f"t_{r}", "taskReferenceName": r, "type": "SIMPLE"}
                                                     for r in refs]}
    old, new = wf(["a", "c", "b"]), wf(["a", "b", "d"])
    overlay = diff_overlay(old, new, ui_selectors.definition_diff(old, new))
    marks = {n["ref"]: n.get("diff") for n in overlay["nodes"] if n.get("ref")}
    assert marks == {"a": None, "b": None, "c": "removed", "d": "added"}
    removed_edges = {(e["source"], e["target"]) for e in overlay["edges"] if e.get("diff") == "removed"}
    c_id = next(n["id"] for n in overlay["nodes"] if n.get("ref") == "c")
    ids = {n["id"]: n.get("ref") for n in overlay["nodes"]}
    assert {(ids[s], ids[t]) for s, t in removed_edges} == {("a", "c"), ("c", "b")} and c_id in ids
    assert len({e["id"] for e in overlay["edges"]}) == len(overlay["edges"])
    # nothing removed: the plain graph of the new version
    same = diff_overlay(new, new, ui_selectors.definition_diff(new, new))
    assert not any(n.get("diff") for n in same["nodes"]) and not any(e.get("diff") for e in same["edges"])


# --- compare two executions ------------------------------------------------------------------

def test_compare_a_failed_run_with_the_last_good_one(viewer_client):
    name = register_chain()
    good = executor.workflow_start(name=name, version=None, input={"x": 1})
    for ref in ("a", "b"):
        t = queue.task_poll(task_type=f"{name}_{ref}", worker_id="w")[0]
        executor.task_update(task_result={"workflowInstanceId": good, "taskId": t.task_id, "status": "COMPLETED",
                                          "outputData": {"ref": ref}})
    bad = failed_at_b(name)
    html = viewer_client.get("/compare", {"a": bad}).content.decode()
    assert f'value="{good}"' in html  # B defaults to the last good run
    assert 'First difference: <a href="#row-a"><code>a</code></a>' in html  # a's output differs ({} vs {"ref": "a"})
    row_b = re.search(r'<tr id="row-b".*?</tr>', html, re.S).group(0)
    assert "st-FAILED" in row_b and "st-COMPLETED" in row_b and 'class="warn"' in row_b
    wf_a, wf_b = selectors.workflow_get(workflow_id=bad), selectors.workflow_get(workflow_id=good)
    from apps.ui import selectors as ui_selectors
    cmp = ui_selectors.compare_executions(wf_a, wf_b)
    assert [(r["ref"], r["same_status"]) for r in cmp["rows"]] == [("a", True), ("b", False)]
    assert ui_selectors.compare_executions(wf_b, wf_b)["first_difference"] is None
    page = viewer_client.get(f"/execution/{bad}").content.decode()
    assert f'href="/compare?a={bad}"' in page
    assert viewer_client.get("/compare", {"a": "nope"}).status_code == 404


# --- task search page -------------------------------------------------------------------------

def test_task_search_by_type_status_and_worker(viewer_client):
    name = register_chain()
    wf_id = failed_at_b(name)
    html = viewer_client.get("/tasks/", {"type": f"{name}_b", "status": "FAILED", "worker": "w"}).content.decode()
    rows = re.findall(r'<tr data-task-id="([^"]+)">', html)
    b = next(t for t in selectors.workflow_get(workflow_id=wf_id).tasks if t.reference_task_name == "b")
    assert rows == [b.task_id] and "card declined" in html
    assert f'href="/execution/{wf_id}?node=b&amp;task={b.task_id}"' in html
    assert re.findall(r'<tr data-task-id=', viewer_client.get("/tasks/", {"type": f"{name}_b", "status": "COMPLETED"})
                      .content.decode()) == []
    assert len(re.findall(r'<tr data-task-id=', viewer_client.get("/tasks/", {"workflow": name}).content.decode())) == 2
