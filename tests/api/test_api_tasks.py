"""/api/tasks: polling, updates (v1, v2, by reference), callbacks, late updates, task
reads, logs, queue sizes and poll data (docs/conductor-notes.md §1.4, §9)."""
from __future__ import annotations

import pytest

from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db


def error(resp, status):
    assert resp.status_code == status, (resp.status_code, resp.content)
    body = resp.json()
    assert body["status"] == status
    return body


@pytest.fixture
def flow(api):
    """``a`` (type A) -> ``b`` (type B); A retries once after 2 s."""
    name = unique("wf")
    ta, tb = f"{name}_A", f"{name}_B"
    api.register_task_defs(task_def(ta, retryCount=1, retryDelaySeconds=2), task_def(tb))
    api.register_workflow(workflow_def(name, [simple_task(ta, "a", {"x": "${workflow.input.x}"}),
                                              simple_task(tb, "b", {"fromA": "${a.output.v}"})]))
    return {"name": name, "a": ta, "b": tb}


@pytest.fixture
def single(api):
    """A one-task workflow of type T (no retries)."""
    name = unique("one")
    ttype = f"{name}_T"
    api.register_task_defs(task_def(ttype))
    api.register_workflow(workflow_def(name, [simple_task(ttype, "t", {"n": "${workflow.input.n}"})]))
    return {"name": name, "t": ttype}


# --- batch poll ----------------------------------------------------------------------------------------

def test_batch_poll_empty_is_200_empty_list(api):
    resp = api.get(f"/tasks/poll/batch/{unique('empty')}", {"workerid": "w", "count": 5, "timeout": 100})
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("application/json")
    assert resp.json() == []


def test_batch_poll_hands_out_tasks_in_progress(api, single):
    ids = [api.start(single["name"], {"n": i}) for i in range(3)]
    before = api.workflow(ids[0])["tasks"][0]["scheduledTime"]
    tasks = api.poll(single["t"], count=2, worker_id="host-1")
    assert len(tasks) == 2
    for t in tasks:
        assert t["status"] == "IN_PROGRESS"
        assert t["workerId"] == "host-1"
        assert t["pollCount"] == 1
        assert t["startTime"] >= before > 0
        assert t["callbackAfterSeconds"] == 0
        assert t["taskDefName"] == single["t"]
        assert t["referenceTaskName"] == "t"
        assert t["workflowInstanceId"] in ids
        assert t["inputData"] == {"n": ids.index(t["workflowInstanceId"])}
        stored = api.task(t["taskId"])
        assert (stored["status"], stored["workerId"], stored["pollCount"]) == ("IN_PROGRESS", "host-1", 1)
    rest = api.poll(single["t"], count=10)
    assert len(rest) == 1
    assert {t["workflowInstanceId"] for t in tasks + rest} == set(ids)
    assert api.poll(single["t"], count=10) == []


def test_batch_poll_count_defaults_to_one(api, single):
    for _ in range(2):
        api.start(single["name"], {"n": 1})
    resp = api.get(f"/tasks/poll/batch/{single['t']}", {"workerid": "w"})
    assert resp.status_code == 200
    assert len(resp.json()) == 1


def test_batch_poll_timeout_over_five_seconds_is_400(api, single):
    api.start(single["name"], {"n": 1})
    body = error(api.get(f"/tasks/poll/batch/{single['t']}", {"workerid": "w", "count": 1, "timeout": 5001}), 400)
    assert body["message"] == "Long Poll Timeout value cannot be more than 5 seconds"
    assert api.poll(single["t"]) != []  # nothing was handed out by the refused poll


def test_domain_queues(api, single):
    wf_id = api.start(single["name"], {"n": 1}, taskToDomain={single["t"]: "blue"})
    wf = api.workflow(wf_id)
    assert wf["taskToDomain"] == {single["t"]: "blue"}
    assert wf["tasks"][0]["domain"] == "blue"
    assert api.poll(single["t"]) == []
    assert api.poll(single["t"], domain="green") == []
    task = api.poll_one(single["t"], domain="blue")
    assert task["workflowInstanceId"] == wf_id
    assert task["domain"] == "blue"


def test_star_domain_applies_to_all_tasks(api, single):
    wf_id = api.start(single["name"], {"n": 1}, taskToDomain={"*": "any"})
    assert api.poll(single["t"]) == []
    assert api.poll_one(single["t"], domain="any")["workflowInstanceId"] == wf_id


# --- single poll ----------------------------------------------------------------------------------------

def test_single_poll_empty_is_204(api):
    resp = api.get(f"/tasks/poll/{unique('nothing')}", {"workerid": "w"})
    assert resp.status_code == 204
    assert resp.content == b""


def test_single_poll_returns_one_task(api, single):
    wf_id = api.start(single["name"], {"n": 1})
    resp = api.get(f"/tasks/poll/{single['t']}", {"workerid": "solo"})
    assert resp.status_code == 200
    task = resp.json()
    assert isinstance(task, dict)
    assert (task["workflowInstanceId"], task["status"], task["workerId"]) == (wf_id, "IN_PROGRESS", "solo")
    assert api.get(f"/tasks/poll/{single['t']}", {"workerid": "solo"}).status_code == 204


# --- update (v1) ---------------------------------------------------------------------------------------------

def test_update_answers_the_task_id_as_text_and_decides(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    resp = api.update(task, "COMPLETED", {"v": "out"})
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/plain")
    assert resp.content.decode() == task["taskId"]
    wf = api.workflow(wf_id)
    a, b = wf["tasks"]
    assert (a["status"], a["outputData"], a["endTime"] > 0) == ("COMPLETED", {"v": "out"}, True)
    assert (b["referenceTaskName"], b["status"], b["inputData"]) == ("b", "SCHEDULED", {"fromA": "out"})


def test_output_data_is_replaced_not_merged(api, flow):
    api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    api.ok(api.update(task, "IN_PROGRESS", {"first": 1, "keep": "?"}))
    again = api.poll_one(flow["a"])
    api.complete(again, {"second": 2})
    assert api.task(task["taskId"])["outputData"] == {"second": 2}


def test_a_result_replaces_output_and_reason_even_when_absent(api, flow):
    """TaskResult.outputData defaults to an empty map and every update copies it, with
    reasonForIncompletion, onto the task (WorkflowExecutorOps.updateTask)."""
    api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    api.ok(api.update(task, "IN_PROGRESS", {"progress": 50}, reasonForIncompletion="waiting"))
    again = api.poll_one(flow["a"])
    api.ok(api.post("/tasks", {"workflowInstanceId": again["workflowInstanceId"], "taskId": again["taskId"],
                               "status": "COMPLETED", "workerId": "w"}))
    stored = api.task(task["taskId"])
    assert stored["status"] == "COMPLETED"
    assert stored["outputData"] == {}
    assert "reasonForIncompletion" not in stored


def test_reason_for_incompletion_is_cut_at_500_characters(api, single):
    """TaskResult.setReasonForIncompletion keeps the first 500 characters."""
    wf_id = api.start(single["name"], {"n": 1})
    task = api.poll_one(single["t"])
    reason = "r" * 450 + "s" * 150
    api.ok(api.update(task, "FAILED", reasonForIncompletion=reason))
    assert api.task(task["taskId"])["reasonForIncompletion"] == reason[:500]
    assert api.workflow(wf_id)["reasonForIncompletion"] == \
        f"Task {task['taskId']} failed with status: FAILED and reason: '{reason[:500]}'"


def test_failed_update_creates_a_retry_row(api, flow, clock):
    wf_id = api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    api.ok(api.update(task, "FAILED", reasonForIncompletion="oops"))
    wf = api.workflow(wf_id)
    assert wf["status"] == "RUNNING"
    first, retry = wf["tasks"]
    assert (first["status"], first["retried"], first["reasonForIncompletion"]) == ("FAILED", True, "oops")
    assert retry["taskId"] != first["taskId"]
    assert (retry["status"], retry["retryCount"], retry["retriedTaskId"]) == ("SCHEDULED", 1, first["taskId"])
    assert retry["referenceTaskName"] == "a"
    assert retry["inputData"] == {"x": 1}
    assert retry["startDelayInSeconds"] == 2
    assert api.poll(flow["a"]) == []  # retryDelaySeconds = 2
    clock.advance(2)
    again = api.poll_one(flow["a"])
    assert again["taskId"] == retry["taskId"]
    api.ok(api.update(again, "FAILED", reasonForIncompletion="still broken"))
    wf = api.workflow(wf_id)
    assert wf["status"] == "FAILED"
    assert wf["reasonForIncompletion"] == f"Task {retry['taskId']} failed with status: FAILED and reason: 'still broken'"


def test_terminal_error_fails_the_workflow_without_retry(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    api.ok(api.update(task, "FAILED_WITH_TERMINAL_ERROR", reasonForIncompletion="why"))
    wf = api.workflow(wf_id)
    assert wf["status"] == "FAILED"
    assert len(wf["tasks"]) == 1
    assert wf["tasks"][0]["status"] == "FAILED_WITH_TERMINAL_ERROR"
    assert wf["reasonForIncompletion"] == f"Task {task['taskId']} failed with status: FAILED and reason: 'why'"


def test_in_progress_with_callback_requeues_the_same_task_after_the_delay(api, flow, clock):
    wf_id = api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"], worker_id="w1")
    resp = api.update(task, "IN_PROGRESS", {"progress": 50}, callbackAfterSeconds=5)
    assert resp.status_code == 200 and resp.content.decode() == task["taskId"]
    stored = api.task(task["taskId"])
    assert stored["status"] == "SCHEDULED"
    assert stored["callbackAfterSeconds"] == 5
    assert stored["outputData"] == {"progress": 50}
    assert api.poll(flow["a"]) == []
    clock.advance(4.9)
    assert api.poll(flow["a"]) == []
    clock.advance(0.1)
    again = api.poll_one(flow["a"], worker_id="w2")
    assert again["taskId"] == task["taskId"]
    assert again["pollCount"] == 2
    assert again["retryCount"] == 0
    assert again["status"] == "IN_PROGRESS"
    assert again["workerId"] == "w2"
    assert again["startTime"] == task["startTime"]
    assert len(api.workflow(wf_id)["tasks"]) == 1


def test_in_progress_without_callback_is_pollable_at_once(api, flow):
    api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    api.ok(api.update(task, "IN_PROGRESS", {}))
    assert api.poll_one(flow["a"])["taskId"] == task["taskId"]


def test_extend_lease_keeps_the_task_in_progress_and_its_output(api, single, clock):
    api.register_task_defs(task_def(single["t"], responseTimeoutSeconds=10))
    wf_id = api.start(single["name"], {"n": 1})
    task = api.poll_one(single["t"])
    clock.advance(8)
    api.ok(api.post("/tasks", {"workflowInstanceId": wf_id, "taskId": task["taskId"], "status": "IN_PROGRESS",
                               "extendLease": True}))
    stored = api.task(task["taskId"])
    assert stored["status"] == "IN_PROGRESS"
    clock.advance(8)  # 16 s after the poll, 8 s after the lease extension
    api.ok(api.put(f"/workflow/decide/{wf_id}"))
    assert api.task(task["taskId"])["status"] == "IN_PROGRESS"
    clock.advance(3)
    api.ok(api.put(f"/workflow/decide/{wf_id}"))
    assert api.task(task["taskId"])["status"] == "TIMED_OUT"


def test_response_timeout_through_the_api(api, single, clock):
    api.register_task_defs(task_def(single["t"], responseTimeoutSeconds=3, retryCount=1, retryDelaySeconds=0))
    wf_id = api.start(single["name"], {"n": 1})
    task = api.poll_one(single["t"])
    clock.advance(3)
    api.ok(api.put(f"/workflow/decide/{wf_id}"))
    wf = api.workflow(wf_id)
    first, retry = wf["tasks"]
    assert first["status"] == "TIMED_OUT"
    assert first["reasonForIncompletion"] == \
        f"responseTimeout: 3 exceeded for the taskId: {task['taskId']} with Task Definition: {single['t']}"
    assert (retry["status"], retry["retryCount"]) == ("SCHEDULED", 1)
    # the silent worker's late answer is ignored
    assert api.update(task, "COMPLETED", {"late": True}).status_code == 200
    assert api.task(task["taskId"])["status"] == "TIMED_OUT"
    assert api.task(task["taskId"])["outputData"] == {}


def test_late_update_of_a_terminal_task_is_ignored(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    api.complete(task, {"v": "first"})
    before = api.workflow(wf_id)
    for status in ("COMPLETED", "FAILED", "FAILED_WITH_TERMINAL_ERROR", "IN_PROGRESS"):
        resp = api.update(task, status, {"v": "late"}, reasonForIncompletion="late")
        assert resp.status_code == 200
    after = api.workflow(wf_id)
    assert after["tasks"] == before["tasks"]
    assert after["status"] == "RUNNING"
    assert api.task(task["taskId"])["outputData"] == {"v": "first"}
    assert len([t for t in after["tasks"] if t["referenceTaskName"] == "b"]) == 1


def test_update_of_unknown_task_is_404(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    body = error(api.post("/tasks", {"workflowInstanceId": wf_id, "taskId": "no-such-task", "status": "COMPLETED"}),
                 404)
    assert body["message"] == "No such task found by id: no-such-task"
    # Conductor's updateTask loads the workflow before the task: an unknown workflow is named
    body = error(api.post("/tasks", {"workflowInstanceId": "no-such-wf", "taskId": "no-such-task",
                                     "status": "COMPLETED"}), 404)
    assert body["message"] == "No such workflow found by id: no-such-wf"


def test_update_without_ids_is_400(api):
    body = error(api.post("/tasks", {"status": "COMPLETED"}), 400)
    messages = {e["message"] for e in body["validationErrors"]}
    assert messages == {"Workflow Id cannot be null or empty", "Task ID cannot be null or empty"}


# --- update-v2 ----------------------------------------------------------------------------------------------

def test_update_v2_returns_the_next_task_of_the_same_type(api, single):
    first_wf = api.start(single["name"], {"n": 1})
    second_wf = api.start(single["name"], {"n": 2})
    task = api.poll_one(single["t"], worker_id="runner")
    resp = api.post("/tasks/update-v2", {"workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"],
                                         "workerId": "runner", "status": "COMPLETED", "outputData": {"o": 1},
                                         "extendLease": False})
    assert resp.status_code == 200
    nxt = resp.json()
    assert nxt["taskId"] != task["taskId"]
    assert {task["workflowInstanceId"], nxt["workflowInstanceId"]} == {first_wf, second_wf}
    assert (nxt["status"], nxt["workerId"], nxt["pollCount"]) == ("IN_PROGRESS", "runner", 1)
    assert api.task(nxt["taskId"])["status"] == "IN_PROGRESS"
    assert api.workflow(task["workflowInstanceId"])["status"] == "COMPLETED"
    resp = api.post("/tasks/update-v2", {"workflowInstanceId": nxt["workflowInstanceId"], "taskId": nxt["taskId"],
                                         "workerId": "runner", "status": "COMPLETED", "outputData": {}})
    assert resp.status_code == 204
    assert resp.content == b""
    assert api.workflow(nxt["workflowInstanceId"])["status"] == "COMPLETED"


def test_update_v2_never_returns_a_task_of_another_type(api, flow):
    api.start(flow["name"], {"x": 1})
    task = api.poll_one(flow["a"])
    resp = api.post("/tasks/update-v2", {"workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"],
                                         "workerId": "w", "status": "COMPLETED", "outputData": {"v": 1}})
    assert resp.status_code == 204
    assert api.poll_one(flow["b"])["inputData"] == {"fromA": 1}


def test_update_v2_in_progress_returns_nothing(api, single):
    api.start(single["name"], {"n": 1})
    api.start(single["name"], {"n": 2})
    task = api.poll_one(single["t"])
    resp = api.post("/tasks/update-v2", {"workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"],
                                         "workerId": "w", "status": "IN_PROGRESS", "callbackAfterSeconds": 60})
    assert resp.status_code == 204
    assert api.task(task["taskId"])["status"] == "SCHEDULED"


def test_update_v2_of_unknown_task_is_404(api):
    body = error(api.post("/tasks/update-v2", {"workflowInstanceId": "x", "taskId": "nope", "status": "COMPLETED"}),
                 404)
    assert body["message"] == "No such workflow found by id: x"  # the workflow is looked up first


# --- update by reference -------------------------------------------------------------------------------------

def test_update_by_reference_name(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    task_id = api.workflow(wf_id)["tasks"][0]["taskId"]
    resp = api.post(f"/tasks/{wf_id}/a/COMPLETED", {"v": "by-ref"}, params={"workerid": "ext"})
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/plain")
    assert resp.content.decode() == task_id
    wf = api.workflow(wf_id)
    assert (wf["tasks"][0]["status"], wf["tasks"][0]["outputData"]) == ("COMPLETED", {"v": "by-ref"})
    assert wf["tasks"][0]["workerId"] == "ext"
    assert wf["tasks"][1]["inputData"] == {"fromA": "by-ref"}


def test_update_by_reference_with_nothing_pending_is_an_empty_200(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    api.ok(api.post(f"/tasks/{wf_id}/a/COMPLETED", {"v": 1}))
    resp = api.post(f"/tasks/{wf_id}/a/COMPLETED", {"v": 2})
    assert resp.status_code == 200
    assert resp.content == b""
    resp = api.post(f"/tasks/{wf_id}/no_such_ref/COMPLETED", {})
    assert resp.status_code == 200 and resp.content == b""
    assert api.workflow(wf_id)["tasks"][0]["outputData"] == {"v": 1}


def test_update_by_reference_of_unknown_workflow_is_404(api):
    body = error(api.post("/tasks/no-such-wf/a/COMPLETED", {}), 404)
    assert body["message"] == "No such workflow found by id: no-such-wf"


def test_update_by_reference_failed(api, flow):
    wf_id = api.start(flow["name"], {"x": 1})
    task_id = api.workflow(wf_id)["tasks"][0]["taskId"]
    assert api.ok(api.post(f"/tasks/{wf_id}/a/FAILED", {})).content.decode() == task_id
    wf = api.workflow(wf_id)
    assert [(t["referenceTaskName"], t["status"], t["retryCount"]) for t in wf["tasks"]] == \
        [("a", "FAILED", 0), ("a", "SCHEDULED", 1)]


# --- read one task -----------------------------------------------------------------------------------------------

def test_get_task(api, flow):
    wf_id = api.start(flow["name"], {"x": 5}, correlationId="cc")
    task_id = api.workflow(wf_id)["tasks"][0]["taskId"]
    task = api.task(task_id)
    assert task["taskId"] == task_id
    assert task["workflowInstanceId"] == wf_id
    assert task["status"] == "SCHEDULED"
    assert task["inputData"] == {"x": 5}
    assert task["referenceTaskName"] == "a"
    assert task["taskDefName"] == flow["a"]
    assert task["workflowType"] == flow["name"]
    assert task["correlationId"] == "cc"
    assert task["pollCount"] == 0
    assert task["workflowTask"]["taskReferenceName"] == "a"


def test_get_unknown_task_is_404(api):
    body = error(api.get("/tasks/unknown-task-id"), 404)
    assert body["message"] == "Task not found for taskId: unknown-task-id"


# --- logs --------------------------------------------------------------------------------------------------------

def test_logs_inside_task_result_with_seconds_and_millis(api, single):
    api.start(single["name"], {"n": 1})
    task = api.poll_one(single["t"])
    logs = [{"log": "in seconds", "taskId": task["taskId"], "createdTime": 1_700_000_000},
            {"log": "in millis", "taskId": task["taskId"], "createdTime": 1_700_000_000_123}]
    api.ok(api.update(task, "FAILED", reasonForIncompletion="tb", logs=logs))
    resp = api.get(f"/tasks/{task['taskId']}/log")
    assert resp.status_code == 200
    assert resp.json() == [
        {"log": "in seconds", "taskId": task["taskId"], "createdTime": 1_700_000_000_000},
        {"log": "in millis", "taskId": task["taskId"], "createdTime": 1_700_000_000_123},
    ]


def test_task_without_logs_answers_204(api, single):
    wf_id = api.start(single["name"], {"n": 1})
    task_id = api.workflow(wf_id)["tasks"][0]["taskId"]
    resp = api.get(f"/tasks/{task_id}/log")
    assert resp.status_code == 204
    assert resp.content == b""


@pytest.mark.parametrize("body", ['hello \\"log\\', "plain text line", "1.50", "null", "{\\\"a\\\": 1}"])
def test_post_log_stores_the_raw_body(api, single, body):
    wf_id = api.start(single["name"], {"n": 1})
    task_id = api.workflow(wf_id)["tasks"][0]["taskId"]
    resp = api.post(f"/tasks/{task_id}/log", raw=body)
    assert resp.status_code == 200
    assert resp.content == b""
    logs = api.ok(api.get(f"/tasks/{task_id}/log")).json()
    assert [(entry["log"], entry["taskId"]) for entry in logs] == [(body, task_id)]
    assert isinstance(logs[0]["createdTime"], int) and logs[0]["createdTime"] > 1_600_000_000_000


@pytest.mark.parametrize("body, stored", [('"audited by \\"ops\\""', 'audited by "ops"'), ('"\\u00e9t\\u00e9"', "été"),
                                          ('"unterminated', '"unterminated'), ('"a" "b"', '"a" "b"')])
def test_post_log_of_a_json_string_stores_the_text(api, single, body, stored):
    """The TypeScript SDK's ``addTaskLog`` sends the line JSON-encoded."""
    wf_id = api.start(single["name"], {"n": 1})
    task_id = api.workflow(wf_id)["tasks"][0]["taskId"]
    api.ok(api.post(f"/tasks/{task_id}/log", raw=body))
    assert [e["log"] for e in api.ok(api.get(f"/tasks/{task_id}/log")).json()] == [stored]


def test_logs_accumulate_in_order(api, single):
    api.start(single["name"], {"n": 1})
    task = api.poll_one(single["t"])
    api.ok(api.post(f"/tasks/{task['taskId']}/log", raw="one"))
    api.ok(api.update(task, "IN_PROGRESS", logs=[{"log": "two", "taskId": task["taskId"], "createdTime": 1}]))
    api.ok(api.post(f"/tasks/{task['taskId']}/log", raw="three"))
    assert [e["log"] for e in api.ok(api.get(f"/tasks/{task['taskId']}/log")).json()] == ["one", "two", "three"]


# --- queues and poll data ------------------------------------------------------------------------------------------

def test_queue_sizes(api, single):
    for i in range(3):
        api.start(single["name"], {"n": i})
    other = unique("other")
    resp = api.get("/tasks/queue/sizes", {"taskType": [single["t"], other]})
    assert resp.status_code == 200
    assert resp.json() == {single["t"]: 3, other: 0}
    api.poll(single["t"], count=2)
    assert api.ok(api.get("/tasks/queue/sizes", {"taskType": [single["t"]]})).json() == {single["t"]: 1}
    assert api.ok(api.get("/tasks/queue/size", {"taskType": single["t"]})).json() == 1
    assert api.ok(api.get("/tasks/queue/all")).json()[single["t"]] == 1


def test_queue_size_per_domain(api, single):
    api.start(single["name"], {"n": 1}, taskToDomain={single["t"]: "d1"})
    api.start(single["name"], {"n": 2})
    assert api.ok(api.get("/tasks/queue/size", {"taskType": single["t"], "domain": "d1"})).json() == 1
    assert api.ok(api.get("/tasks/queue/size", {"taskType": single["t"]})).json() == 1
    assert api.ok(api.get("/tasks/queue/all")).json()[f"d1:{single['t']}"] == 1


def test_poll_data_records_workers(api, single):
    worker = unique("worker")
    api.poll(single["t"], worker_id=worker)
    api.poll(single["t"], worker_id=worker, domain="dd")
    resp = api.get("/tasks/queue/polldata", {"taskType": single["t"]})
    assert resp.status_code == 200
    data = resp.json()
    assert {(p["queueName"], p.get("domain"), p["workerId"]) for p in data} == \
        {(single["t"], None, worker), (single["t"], "dd", worker)}
    assert all(isinstance(p["lastPollTime"], int) and p["lastPollTime"] > 1_600_000_000_000 for p in data)
    everything = api.ok(api.get("/tasks/queue/polldata/all")).json()
    assert {p["workerId"] for p in everything if p["queueName"] == single["t"]} == {worker}


def test_a_wrong_method_on_a_worker_endpoint_answers_conductors_error_body(client, db):
    """405 from the worker endpoints has the same body as every other error: status,
    message, instance (this server) and retryable."""
    from django.conf import settings

    resp = client.delete("/api/tasks/poll/batch/anything")
    assert resp.status_code == 405
    assert resp.json() == {"status": 405, "message": "Request method 'DELETE' is not supported",
                           "instance": settings.CONDUCTOR["INSTANCE_ID"], "retryable": False}
