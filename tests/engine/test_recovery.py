"""Restart, retry, rerun, skip and reset callbacks with Conductor's answers
(docs/conductor-notes.md §4.6-4.7; cases 13, 22)."""
from __future__ import annotations

from tests.factories import task_def, unique, workflow_def


def simple(name, ref=None, **kw):
    return {"name": name, "taskReferenceName": ref or name, "type": "SIMPLE", **kw}


def by_ref(wf: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for t in wf["tasks"]:
        out.setdefault(t["referenceTaskName"], []).append(t)
    return out


def run_to_failure(api, name, steps):
    """Start ``name``, complete the first steps, fail the last one; return the workflow id."""
    wid = api.start(name, {"x": 1})
    for task_name, status in steps:
        t = api.poll_one(task_name)
        api.ok(api.update(t, status, {"from": task_name}, reasonForIncompletion="broke" if status != "COMPLETED" else None))
    return wid


def test_retry_and_restart_rules(api):
    a, b = unique("a"), unique("b")
    api.register_task_defs(task_def(a), task_def(b))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(a, "a"), simple(b, "b")]))
    wid = api.start(name)
    # running: retry is 404, restart and rerun are 409
    r = api.post(f"/workflow/{wid}/retry")
    assert r.status_code == 404 and r.json()["message"] == "Workflow is still running.  status=RUNNING"
    r = api.post(f"/workflow/{wid}/restart")
    assert r.status_code == 409 and r.json()["message"] == f"Workflow: {wid} is not in terminal state, unable to restart."
    r = api.post(f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid})
    assert r.status_code == 409 and "unable to rerun" in r.json()["message"]

    api.complete(api.poll_one(a), {"v": 1})
    api.ok(api.update(api.poll_one(b), "FAILED", reasonForIncompletion="broke"))
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED"

    r = api.post(f"/workflow/{wid}/retry")
    assert r.status_code == 204 and r.content == b""
    wf = api.workflow(wid)
    assert wf["status"] == "RUNNING" and "reasonForIncompletion" not in wf and wf["lastRetriedTime"] > 0
    attempts = by_ref(wf)
    assert [t["status"] for t in attempts["a"]] == ["COMPLETED"]           # not repeated
    assert [(t["status"], t["retryCount"]) for t in attempts["b"]] == [("FAILED", 0), ("SCHEDULED", 1)]
    assert attempts["b"][1]["retriedTaskId"] == attempts["b"][0]["taskId"]
    api.complete(api.poll_one(b))
    assert api.workflow(wid)["status"] == "COMPLETED"

    r = api.post(f"/workflow/{wid}/retry")
    assert r.status_code == 409
    assert r.json()["message"] == ("There are no retryable tasks! Use restart if you want to attempt entire "
                                   "workflow execution again.")

    r = api.post(f"/workflow/{wid}/restart")
    assert r.status_code == 204
    wf = api.workflow(wid)
    assert wf["status"] == "RUNNING" and [t["referenceTaskName"] for t in wf["tasks"]] == ["a"]
    assert wf["input"] == {}


def test_restart_with_latest_definitions(api):
    a, b = unique("a"), unique("b")
    api.register_task_defs(task_def(a), task_def(b))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(a, "a")]))
    wid = api.start(name)
    api.ok(api.delete(f"/workflow/{wid}", params={"reason": "stop"}))
    api.register_workflow(workflow_def(name, [simple(b, "b")], version=2))
    api.ok(api.post(f"/workflow/{wid}/restart", params={"useLatestDefinitions": True}), 204)
    wf = api.workflow(wid)
    assert wf["workflowVersion"] == 2 and [t["referenceTaskName"] for t in wf["tasks"]] == ["b"]


def test_rerun_from_task(api):  # cases/22
    s1, s2, s3 = unique("step1"), unique("step2"), unique("step3")
    api.register_task_defs(task_def(s1), task_def(s2), task_def(s3))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(s1, "t1"), simple(s2, "t2", inputParameters={"x": "${workflow.input.x}"}),
                                              simple(s3, "t3")]))
    wid = run_to_failure(api, name, [(s1, "COMPLETED"), (s2, "COMPLETED"), (s3, "FAILED")])
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED"
    t2 = by_ref(wf)["t2"][0]
    r = api.post(f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid, "reRunFromTaskId": t2["taskId"], "taskInput": {"x": 2}})
    assert r.status_code == 200 and r.content.decode() == wid and r["Content-Type"].startswith("text/plain")
    wf = api.workflow(wid)
    assert wf["status"] == "RUNNING" and "reasonForIncompletion" not in wf
    assert [t["referenceTaskName"] for t in wf["tasks"]] == ["t1", "t2"]
    task = api.poll_one(s2)
    assert task["taskId"] == t2["taskId"] and task["inputData"] == {"x": 2}
    api.complete(task, {"b": 2})
    api.complete(api.poll_one(s3), {"c": 3})
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    refs = by_ref(wf)
    assert {k: len(v) for k, v in refs.items()} == {"t1": 1, "t2": 1, "t3": 1}
    assert refs["t1"][0]["outputData"] == {"from": s1} and refs["t2"][0]["outputData"] == {"b": 2}
    r = api.post(f"/workflow/{wid}/rerun", {"reRunFromTaskId": "no-such-task"})
    assert r.status_code == 400 and r.json()["message"] == "Task no-such-task not found"


def test_skip_task(api):
    a, b, c = unique("a"), unique("b"), unique("c")
    api.register_task_defs(task_def(a), task_def(b), task_def(c))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(a, "a"), simple(b, "b"), simple(c, "c", inputParameters={"v": "${b.output.v}"})]))
    wid = api.start(name)
    # the SDK sends the request as a Python repr in the query string
    api.ok(api.put(f"/workflow/{wid}/skiptask/b", params={"skipTaskRequest": "{'taskInput': {}, 'taskOutput': {'v': 7}}"}))
    r = api.put(f"/workflow/{wid}/skiptask/a")
    assert r.status_code == 409 and r.json()["message"] == "The task referenced a has already been processed, cannot be skipped"
    r = api.put(f"/workflow/{wid}/skiptask/zz")
    assert r.status_code == 409 and "does not exist in the WorkflowDefinition" in r.json()["message"]
    api.complete(api.poll_one(a))
    task = api.poll_one(c)
    assert task["inputData"] == {"v": 7}
    api.complete(task)
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("a", "COMPLETED"), ("b", "SKIPPED"), ("c", "COMPLETED")]


def test_reset_callbacks(api):
    a = unique("a")
    api.register_task_defs(task_def(a))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(a, "a")]))
    wid = api.start(name)
    task = api.poll_one(a)
    api.ok(api.update(task, "IN_PROGRESS", callbackAfterSeconds=3600))
    assert api.poll(a) == []
    api.ok(api.post(f"/workflow/{wid}/resetcallbacks"), 204)
    again = api.poll_one(a)
    assert again["taskId"] == task["taskId"] and again["pollCount"] == 2


def test_sub_workflow_output_failure_and_terminate_cascade(api):  # cases/14, 16
    leaf, after = unique("leaf"), unique("after")
    api.register_task_defs(task_def(leaf), task_def(after))
    grandchild, child, parent = unique("gc"), unique("child"), unique("parent")
    api.register_workflow(workflow_def(grandchild, [simple(leaf, "leaf")], outputParameters={"r": "${leaf.output.r}"}))
    api.register_workflow(workflow_def(child, [{"name": "to_gc", "taskReferenceName": "sub2", "type": "SUB_WORKFLOW",
                                                "subWorkflowParam": {"name": grandchild, "version": 1}}]))
    api.register_workflow(workflow_def(parent, [{"name": "to_child", "taskReferenceName": "sub1", "type": "SUB_WORKFLOW",
                                                 "subWorkflowParam": {"name": child}},
                                                simple(after, "after", inputParameters={"r": "${sub1.output.r}"})]))
    # happy path: the grandchild's output reaches the parent through two levels
    wid = api.start(parent, correlationId="corr-1")
    task = api.poll_one(leaf)
    gc_wf = api.workflow(task["workflowInstanceId"])
    assert gc_wf["correlationId"] == "corr-1" and gc_wf["parentWorkflowId"]
    api.complete(task, {"r": 42})
    nxt = api.poll_one(after)
    assert nxt["inputData"] == {"r": 42}
    api.complete(nxt)
    assert api.workflow(wid)["status"] == "COMPLETED"

    # terminate cascades to every level; a late update of the leaf is ignored
    wid = api.start(parent)
    task = api.poll_one(leaf)
    api.ok(api.delete(f"/workflow/{wid}", params={"reason": "operator stop"}))
    wf = api.workflow(wid)
    assert wf["status"] == "TERMINATED" and wf["reasonForIncompletion"] == "operator stop"
    sub1 = by_ref(wf)["sub1"][0]
    assert sub1["status"] == "CANCELED"
    child_wf = api.workflow(sub1["subWorkflowId"])
    assert child_wf["status"] == "TERMINATED" and by_ref(child_wf)["sub2"][0]["status"] == "CANCELED"
    gc_wf = api.workflow(task["workflowInstanceId"])
    assert gc_wf["status"] == "TERMINATED" and by_ref(gc_wf)["leaf"][0]["status"] == "CANCELED"
    api.ok(api.update(task, "COMPLETED", {"late": True}))
    assert by_ref(api.workflow(task["workflowInstanceId"]))["leaf"][0]["status"] == "CANCELED"


def test_optional_sub_workflow_failure_completes_parent(api):  # cases/16
    boom, after = unique("boom"), unique("after")
    api.register_task_defs(task_def(boom), task_def(after))
    child, parent = unique("child"), unique("parent")
    api.register_workflow(workflow_def(child, [simple(boom, "boom")]))
    api.register_workflow(workflow_def(parent, [{"name": "to_child", "taskReferenceName": "sub", "type": "SUB_WORKFLOW",
                                                 "optional": True, "subWorkflowParam": {"name": child, "version": 1}},
                                                simple(after, "after")]))
    wid = api.start(parent)
    api.ok(api.update(api.poll_one(boom), "FAILED", reasonForIncompletion="child exploded"))
    api.complete(api.poll_one(after))
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    sub = by_ref(wf)["sub"][0]
    assert sub["status"] == "COMPLETED_WITH_ERRORS" and "child exploded" in sub["reasonForIncompletion"]
    assert api.workflow(sub["subWorkflowId"])["status"] == "FAILED"


def test_retry_child_revives_parent(api):  # cases/13
    a, b, after = unique("child_a"), unique("child_b"), unique("after")
    api.register_task_defs(task_def(a), task_def(b), task_def(after))
    child, parent = unique("child"), unique("parent")
    api.register_workflow(workflow_def(child, [simple(a, "a"), simple(b, "b")]))
    api.register_workflow(workflow_def(parent, [{"name": "run_child", "taskReferenceName": "sub", "type": "SUB_WORKFLOW",
                                                 "subWorkflowParam": {"name": child, "version": 1}},
                                                simple(after, "after")]))
    wid = api.start(parent)
    api.complete(api.poll_one(a))
    api.ok(api.update(api.poll_one(b), "FAILED", reasonForIncompletion="child step failed"))
    wf = api.workflow(wid)
    sub = by_ref(wf)["sub"][0]
    assert wf["status"] == "FAILED" and sub["status"] == "FAILED"
    child_id = sub["subWorkflowId"]
    api.ok(api.post(f"/workflow/{child_id}/retry"), 204)
    wf = api.workflow(wid)
    assert wf["status"] == "RUNNING" and by_ref(wf)["sub"][0]["status"] == "IN_PROGRESS"
    api.complete(api.poll_one(b), {"fixed": True})
    api.complete(api.poll_one(after))
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED" and by_ref(wf)["sub"][0]["status"] == "COMPLETED"
    child_wf = api.workflow(child_id)
    assert child_wf["status"] == "COMPLETED"
    names = [t["taskDefName"] for t in child_wf["tasks"]]
    assert names.count(a) == 1 and names.count(b) == 2

    # the same in one call from the parent with resumeSubworkflowTasks
    wid = api.start(parent)
    api.complete(api.poll_one(a))
    api.ok(api.update(api.poll_one(b), "FAILED", reasonForIncompletion="again"))
    child_id = by_ref(api.workflow(wid))["sub"][0]["subWorkflowId"]
    api.ok(api.post(f"/workflow/{wid}/retry", params={"resumeSubworkflowTasks": True}), 204)
    wf = api.workflow(wid)
    assert wf["status"] == "RUNNING" and len(by_ref(wf)["sub"]) == 1
    api.complete(api.poll_one(b))
    api.complete(api.poll_one(after))
    assert api.workflow(wid)["status"] == "COMPLETED"
    assert api.workflow(child_id)["status"] == "COMPLETED"


def test_failure_workflow_started_by_terminate_task_not_by_api(api):  # cases/25
    check, notify = unique("check_input"), unique("notify")
    api.register_task_defs(task_def(check), task_def(notify))
    main, on_failure = unique("main"), unique("on_failure")
    api.register_workflow(workflow_def(on_failure, [simple(notify, "notify", inputParameters={"why": "${workflow.input.reason}"})]))
    api.register_workflow(workflow_def(main, [simple(check, "check"),
                                              {"name": "bail", "taskReferenceName": "bail", "type": "TERMINATE",
                                               "inputParameters": {"terminationStatus": "FAILED", "terminationReason": "input rejected"}}],
                                       failureWorkflow=on_failure))
    wid = api.start(main, {"order": 7}, correlationId="c-25")
    api.complete(api.poll_one(check))
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED" and "input rejected" in wf["reasonForIncompletion"]
    failure_id = wf["output"]["conductor.failure_workflow"]
    task = api.poll_one(notify)
    assert task["workflowInstanceId"] == failure_id and task["inputData"] == {"why": "input rejected"}
    fwf = api.workflow(failure_id)
    assert fwf["correlationId"] == "c-25"
    assert fwf["input"]["workflowId"] == wid and fwf["input"]["failureStatus"] == "FAILED"
    assert fwf["input"]["order"] == 7 and fwf["input"]["failedWorkflow"]["workflowId"] == wid
    # API terminate does not start it
    wid2 = api.start(main)
    api.ok(api.delete(f"/workflow/{wid2}"))
    assert "conductor.failure_workflow" not in api.workflow(wid2)["output"]
    assert api.poll(notify) == []


def test_task_to_domain_prefers_a_domain_with_live_workers(api):
    t = unique("t")
    api.register_task_defs(task_def(t))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(t, "a"), simple(t, "b")]))
    wid = api.start(name, taskToDomain={"*": "blue,green"})
    # nobody polled either domain: the last one is used
    task = api.poll_one(t, domain="green")
    assert task["domain"] == "green"
    assert api.poll(t, domain="blue", worker_id="blue-worker") == []  # blue now has a live worker
    api.complete(task)
    assert api.poll_one(t, domain="blue")["referenceTaskName"] == "b"
    assert api.workflow(wid)["taskToDomain"] == {"*": "blue,green"}
