"""Inputs a fresh-eyes tester found to hurt the server, each with the right answer:

* a NUL character (U+0000) anywhere (JSON body, path, query, raw log line) is a 400 on both
  databases (PostgreSQL cannot store it: it answered 500 and dropped a worker's result);
* a TaskResult naming another workflow than the task's own changes nothing (it used to
  complete the task anyway); an unknown workflow id is Conductor's 404;
* a workflow ``inputSchema`` may not make the server fetch a URL or read a file
  (``$ref`` outside the schema is refused at registration, never resolved at start) and an
  invalid schema is a 400 at registration, not a 500 at every start.
"""
from __future__ import annotations

import pytest

from apps.engine.models import TaskExecution, WorkflowExecution
from tests.factories import simple_task, task_def, unique, workflow_def
from tests.support.http_stub import HttpStub, Reply


@pytest.fixture
def flow(api):
    task = unique("hard_task")
    name = unique("hard_wf")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "t1")]))
    return name, task


def _message(resp) -> str:
    return resp.json()["message"]


# --- NUL characters -----------------------------------------------------------------------

def test_nul_in_a_start_input_is_a_400_and_starts_nothing(api, flow):
    name, _ = flow
    before = WorkflowExecution.objects.filter(workflow_name=name).count()
    for path, body in (("/workflow", {"name": name, "input": {"order": "a\u0000b"}}),
                       (f"/workflow/{name}", {"order": "a\u0000b"}),
                       ("/workflow", {"name": name, "input": {"k\u0000": 1}}),
                       ("/workflow", {"name": name, "correlationId": "c\u0000"})):
        resp = api.post(path, body)
        assert resp.status_code == 400, (path, resp.content)
        assert "NUL" in _message(resp)
    assert WorkflowExecution.objects.filter(workflow_name=name).count() == before


def test_nul_in_a_task_result_is_a_400_and_the_task_keeps_waiting_for_a_good_one(api, flow):
    name, task = flow
    wid = api.start(name)
    polled = api.ok(api.get(f"/tasks/poll/{task}", {"workerid": "w"})).json()
    bad = {"workflowInstanceId": wid, "taskId": polled["taskId"], "status": "COMPLETED",
           "outputData": {"amount": "a\u0000b"}}
    for path in ("/tasks", "/tasks/update-v2"):
        assert api.post(path, bad).status_code == 400
    assert api.post("/tasks", {**bad, "outputData": {}, "reasonForIncompletion": "x\u0000"}).status_code == 400
    row = TaskExecution.objects.get(pk=polled["taskId"])
    assert (row.status, row.output_data) == ("IN_PROGRESS", {})
    api.ok(api.post("/tasks", {**bad, "outputData": {"amount": "ab"}}))
    assert api.get(f"/workflow/{wid}").json()["status"] == "COMPLETED"


def test_nul_in_paths_queries_and_log_lines_is_a_400(api, flow):
    _, task = flow
    for path, params in (("/tasks/poll/batch/a%00b", {"count": 1}),
                         (f"/tasks/poll/batch/{task}", {"workerid": "w\u0000"}),
                         ("/workflow/search", {"freeText": "a\u0000b"}),
                         ("/workflow/search", {"query": 'workflowType="a\u0000"'}),
                         ("/metadata/workflow", {"name": "\u0000"})):
        resp = api.get(path, params)
        assert resp.status_code == 400, (path, params, resp.content)
        assert "NUL" in _message(resp)
    wid = api.start(flow[0])
    task_id = api.get(f"/workflow/{wid}", {"includeTasks": True}).json()["tasks"][0]["taskId"]
    resp = api.post(f"/tasks/{task_id}/log", raw="line\u0000with nul")
    assert resp.status_code == 400
    assert api.get(f"/tasks/{task_id}/log").status_code == 204  # nothing stored


@pytest.mark.parametrize("escape", ["%FF", "%ED%A0%80"])
def test_query_escapes_that_are_not_utf8_are_a_400(api, flow, escape):
    """They were read as U+FFFD: a search for text nobody sent, a poll by a workerid nobody has."""
    _, task = flow
    for path, query in (("/workflow/search", f"freeText=a{escape}"), (f"/tasks/poll/batch/{task}", f"workerid=w{escape}")):
        resp = api.client.get(f"/api{path}?{query}")
        assert resp.status_code == 400, (path, resp.content)
        assert "not valid UTF-8" in _message(resp) and query.split("=")[0] in _message(resp)


# --- a TaskResult for another workflow ----------------------------------------------------------

def test_a_task_result_naming_another_workflow_changes_nothing(api, flow):
    name, task = flow
    first = api.start(name)
    other = api.start(name)
    polled = [api.ok(api.get(f"/tasks/poll/{task}", {"workerid": "w"})).json() for _ in range(2)]
    of_first = next(p for p in polled if p["workflowInstanceId"] == first)
    wrong = {"workflowInstanceId": other, "taskId": of_first["taskId"], "status": "COMPLETED",
             "outputData": {"amount": 5}}
    for path in ("/tasks", "/tasks/update-v2"):
        resp = api.post(path, wrong)
        assert resp.status_code == 400, resp.content
        assert "does not belong" in _message(resp)
    resp = api.post("/tasks", {**wrong, "workflowInstanceId": "no-such-workflow"})
    assert resp.status_code == 404
    assert _message(resp) == "No such workflow found by id: no-such-workflow"
    assert {api.get(f"/workflow/{w}").json()["status"] for w in (first, other)} == {"RUNNING"}
    assert TaskExecution.objects.get(pk=of_first["taskId"]).status == "IN_PROGRESS"


# --- inputSchema ------------------------------------------------------------------------------------

@pytest.fixture
def schema_host(http_stub) -> HttpStub:
    """A loopback HTTP server serving a schema at every path; it records every request."""
    return http_stub(lambda request: Reply(200, {"type": "object"}))


def _with_schema(name: str, data) -> dict:
    return workflow_def(name, [{"name": "w", "taskReferenceName": "w", "type": "WAIT"}],
                        inputSchema={"name": "s", "type": "JSON", "data": data}, enforceSchema=True)


def test_input_schema_refs_outside_the_schema_and_invalid_schemas_are_refused_at_registration(api, schema_host):
    url = schema_host.url
    for data, expected in (({"$ref": f"{url}/s.json"}, "Only local $ref"),
                           ({"properties": {"a": {"$ref": "file:///etc/passwd"}}}, "Only local $ref"),
                           ({"type": "notatype"}, "Invalid JSON Schema"),
                           ("not an object", "must be a JSON object")):
        name = unique("schema_bad")
        resp = api.post("/metadata/workflow", _with_schema(name, data))
        assert resp.status_code == 400, resp.content
        errors = resp.json().get("validationErrors") or [{"message": _message(resp)}]
        assert any(expected in e["message"] for e in errors), errors
        assert api.get(f"/metadata/workflow/{name}").status_code == 404
    assert schema_host.requests == []


def test_a_local_ref_schema_still_validates_the_input(api):
    name = unique("schema_local")
    data = {"type": "object", "required": ["order"], "properties": {"order": {"$ref": "#/$defs/order"}},
            "$defs": {"order": {"type": "string"}}}
    api.register_workflow(_with_schema(name, data))
    resp = api.post("/workflow", {"name": name, "input": {"order": 7}})
    assert resp.status_code == 400
    api.ok(api.post("/workflow", {"name": name, "input": {"order": "o-1"}}))


def test_a_stored_schema_with_a_remote_ref_is_never_fetched_at_start(api, schema_host):
    from apps.metadata.models import WorkflowDef

    url = schema_host.url
    name = unique("schema_stored")
    api.register_workflow(_with_schema(name, {"type": "object"}))
    row = WorkflowDef.objects.get(name=name, version=1)  # as stored before registration checked it
    row.definition = {**row.definition, "inputSchema": {"name": "s", "type": "JSON", "data": {"$ref": f"{url}/s.json"}}}
    row.save()
    resp = api.post("/workflow", {"name": name, "input": {}})
    assert resp.status_code == 400, resp.content
    assert "inputSchema cannot be applied" in _message(resp)
    assert schema_host.requests == []
    assert not WorkflowExecution.objects.filter(workflow_name=name).exists()


# --- TaskDef integers ------------------------------------------------------------------------------

def test_task_def_integers_are_stored_as_integers(api):
    name = unique("int_td")
    api.register_task_defs(task_def(name, retryCount="3", retryDelaySeconds=2.7, timeoutSeconds="60",
                                    responseTimeoutSeconds=30))
    stored = api.ok(api.get(f"/metadata/taskdefs/{name}")).json()
    assert (stored["retryCount"], stored["retryDelaySeconds"], stored["timeoutSeconds"]) == (3, 2, 60)
    resp = api.post("/metadata/taskdefs", [task_def(unique("int_td"), retryCount="three")])
    assert resp.status_code == 400
    assert resp.json()["validationErrors"][0]["path"].endswith("retryCount")


def test_input_schema_errors_are_listed_once(api):
    name = unique("schema_twice")
    api.register_workflow(_with_schema(name, {"type": "object", "required": ["a", "b"]}))
    resp = api.post("/workflow", {"name": name, "input": {}})
    assert resp.status_code == 400
    assert resp.json()["validationErrors"] == [{"path": "input.a", "message": "'a' is a required property"},
                                               {"path": "input.b", "message": "'b' is a required property"}]
