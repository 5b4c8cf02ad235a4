"""/api/workflow: start (by request, by name, inline definition), read, status, pause,
resume, terminate, remove, decide, correlation look-ups and running lists, with
Conductor's answers (docs/conductor-notes.md §1.2, §3, §9)."""
from __future__ import annotations

import re
import uuid

import pytest

from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def error(resp, status):
    assert resp.status_code == status, (resp.status_code, resp.content)
    body = resp.json()
    assert body["status"] == status
    return body


@pytest.fixture
def flow(api):
    """A registered two-step workflow ``a -> b`` (task types ``<name>_a``/``<name>_b``)."""
    name = unique("wf")
    ta, tb = f"{name}_a", f"{name}_b"
    api.register_task_defs(task_def(ta), task_def(tb))
    api.register_workflow(workflow_def(name, [
        simple_task(ta, "a", {"x": "${workflow.input.x}"}),
        simple_task(tb, "b", {"fromA": "${a.output.value}"}),
    ], outputParameters={"result": "${b.output.r}"}))
    return {"name": name, "a": ta, "b": tb}


def run_to_completion(api, flow, wf_id):
    api.complete(api.poll_one(flow["a"]), {"value": 1})
    api.complete(api.poll_one(flow["b"]), {"r": "done"})
    assert api.workflow(wf_id)["status"] == "COMPLETED"


# --- start -------------------------------------------------------------------------------------------

def test_start_answers_the_id_as_text_and_decides_at_once(api, flow):
    resp = api.post("/workflow", {"name": flow["name"], "version": 1, "correlationId": "c-1",
                                  "input": {"x": 42}, "priority": 7, "idempotencyStrategy": "FAIL"})
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/plain")
    wf_id = resp.content.decode()
    assert UUID_RE.match(wf_id), wf_id
    wf = api.workflow(wf_id)
    assert wf["workflowId"] == wf_id
    assert wf["status"] == "RUNNING"
    assert wf["workflowName"] == flow["name"]
    assert wf["workflowVersion"] == 1
    assert wf["input"] == {"x": 42}
    assert wf["correlationId"] == "c-1"
    assert wf["priority"] == 7
    assert isinstance(wf["createTime"], int) and wf["createTime"] > 1_600_000_000_000
    assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("a", "SCHEDULED")]
    task = wf["tasks"][0]
    assert task["inputData"] == {"x": 42}
    assert task["taskDefName"] == flow["a"]
    assert task["taskType"] == flow["a"]  # SimpleTaskMapper: a worker task's taskType is its name
    assert task["workflowInstanceId"] == wf_id
    assert task["workflowPriority"] == 7
    assert task["correlationId"] == "c-1"


def test_start_without_input_key_uses_an_empty_input(api, flow):
    wf_id = api.ok(api.post("/workflow", {"name": flow["name"]})).content.decode()
    assert api.workflow(wf_id)["input"] == {}


def test_start_with_null_input_is_400(api, flow):
    body = error(api.post("/workflow", {"name": flow["name"], "input": None}), 400)
    assert body["message"] == "NULL input passed when starting workflow"


def test_start_without_name_is_400(api):
    body = error(api.post("/workflow", {"input": {}}), 400)
    assert "Workflow name cannot be null or empty" in [e["message"] for e in body["validationErrors"]]


def test_start_unknown_workflow_is_404(api):
    body = error(api.post("/workflow", {"name": "nope_wf", "input": {}}), 404)
    assert body["message"] == "No such workflow defined. name=nope_wf, version=null"
    body = error(api.post("/workflow", {"name": "nope_wf", "version": 3, "input": {}}), 404)
    assert body["message"] == "No such workflow defined. name=nope_wf, version=3"


def test_start_a_given_version(api, flow):
    api.register_workflow(workflow_def(flow["name"], [simple_task(flow["b"], "only_b")], version=2))
    latest = api.start(flow["name"])
    v1 = api.start(flow["name"], version=1)
    assert api.workflow(latest)["workflowVersion"] == 2
    assert api.workflow(latest)["tasks"][0]["referenceTaskName"] == "only_b"
    assert api.workflow(v1)["workflowVersion"] == 1


def test_start_with_inline_definition_runs_it_without_registering_it(api):
    name = unique("inline")
    ttype = unique("inline_task")
    definition = workflow_def(name, [simple_task(ttype, "only", {"v": "${workflow.input.v}"})],
                              outputParameters={"got": "${only.output.o}"})
    wf_id = api.start(name, {"v": "x"}, version=1, workflowDef=definition)
    wf = api.workflow(wf_id)
    assert wf["workflowName"] == name
    assert wf["tasks"][0]["inputData"] == {"v": "x"}
    assert api.get(f"/metadata/workflow/{name}").status_code == 404
    task = api.poll_one(ttype)
    api.complete(task, {"o": 5})
    wf = api.workflow(wf_id)
    assert wf["status"] == "COMPLETED"
    assert wf["output"] == {"got": 5}


def test_start_with_an_invalid_inline_definition_is_400(api):
    body = error(api.post("/workflow", {"name": "bad", "input": {}, "workflowDef": {"name": "bad", "tasks": []}}), 400)
    assert "WorkflowTask list cannot be empty" in [e["message"] for e in body["validationErrors"]]


def test_input_template_fills_absent_input_keys(api):
    name = unique("tmpl")
    ttype = unique("t")
    api.register_workflow(workflow_def(name, [simple_task(ttype, "a", {"x": "${workflow.input.x}",
                                                                        "y": "${workflow.input.y}"})],
                                       inputTemplate={"x": "dx", "y": "dy"}))
    wf = api.workflow(api.start(name, {"y": "given"}))
    assert wf["input"] == {"x": "dx", "y": "given"}
    assert wf["tasks"][0]["inputData"] == {"x": "dx", "y": "given"}


def test_start_by_name_with_query_parameters(api, flow):
    api.register_workflow(workflow_def(flow["name"], [simple_task(flow["b"], "only_b")], version=2))
    resp = api.post(f"/workflow/{flow['name']}", {"x": 3},
                    params={"version": 1, "correlationId": "corr-7", "priority": 12})
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/plain")
    wf = api.workflow(resp.content.decode())
    assert (wf["workflowVersion"], wf["correlationId"], wf["priority"], wf["input"]) == (1, "corr-7", 12, {"x": 3})
    assert wf["tasks"][0]["inputData"] == {"x": 3}


def test_start_by_name_defaults_to_the_latest_version(api, flow):
    api.register_workflow(workflow_def(flow["name"], [simple_task(flow["b"], "only_b")], version=2))
    wf_id = api.ok(api.post(f"/workflow/{flow['name']}", {})).content.decode()
    wf = api.workflow(wf_id)
    assert wf["workflowVersion"] == 2
    assert wf["priority"] == 0
    assert wf["input"] == {}


def test_start_by_unknown_name_is_404(api, flow):
    body = error(api.post("/workflow/never_registered_wf", {}), 404)
    assert body["message"] == "No such workflow found by name: never_registered_wf, version: null"
    body = error(api.post(f"/workflow/{flow['name']}", {}, params={"version": 9}), 404)
    assert body["message"] == f"No such workflow found by name: {flow['name']}, version: 9"


@pytest.mark.parametrize("priority, message", [(100, "99 is the maximum priority value"),
                                               (-1, "0 is the minimum priority value")])
def test_start_by_name_priority_out_of_range_is_400(api, flow, priority, message):
    body = error(api.post(f"/workflow/{flow['name']}", {}, params={"priority": priority}), 400)
    assert message in str(body)
    assert api.ok(api.get(f"/workflow/running/{flow['name']}")).json() == []


def test_start_request_priority_out_of_range_is_400(api, flow):
    error(api.post("/workflow", {"name": flow["name"], "input": {}, "priority": 100}), 400)
    assert api.ok(api.get(f"/workflow/running/{flow['name']}")).json() == []


def test_higher_priority_workflows_are_served_first(api, flow):
    low = api.start(flow["name"], priority=1)
    high = api.start(flow["name"], priority=90)
    mid = api.start(flow["name"], priority=40)
    order = [api.poll_one(flow["a"])["workflowInstanceId"] for _ in range(3)]
    assert order == [high, mid, low]


# --- read --------------------------------------------------------------------------------------------

def test_get_workflow_includes_tasks_by_default(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    wf = api.ok(api.get(f"/workflow/{wf_id}")).json()
    assert len(wf["tasks"]) == 1
    assert api.workflow(wf_id, include_tasks=True)["tasks"] == wf["tasks"]


def test_get_workflow_without_tasks(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    wf = api.workflow(wf_id, include_tasks=False)
    assert wf["tasks"] == []
    assert wf["workflowId"] == wf_id
    assert wf["status"] == "RUNNING"


def test_get_unknown_workflow_is_404(api):
    missing = str(uuid.uuid4())
    body = error(api.get(f"/workflow/{missing}"), 404)
    assert body["message"] == f"No such workflow found by id: {missing}"


def test_completed_workflow_has_output_and_end_time(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    run_to_completion(api, flow, wf_id)
    wf = api.workflow(wf_id)
    assert wf["output"] == {"result": "done"}
    assert wf["endTime"] >= wf["createTime"] > 0
    assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("a", "COMPLETED"), ("b", "COMPLETED")]
    assert wf["tasks"][1]["inputData"] == {"fromA": 1}


def test_status_endpoint(api, flow):
    wf_id = api.start(flow["name"], {"x": 1}, correlationId="corr-s")
    status = api.ok(api.get(f"/workflow/{wf_id}/status")).json()
    assert status == {"workflowId": wf_id, "correlationId": "corr-s", "status": "RUNNING"}
    run_to_completion(api, flow, wf_id)
    status = api.ok(api.get(f"/workflow/{wf_id}/status", {"includeOutput": True, "includeVariables": False})).json()
    assert status == {"workflowId": wf_id, "correlationId": "corr-s", "status": "COMPLETED",
                      "output": {"result": "done"}}
    status = api.ok(api.get(f"/workflow/{wf_id}/status", {"includeVariables": True})).json()
    assert status["variables"] == {}
    assert "output" not in status


def test_status_of_unknown_workflow_is_404(api):
    body = error(api.get("/workflow/unknown-id/status"), 404)
    assert body["message"] == "No such workflow found by id: unknown-id"


# --- pause / resume -----------------------------------------------------------------------------------

def test_pause_stops_scheduling_and_resume_continues(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    resp = api.put(f"/workflow/{wf_id}/pause")
    assert resp.status_code == 200 and resp.content == b""
    assert api.workflow(wf_id)["status"] == "PAUSED"
    assert api.put(f"/workflow/{wf_id}/pause").status_code == 200  # already paused: no-op
    # a dispatched task may still finish, but nothing new is scheduled
    api.complete(api.poll_one(flow["a"]), {"value": 9})
    wf = api.workflow(wf_id)
    assert wf["status"] == "PAUSED"
    assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("a", "COMPLETED")]
    assert api.poll(flow["b"]) == []
    resp = api.put(f"/workflow/{wf_id}/resume")
    assert resp.status_code == 200 and resp.content == b""
    wf = api.workflow(wf_id)
    assert wf["status"] == "RUNNING"
    assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("a", "COMPLETED"), ("b", "SCHEDULED")]
    assert wf["tasks"][1]["inputData"] == {"fromA": 9}
    assert wf["lastRetriedTime"] > 0


def test_a_failure_while_paused_is_retried_on_resume(api, flow):
    api.register_task_defs(task_def(flow["a"], retryCount=1, retryDelaySeconds=0))
    wf_id = api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    api.ok(api.put(f"/workflow/{wf_id}/pause"))
    api.ok(api.update(task, "FAILED", reasonForIncompletion="while paused"))
    wf = api.workflow(wf_id)
    assert wf["status"] == "PAUSED"
    assert [(t["status"], t["retryCount"]) for t in wf["tasks"]] == [("FAILED", 0)]
    assert api.poll(flow["a"]) == []
    api.ok(api.put(f"/workflow/{wf_id}/resume"))
    wf = api.workflow(wf_id)
    assert wf["status"] == "RUNNING"
    assert [(t["status"], t["retryCount"]) for t in wf["tasks"]] == [("FAILED", 0), ("SCHEDULED", 1)]


def test_resume_of_a_running_workflow_is_409(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    body = error(api.put(f"/workflow/{wf_id}/resume"), 409)
    assert body["message"] == f"The workflow {wf_id} is not PAUSED so cannot resume. Current status is RUNNING"


def test_pause_of_an_ended_workflow_is_409(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    run_to_completion(api, flow, wf_id)
    body = error(api.put(f"/workflow/{wf_id}/pause"), 409)
    assert body["message"] == f"Workflow {flow['name']}.1/{wf_id} has ended, status cannot be updated."


def test_pause_of_unknown_workflow_is_404(api):
    body = error(api.put("/workflow/unknown-wf/pause"), 404)
    assert body["message"] == "No such workflow found by id: unknown-wf"


# --- terminate -----------------------------------------------------------------------------------------

def test_terminate_cancels_pending_tasks_and_stores_the_reason(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    resp = api.delete(f"/workflow/{wf_id}", params={"reason": "stop it", "triggerFailureWorkflow": False})
    assert resp.status_code == 200 and resp.content == b""
    wf = api.workflow(wf_id)
    assert wf["status"] == "TERMINATED"
    assert wf["reasonForIncompletion"] == "stop it"
    assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("a", "CANCELED")]
    assert wf["endTime"] > 0
    assert api.poll(flow["a"]) == []


def test_terminate_cancels_an_in_progress_task_and_its_late_result_is_ignored(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    api.ok(api.delete(f"/workflow/{wf_id}", params={"reason": "bye"}))
    resp = api.update(task, "COMPLETED", {"late": True})
    assert resp.status_code == 200
    wf = api.workflow(wf_id)
    assert wf["status"] == "TERMINATED"
    assert wf["tasks"][0]["status"] == "CANCELED"
    assert wf["tasks"][0]["outputData"] == {}
    assert len(wf["tasks"]) == 1


def test_terminate_twice_is_a_no_op(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    api.ok(api.delete(f"/workflow/{wf_id}", params={"reason": "first"}))
    assert api.delete(f"/workflow/{wf_id}", params={"reason": "second"}).status_code == 200
    assert api.workflow(wf_id)["reasonForIncompletion"] == "first"


def test_terminate_a_completed_workflow_is_409(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    run_to_completion(api, flow, wf_id)
    body = error(api.delete(f"/workflow/{wf_id}"), 409)
    assert body["message"] == "Cannot terminate a COMPLETED workflow."
    assert api.workflow(wf_id)["status"] == "COMPLETED"


def test_terminate_a_failed_workflow_makes_it_terminated(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    api.ok(api.update(api.poll_one(flow["a"]), "FAILED", reasonForIncompletion="broken"))
    assert api.workflow(wf_id)["status"] == "FAILED"
    api.ok(api.delete(f"/workflow/{wf_id}", params={"reason": "cleanup"}))
    assert api.workflow(wf_id)["status"] == "TERMINATED"


def test_terminate_unknown_workflow_is_404(api):
    body = error(api.delete("/workflow/unknown-wf"), 404)
    assert body["message"] == "No such workflow found by id: unknown-wf"


# --- remove ----------------------------------------------------------------------------------------------

def test_remove_running_workflow_with_archive_default_is_400(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    body = error(api.delete(f"/workflow/{wf_id}/remove"), 400)
    assert body["message"] == f"Cannot archive workflow: {wf_id} with status: RUNNING"
    assert api.workflow(wf_id)["status"] == "RUNNING"


def test_remove_without_archive_deletes_it(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    task_id = api.workflow(wf_id)["tasks"][0]["taskId"]
    resp = api.delete(f"/workflow/{wf_id}/remove", params={"archiveWorkflow": False})
    assert resp.status_code == 200 and resp.content == b""
    assert api.get(f"/workflow/{wf_id}").status_code == 404
    assert api.get(f"/tasks/{task_id}").status_code == 404
    assert api.poll(flow["a"]) == []


def test_remove_a_terminal_workflow_with_archive(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    api.ok(api.delete(f"/workflow/{wf_id}"))
    assert api.delete(f"/workflow/{wf_id}/remove", params={"archiveWorkflow": True}).status_code == 200


def test_remove_unknown_workflow_is_404(api):
    body = error(api.delete("/workflow/unknown-wf/remove"), 404)
    assert body["message"] == "No such workflow found by id: unknown-wf"


# --- decide ------------------------------------------------------------------------------------------------

def test_decide_endpoint(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    resp = api.put(f"/workflow/decide/{wf_id}")
    assert resp.status_code == 200 and resp.content == b""
    assert len(api.workflow(wf_id)["tasks"]) == 1


# --- correlation and running lists --------------------------------------------------------------------------

def test_correlated_lookup(api, flow):
    running = api.start(flow["name"], correlationId="c1")
    closed = api.start(flow["name"], correlationId="c1")
    other = api.start(flow["name"], correlationId="c2")
    api.ok(api.delete(f"/workflow/{closed}"))
    name = flow["name"]
    found = api.ok(api.get(f"/workflow/{name}/correlated/c1")).json()
    assert [w["workflowId"] for w in found] == [running]
    assert found[0]["tasks"] == []  # includeTasks defaults to false
    found = api.ok(api.get(f"/workflow/{name}/correlated/c1", {"includeClosed": True, "includeTasks": True})).json()
    assert {w["workflowId"] for w in found} == {running, closed}
    assert all(len(w["tasks"]) == 1 for w in found)
    assert api.ok(api.get(f"/workflow/{name}/correlated/none")).json() == []
    assert other not in {w["workflowId"] for w in found}


def test_correlated_batch_lookup(api, flow):
    a = api.start(flow["name"], correlationId="k1")
    b = api.start(flow["name"], correlationId="k2")
    closed = api.start(flow["name"], correlationId="k2")
    api.ok(api.delete(f"/workflow/{closed}"))
    resp = api.post(f"/workflow/{flow['name']}/correlated", ["k1", "k2", "k3"], params={"includeClosed": False})
    body = api.ok(resp).json()
    assert set(body) == {"k1", "k2", "k3"}
    assert [w["workflowId"] for w in body["k1"]] == [a]
    assert [w["workflowId"] for w in body["k2"]] == [b]
    assert body["k3"] == []
    body = api.ok(api.post(f"/workflow/{flow['name']}/correlated", ["k2"],
                           params={"includeClosed": True, "includeTasks": True})).json()
    assert {w["workflowId"] for w in body["k2"]} == {b, closed}


def test_correlated_search_over_several_workflow_names(api, flow):
    """``POST /workflow/correlated/batch`` (the TypeScript SDK's ``getByCorrelationIds``)."""
    other = unique("other")
    api.register_workflow(workflow_def(other, [simple_task(flow["a"], "a")]))
    a = api.start(flow["name"], correlationId="m1")
    b = api.start(other, correlationId="m1")
    closed = api.start(other, correlationId="m2")
    api.ok(api.delete(f"/workflow/{closed}"))
    body = api.ok(api.post("/workflow/correlated/batch", {"workflowNames": [flow["name"], other],
                                                          "correlationIds": ["m1", "m2"]})).json()
    assert {w["workflowId"] for w in body["m1"]} == {a, b}
    assert body["m2"] == []
    body = api.ok(api.post("/workflow/correlated/batch", {"workflowNames": [other], "correlationIds": ["m2"]},
                           params={"includeClosed": True})).json()
    assert [w["workflowId"] for w in body["m2"]] == [closed]
    for bad in ({"workflowNames": other, "correlationIds": ["m1"]}, {"workflowNames": [other]}, ["m1"]):
        resp = api.post("/workflow/correlated/batch", bad)
        assert resp.status_code == 400, (bad, resp.content)


def test_running_list_defaults_to_version_one(api, flow):
    api.register_workflow(workflow_def(flow["name"], [simple_task(flow["b"], "only_b")], version=2))
    v1 = api.start(flow["name"], version=1)
    v1_done = api.start(flow["name"], version=1)
    api.ok(api.delete(f"/workflow/{v1_done}"))
    v2 = api.start(flow["name"], version=2)
    assert api.ok(api.get(f"/workflow/running/{flow['name']}")).json() == [v1]
    assert api.ok(api.get(f"/workflow/running/{flow['name']}", {"version": 2})).json() == [v2]
    assert api.ok(api.get("/workflow/running/nothing_running")).json() == []


def test_running_list_by_time_range(api, flow, clock):
    first = api.start(flow["name"])
    t_first = api.workflow(first)["createTime"]
    clock.advance(10)
    second = api.start(flow["name"])
    t_second = api.workflow(second)["createTime"]
    assert t_second - t_first == 10_000
    found = api.ok(api.get(f"/workflow/running/{flow['name']}",
                           {"startTime": t_first + 5000, "endTime": t_second + 5000})).json()
    assert found == [second]
    found = api.ok(api.get(f"/workflow/running/{flow['name']}", {"startTime": t_first, "endTime": t_second})).json()
    assert sorted(found) == sorted([first, second])


# --- transport ------------------------------------------------------------------------------------------------

def test_no_trailing_slash_redirects(api, flow):
    resp = api.post("/workflow", {"name": flow["name"], "input": {}})
    assert resp.status_code == 200
    for path in ("/workflow/", "/metadata/taskdefs/", "/tasks/"):
        resp = api.post(path, {"name": flow["name"], "input": {}})
        assert resp.status_code not in (301, 302, 307, 308), (path, resp.status_code)


def test_bodiless_writes_accept_an_empty_json_object_or_nothing(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    assert api.put(f"/workflow/{wf_id}/pause", {}).status_code == 200
    assert api.put(f"/workflow/{wf_id}/resume", raw="").status_code == 200
    assert api.put(f"/workflow/decide/{wf_id}", raw="").status_code == 200
    assert api.delete(f"/workflow/{wf_id}", {}, params={"reason": "r"}).status_code == 200
    assert api.delete(f"/workflow/{wf_id}/remove", raw="").status_code == 200


# --- timers kept by the sweeper ------------------------------------------------------------------------------

def test_workflow_timeout_is_enforced_by_the_sweeper(api, flow, clock):
    """The SDK registers timeoutSeconds 60 / TIME_OUT_WF by default."""
    from apps.engine import sweeper

    name = unique("timed")
    api.register_workflow(workflow_def(name, [simple_task(flow["a"], "a")], timeoutSeconds=60,
                                       timeoutPolicy="TIME_OUT_WF"))
    wf_id = api.start(name)
    clock.advance(59)
    sweeper.sweep_once()
    assert api.workflow(wf_id)["status"] == "RUNNING"
    clock.advance(2)
    sweeper.sweep_once()
    wf = api.workflow(wf_id)
    assert wf["status"] == "TIMED_OUT"
    assert wf["reasonForIncompletion"] == ("Workflow timed out after 61 seconds. Timeout configured as 60 seconds. "
                                           "Timeout policy configured to TIME_OUT_WF")
    assert wf["tasks"][0]["status"] == "CANCELED"


def test_workflow_timeout_alert_only_keeps_running(api, flow, clock):
    from apps.engine import sweeper

    name = unique("alert")
    api.register_workflow(workflow_def(name, [simple_task(flow["a"], "a")], timeoutSeconds=60,
                                       timeoutPolicy="ALERT_ONLY"))
    wf_id = api.start(name)
    clock.advance(3600)
    sweeper.sweep_once()
    assert api.workflow(wf_id)["status"] == "RUNNING"


def test_response_timeout_of_a_polled_task_is_enforced_by_the_sweeper(api, clock):
    """Nobody decides the workflow after the poll: the sweeper must still notice the silent
    worker (docs/conductor-notes.md §4.3)."""
    from apps.engine import sweeper

    name = unique("rt")
    ttype = f"{name}_t"
    api.register_task_defs(task_def(ttype, responseTimeoutSeconds=5, retryCount=1, retryDelaySeconds=0))
    api.register_workflow(workflow_def(name, [simple_task(ttype, "t")]))
    wf_id = api.start(name)
    clock.advance(2)
    task = api.poll_one(ttype)
    for _ in range(8):  # 4 s after the poll: still within the response timeout
        clock.advance(0.5)
        sweeper.sweep_once()
    assert api.task(task["taskId"])["status"] == "IN_PROGRESS"
    for _ in range(6):
        clock.advance(0.5)
        sweeper.sweep_once()
    wf = api.workflow(wf_id)
    assert [(t["status"], t["retryCount"]) for t in wf["tasks"]] == [("TIMED_OUT", 0), ("SCHEDULED", 1)]
    assert wf["tasks"][0]["reasonForIncompletion"] == \
        f"responseTimeout: 5 exceeded for the taskId: {task['taskId']} with Task Definition: {ttype}"


# --- failure workflow ---------------------------------------------------------------------------------------------

@pytest.fixture
def with_failure_workflow(api, flow):
    handler = unique("on_failure")
    handler_task = f"{handler}_t"
    api.register_workflow(workflow_def(handler, [simple_task(handler_task, "h", {"why": "${workflow.input.reason}"})]))
    name = unique("main")
    api.register_workflow(workflow_def(name, [simple_task(flow["a"], "a")], failureWorkflow=handler))
    return {"name": name, "handler": handler, "handler_task": handler_task}


def test_task_failure_starts_the_failure_workflow(api, flow, with_failure_workflow):
    names = with_failure_workflow
    wf_id = api.start(names["name"], {"order": 7}, correlationId="corr-f")
    task = api.poll_one(flow["a"])
    api.ok(api.update(task, "FAILED", reasonForIncompletion="card declined"))
    wf = api.workflow(wf_id)
    assert wf["status"] == "FAILED"
    failure_id = wf["output"]["conductor.failure_workflow"]
    failure = api.workflow(failure_id)
    assert failure["workflowName"] == names["handler"]
    assert failure["correlationId"] == "corr-f"
    assert failure["input"]["workflowId"] == wf_id
    assert failure["input"]["order"] == 7
    assert failure["input"]["failureStatus"] == "FAILED"
    assert failure["input"]["failureTaskId"] == task["taskId"]
    assert failure["input"]["reason"] == wf["reasonForIncompletion"]
    assert failure["tasks"][0]["inputData"] == {"why": wf["reasonForIncompletion"]}


def test_api_terminate_does_not_start_the_failure_workflow(api, flow, with_failure_workflow):
    names = with_failure_workflow
    wf_id = api.start(names["name"], {})
    api.ok(api.delete(f"/workflow/{wf_id}", params={"reason": "operator"}))
    wf = api.workflow(wf_id)
    assert wf["status"] == "TERMINATED"
    assert "conductor.failure_workflow" not in (wf.get("output") or {})
    assert api.ok(api.get(f"/workflow/running/{names['handler']}")).json() == []
    assert api.poll(names["handler_task"]) == []


def test_a_running_execution_keeps_the_definition_it_started_with(api, flow):
    """Zero-downtime rollout: re-registering the same version with other tasks, or a
    newer version, changes nothing for an execution already running (it runs on its
    snapshot); a start without a version takes the latest."""
    name = flow["name"]
    old_id = api.start(name, {"x": 1}, version=1)
    other = f"{name}_other"
    api.register_task_defs(task_def(other))
    changed = workflow_def(name, [simple_task(other, "other")])
    api.register_workflow(changed)                                  # version 1 overwritten
    api.register_workflow({**changed, "version": 2})
    api.complete(api.poll_one(flow["a"]), {"value": 1})
    api.complete(api.poll_one(flow["b"]), {"r": "done"})
    old = api.workflow(old_id)
    assert old["status"] == "COMPLETED", old["status"]
    assert [t["referenceTaskName"] for t in old["tasks"]] == ["a", "b"]
    assert old["output"] == {"result": "done"}
    assert api.poll(other) == []                                    # nothing of the new shape was scheduled
    new_id = api.start(name, {"x": 2})
    new = api.workflow(new_id)
    assert new["workflowVersion"] == 2 and [t["referenceTaskName"] for t in new["tasks"]] == ["other"]
