"""Request bodies sent with ``Transfer-Encoding: chunked`` and no ``Content-Length`` (how
undici, the transport of the official TypeScript SDK, sends every body) reach every
body-taking endpoint in full, through the real ASGI application uvicorn serves.

Each request goes in-process through ``conductor_web.asgi.application`` with the body split
over several ``http.request`` messages, as uvicorn delivers a de-chunked body; the effect is
then read back through the API (a definition stored, an input kept, a task completed).
"""
from __future__ import annotations

import json

import pytest

from tests.asgi_client import asgi_request as chunked
from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api() -> Api:
    return Api()


@pytest.fixture
def flow(api):
    """A registered one-task workflow: ``(workflow name, task name)``."""
    task = unique("chunk_task")
    name = unique("chunk_wf")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "t1", {"x": "${workflow.input.x}"})]))
    return name, task


def _wf(api, workflow_id):
    return api.ok(api.get(f"/workflow/{workflow_id}", {"includeTasks": True})).json()


def _start(api, name, x="kept"):
    return api.ok(api.post("/workflow", {"name": name, "input": {"x": x}})).content.decode()


def test_metadata_registrations(api):
    t1, t2 = unique("chunk_td"), unique("chunk_td")
    status, _ = chunked("POST", "/api/metadata/taskdefs", [task_def(t1), task_def(t2)])
    assert status == 200
    assert api.ok(api.get(f"/metadata/taskdefs/{t1}")).json()["name"] == t1
    assert api.ok(api.get(f"/metadata/taskdefs/{t2}")).json()["name"] == t2

    status, _ = chunked("PUT", "/api/metadata/taskdefs", task_def(t1, description="updated chunked"))
    assert status == 200
    assert api.get(f"/metadata/taskdefs/{t1}").json()["description"] == "updated chunked"

    name = unique("chunk_def")
    status, body = chunked("POST", "/api/metadata/workflow", workflow_def(name, [simple_task(t1)]))
    assert status == 200, body
    assert api.ok(api.get(f"/metadata/workflow/{name}")).json()["tasks"][0]["name"] == t1

    status, body = chunked("PUT", "/api/metadata/workflow",
                           [workflow_def(name, [simple_task(t1)], description="v1 again")])
    assert status == 200, body
    assert api.get(f"/metadata/workflow/{name}").json()["description"] == "v1 again"

    status, body = chunked("POST", "/api/metadata/workflow/validate", workflow_def(name, [simple_task(t1)]))
    assert status == 200, body
    status, body = chunked("POST", "/api/metadata/workflow/validate", {"name": name, "tasks": [{"type": "SIMPLE"}]})
    assert status == 400, body


@pytest.mark.parametrize("path", ["/api/workflow", "/api/workflow/{name}"])
def test_start_keeps_the_input(api, flow, path):
    name, _ = flow
    body = {"x": "kept-by-name"} if "{name}" in path else {"name": name, "input": {"x": "kept-by-request"}}
    status, out = chunked("POST", path.format(name=name), body)
    assert status == 200, out
    wf = _wf(api, out.decode())
    assert wf["input"] == {"x": body.get("x") or "kept-by-request"}
    assert wf["tasks"][0]["inputData"]["x"] == wf["input"]["x"]


def test_execute_keeps_the_input(api, flow):
    name, _ = flow
    status, out = chunked("POST", f"/api/workflow/execute/{name}/1", {"name": name, "input": {"x": "sync"}},
                          query="waitForSeconds=0")
    assert status == 200, out
    assert json.loads(out)["input"] == {"x": "sync"}


def test_workflow_operations(api, flow):
    name, task = flow
    wid = _start(api, name)

    status, out = chunked("POST", f"/api/workflow/{wid}/variables", {"v": 1})
    assert status == 200, out
    assert _wf(api, wid)["variables"] == {"v": 1}

    status, out = chunked("POST", f"/api/workflow/{name}/correlated", ["c-none"])
    assert status == 200, out
    assert json.loads(out) == {"c-none": []}

    status, out = chunked("POST", f"/api/tasks/{wid}/t1/COMPLETED", {"done": "by-ref"})
    assert status == 200, out
    wf = _wf(api, wid)
    assert wf["status"] == "COMPLETED" and wf["tasks"][0]["outputData"] == {"done": "by-ref"}

    status, out = chunked("POST", f"/api/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid,
                                                                  "workflowInput": {"x": "rerun"}})
    assert status == 200, out
    assert _wf(api, wid)["input"] == {"x": "rerun"}

    # skip applies to a task not scheduled yet (Conductor: "already processed" otherwise)
    two = unique("chunk_two")
    api.register_workflow(workflow_def(two, [simple_task(task, "t1"), simple_task(task, "t2")]))
    wid = _start(api, two)
    status, out = chunked("PUT", f"/api/workflow/{wid}/skiptask/t2", {"taskOutput": {"skipped": True}})
    assert status == 200, out
    api.ok(api.post(f"/tasks/{wid}/t1/COMPLETED", {}))
    wf = _wf(api, wid)
    assert wf["status"] == "COMPLETED"
    assert [t["outputData"] for t in wf["tasks"] if t["referenceTaskName"] == "t2"] == [{"skipped": True}]


def test_task_updates_and_logs(api, flow):
    name, task = flow
    for path in ("/api/tasks", "/api/tasks/update-v2"):
        wid = _start(api, name)
        polled = api.ok(api.get(f"/tasks/poll/{task}", {"workerid": "w"})).json()
        assert polled["workflowInstanceId"] == wid
        status, out = chunked("POST", path, {"workflowInstanceId": wid, "taskId": polled["taskId"],
                                             "status": "COMPLETED", "outputData": {"via": path}})
        # update-v2 answers the next task of the same type, or 204 when there is none
        assert status == (200 if path == "/api/tasks" else 204), out
        wf = _wf(api, wid)
        assert wf["status"] == "COMPLETED" and wf["tasks"][0]["outputData"] == {"via": path}

        status, out = chunked("POST", f"/api/tasks/{polled['taskId']}/log", "a chunked log line",
                              content_type="text/plain")
        assert status == 200, out
        assert [entry["log"] for entry in api.get(f"/tasks/{polled['taskId']}/log").json()] == ["a chunked log line"]

    wid = _start(api, name)
    status, out = chunked("POST", f"/api/tasks/{wid}/t1/COMPLETED/sync", {"done": "sync"})
    assert status == 200, out
    assert _wf(api, wid)["tasks"][0]["outputData"] == {"done": "sync"}


def test_signals_and_correlation_search(api):
    name = unique("chunk_signal")
    api.register_workflow(workflow_def(name, [
        {"name": w, "taskReferenceName": w, "type": "WAIT"} for w in ("w1", "w2")]))
    wid = api.ok(api.post("/workflow", {"name": name, "input": {}, "correlationId": "chunk-c"})).content.decode()
    status, out = chunked("POST", f"/api/tasks/{wid}/COMPLETED/signal", {"via": "signal"})
    assert status == 200, out
    status, out = chunked("POST", f"/api/tasks/{wid}/COMPLETED/signal/sync", {"via": "signal/sync"})
    assert status == 200, out
    assert json.loads(out)["status"] == "COMPLETED"
    assert [t["outputData"] for t in _wf(api, wid)["tasks"]] == [{"via": "signal"}, {"via": "signal/sync"}]
    status, out = chunked("POST", "/api/workflow/correlated/batch",
                          {"workflowNames": [name], "correlationIds": ["chunk-c"]}, query="includeClosed=true")
    assert status == 200, out
    assert [w["workflowId"] for w in json.loads(out)["chunk-c"]] == [wid]


def test_bulk_and_test_run(api, flow):
    name, task = flow
    ids = [_start(api, name) for _ in range(2)]
    status, out = chunked("PUT", "/api/workflow/bulk/pause", ids)
    assert status == 200, out
    assert {_wf(api, i)["status"] for i in ids} == {"PAUSED"}
    status, out = chunked("POST", "/api/workflow/bulk/terminate", ids, query="reason=chunked")
    assert status == 200, out
    assert {_wf(api, i)["status"] for i in ids} == {"TERMINATED"}
    status, out = chunked("DELETE", "/api/workflow/bulk/remove", ids)
    assert status == 200, out
    assert api.get(f"/workflow/{ids[0]}").status_code == 404

    definition = workflow_def(unique("chunk_test"), [simple_task(task, "t1")],
                              outputParameters={"y": "${t1.output.y}"})
    status, out = chunked("POST", "/api/workflow/test", {"name": definition["name"], "workflowDef": definition,
                                                         "input": {}, "taskRefToMockOutput": {
                                                             "t1": [{"status": "COMPLETED", "output": {"y": 7}}]}})
    assert status == 200, out
    assert json.loads(out)["output"] == {"y": 7}


def test_event_handlers(api):
    handler = {"name": unique("chunk_eh"), "event": "conductor:chunked:done", "active": True,
               "actions": [{"action": "complete_task", "complete_task": {
                   "workflowId": "${workflowId}", "taskRefName": "t", "output": {}}}]}
    status, out = chunked("POST", "/api/event", handler)
    assert status in (200, 204), out
    names = [h["name"] for h in api.ok(api.get("/event")).json()]
    assert handler["name"] in names
    handler["active"] = False
    status, out = chunked("PUT", "/api/event", handler)
    assert status in (200, 204), out
    found = [h for h in api.get("/event").json() if h["name"] == handler["name"]]
    assert found[0]["active"] is False


def test_scheduler_event_queue_and_bulk_recovery(api, flow):
    name, task = flow
    schedule = unique("chunk_sched")
    status, out = chunked("POST", "/api/scheduler/schedules", {
        "name": schedule, "cronExpression": "0 0 9 * * MON-FRI", "zoneId": "UTC",
        "startWorkflowRequest": {"name": name, "version": 1, "input": {"x": "scheduled"}}})
    assert status in (200, 204), out
    stored = api.ok(api.get(f"/scheduler/schedules/{schedule}")).json()
    assert stored["startWorkflowRequest"]["input"] == {"x": "scheduled"}
    status, out = chunked("PUT", "/api/scheduler/bulk/pause", [schedule])
    assert status == 200, out
    assert api.get(f"/scheduler/schedules/{schedule}").json()["paused"] is True

    waiter = unique("chunk_wait")
    api.register_workflow(workflow_def(waiter, [{"name": "w", "taskReferenceName": "w", "type": "WAIT"}]))
    wid = api.ok(api.post("/workflow", {"name": waiter, "input": {}})).content.decode()
    status, out = chunked("POST", f"/api/queue/update/{wid}/w/COMPLETED", {"via": "queue"})
    assert status in (200, 204), out
    from apps.engine.event_handlers import process_event_message_job
    from apps.engine.models import EventMessage

    for message_id in EventMessage.objects.filter(processed_time__isnull=True).values_list("message_id", flat=True):
        process_event_message_job(message_id)
    wf = _wf(api, wid)
    assert wf["status"] == "COMPLETED" and wf["tasks"][0]["outputData"]["via"] == "queue"

    status, out = chunked("POST", "/api/workflow/bulk/restart", [wid])
    assert status == 200, out
    assert json.loads(out)["bulkSuccessfulResults"] == [wid]
    assert _wf(api, wid)["status"] == "RUNNING"


def test_bad_chunked_body_is_a_400_and_writes_nothing(api):
    name = unique("chunk_bad")
    status, out = chunked("POST", "/api/metadata/workflow", '{"name": "' + name + '", "tasks": [')
    assert status == 400, out
    assert set(json.loads(out)) >= {"status", "message"}
    assert api.get(f"/metadata/workflow/{name}").status_code == 404
