"""Bad input never answers 5xx: each case found by fuzzing the API (issue #10) answers the
right 4xx with Conductor's error body, names the field, and writes nothing."""
from __future__ import annotations

import json

import pytest

from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db


error = Api.refused


def test_decision_cases_not_an_object(api):
    d = workflow_def(unique("ab"), [{"name": "s", "taskReferenceName": "s", "type": "SWITCH",
                                     "evaluatorType": "value-param", "expression": "x",
                                     "decisionCases": ["a"], "defaultCase": [simple_task("x", "x")]}])
    body = error(api.post("/metadata/workflow/validate", d), 400)
    assert "decisionCases" in json.dumps(body)


@pytest.mark.parametrize("where", ["validate", "register", "update", "start", "test"])
def test_list_as_task_reference_name(api, where):
    name = unique("ab")
    d = workflow_def(name, [{"name": "t", "taskReferenceName": ["a"], "type": "SIMPLE"}])
    if where == "validate":
        resp = api.post("/metadata/workflow/validate", d)
    elif where == "register":
        resp = api.post("/metadata/workflow", d)
    elif where == "update":
        resp = api.put("/metadata/workflow", [d])
    elif where == "start":
        resp = api.post("/workflow", {"name": name, "workflowDef": d})
    else:
        resp = api.post("/workflow/test", {"name": name, "workflowDef": d, "taskRefToMockOutput": {}})
    body = error(resp, 400)
    assert "taskReferenceName" in json.dumps(body)
    assert api.get(f"/metadata/workflow/{name}").status_code == 404


def test_mock_output_not_an_object(api, flow):
    name, _ = flow
    error(api.post("/workflow/test", {"name": name, "taskRefToMockOutput": [1]}), 400)
    error(api.post("/workflow/test", {"name": name, "taskRefToMockOutput": {"t1": 5}}), 400)
    error(api.post("/workflow/test", {"name": name, "taskRefToMockOutput": {"t1": [7]}}), 400)


def test_correlated_batch_items_must_be_strings(api, flow):
    name, _ = flow
    error(api.post(f"/workflow/{name}/correlated", [{}]), 400)


@pytest.mark.parametrize("value", [2 ** 63, "AAA", -1, [1]])
def test_callback_after_seconds_out_of_range(api, flow, value):
    name, task = flow
    wid = api.start(name)
    t = api.poll_one(task)
    error(api.update(t, "IN_PROGRESS", callbackAfterSeconds=value), 400)
    assert api.task(t["taskId"])["status"] == "IN_PROGRESS"
    assert api.workflow(wid)["status"] == "RUNNING"


@pytest.mark.parametrize("field", ["workerId", "workflowInstanceId", "taskId", "status", "outputData",
                                   "reasonForIncompletion"])
def test_task_result_field_types(api, flow, field):
    name, task = flow
    api.start(name)
    t = api.poll_one(task)
    result = {"workflowInstanceId": t["workflowInstanceId"], "taskId": t["taskId"], "status": "COMPLETED",
              field: [1, 2]}
    body = error(api.post("/tasks", result), 400)
    assert field in body["message"] or field in json.dumps(body.get("validationErrors"))
    assert api.task(t["taskId"])["status"] == "IN_PROGRESS"


def test_empty_idempotency_key_twice(api, flow):
    name, _ = flow
    first = api.start(name, idempotencyKey="")
    second = api.start(name, idempotencyKey="")
    assert first != second


@pytest.mark.parametrize("field,value", [("idempotencyKey", [1]), ("correlationId", {}), ("priority", "high"),
                                         ("priority", 2 ** 63), ("version", "x"), ("name", 5), ("input", [1]),
                                         ("taskToDomain", [1]), ("taskToDomain", {"a": 1}), ("createdBy", [])])
def test_start_request_field_types(api, flow, field, value):
    name, _ = flow
    body = error(api.post("/workflow", {"name": name, field: value}), 400)
    assert field in json.dumps(body)


def test_tasks_list_with_a_number_is_refused(api):
    name = unique("ab")
    body = error(api.post("/metadata/workflow", {"name": name, "tasks": [0]}), 400)
    assert "tasks" in json.dumps(body)
    assert api.get(f"/metadata/workflow/{name}").status_code == 404


@pytest.mark.parametrize("param", ["start", "size"])
def test_search_paging_out_of_range(api, param):
    for path in ("/tasks/search", "/workflow/search", "/tasks/search-v2", "/workflow/search-v2"):
        error(api.get(path, {param: 2 ** 63}), 400)


def test_sub_workflow_starting_itself_is_refused(api):
    name = unique("ab_self")
    d = workflow_def(name, [{"name": "sw", "taskReferenceName": "sw", "type": "SUB_WORKFLOW",
                             "subWorkflowParam": {"name": name, "version": 1}}])
    body = error(api.post("/metadata/workflow", d), 400)
    assert "sw" in json.dumps(body)
    assert api.get(f"/metadata/workflow/{name}").status_code == 404
    # a two-definition cycle: a -> b registered, then b -> a refused
    a, b = unique("ab_a"), unique("ab_b")
    api.register_task_defs(task_def("leaf_" + a))
    api.register_workflow(workflow_def(b, [simple_task("leaf_" + a, "leaf")]))
    api.register_workflow(workflow_def(a, [{"name": "to_b", "taskReferenceName": "to_b", "type": "SUB_WORKFLOW",
                                            "subWorkflowParam": {"name": b}}]))
    cyc = workflow_def(b, [{"name": "to_a", "taskReferenceName": "to_a", "type": "SUB_WORKFLOW",
                            "subWorkflowParam": {"name": a}}], version=2)
    error(api.post("/metadata/workflow", cyc), 400)


# --- the request-parsing layer ------------------------------------------------------------------

BODY_PATHS = [("post", "/metadata/workflow"), ("put", "/metadata/workflow"), ("post", "/metadata/taskdefs"),
              ("post", "/metadata/workflow/validate"), ("post", "/workflow"), ("post", "/workflow/test"),
              ("post", "/tasks"), ("post", "/tasks/update-v2"), ("post", "/event"),
              ("post", "/workflow/x/correlated"), ("put", "/workflow/bulk/pause")]


@pytest.mark.parametrize("method,path", BODY_PATHS)
def test_deep_json(api, method, path):
    raw = "[" * 10000 + "]" * 10000
    body = error(getattr(api, method)(path, raw=raw), 400)
    assert "deep" in body["message"] or "nest" in body["message"]


@pytest.mark.parametrize("method,path", BODY_PATHS)
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_numbers(api, method, path, constant):
    body = error(getattr(api, method)(path, raw='{"name": "x", "input": {"n": %s}}' % constant), 400)
    assert constant.lstrip("-") in body["message"]


@pytest.mark.parametrize("method,path", BODY_PATHS)
@pytest.mark.parametrize("number", ["1e999", "-1e999"])
def test_numbers_beyond_a_double(api, method, path, number):
    """Python reads 1e999 as infinity: it was stored as null, broke int() in validation
    (500) and the UI's audit row (JSON_VALID); no column can hold it, so it is a 400."""
    body = error(getattr(api, method)(path, raw='{"name": "x", "retryCount": %s, "input": {"n": %s}}' % (number, number)),
                 400)
    assert "out of range" in body["message"]


@pytest.mark.parametrize("method,path", BODY_PATHS)
def test_lone_surrogate(api, method, path):
    error(getattr(api, method)(path, raw='{"name": "a\\ud800b", "tasks": []}'), 400)


def test_lone_surrogate_in_a_name_writes_nothing(api):
    error(api.post("/metadata/taskdefs", raw='[{"name": "x\\udc00", "ownerEmail": "a@b.c"}]'), 400)
    assert all("\udc00" not in d["name"] for d in api.get("/metadata/taskdefs").json())


def test_oversize_log_line_is_413(api, flow, settings):
    name, task = flow
    api.start(name)
    t = api.poll_one(task)
    resp = api.client.post(f"/api/tasks/{t['taskId']}/log", data="x" * (settings.CONDUCTOR["MAX_TASK_LOG_BYTES"] + 1),
                           content_type="text/plain")
    error(resp, 413)
    assert api.get(f"/tasks/{t['taskId']}/log").status_code == 204


def test_oversize_body_is_413(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    error(api.post("/metadata/taskdefs", [task_def("x" * 2000)]), 413)


def test_task_to_domain_not_an_object(api, flow):
    name, _ = flow
    error(api.post("/workflow", {"name": name, "taskToDomain": "abc"}), 400)


def test_sub_workflow_starting_itself_at_run_time_fails_with_a_reason(api):
    """A definition passed in the input that starts itself again (not visible at
    registration) ends at the nesting cap with a reason, not a server error."""
    inner = workflow_def(unique("ab_dyn"), [{
        "name": "sw", "taskReferenceName": "sw", "type": "SUB_WORKFLOW",
        "inputParameters": {"def": "${workflow.input.def}"},
        "subWorkflowParam": {"name": "inner", "workflowDefinition": "${workflow.input.def}"}}])
    name = unique("ab_dyn")
    api.register_workflow(workflow_def(name, inner["tasks"]))
    wid = api.start(name, {"def": inner})
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED", wf["status"]
    # the failure travels up from the innermost child, whose task says why
    depth, child = 0, wf
    while child["tasks"][0].get("subWorkflowId"):
        child = api.workflow(child["tasks"][0]["subWorkflowId"])
        depth += 1
    assert "nesting is deeper than" in child["tasks"][0]["reasonForIncompletion"]
    assert depth >= 2
