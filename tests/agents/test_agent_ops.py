"""The Agents API's read-only and lifecycle operations (issue #28) in process (Django test
client through ``/api/agent``): listing, getting and deleting deployed agents, an
execution's detail, full view, task page and task logs, the raw execution search, pause,
resume, cancel, restart, retry, rerun, removing a record and the bulk operations, each
with Conductor's 404 for an unknown id or name and 400 naming the field. None of these has
a method on the Python SDK's ``AgentClient`` (it calls start/deploy/compile/status/
execution/executions/respond/stop/signal/stream, tested in test_agents_sdk.py), so they are
called over HTTP only. No LLM runs: a started agent's first task just waits scheduled."""
from __future__ import annotations

from conductor.ai.agents.config_serializer import AgentConfigSerializer

from tests.agents import agent_defs
from tests.ai.conftest import api  # noqa: F401 - fixtures
from tests.auth.conftest import as_role, auth_on  # noqa: F401 - fixtures
from tests.factories import simple_task, workflow_def


def ok(resp) -> dict | list | None:
    assert resp.status_code == 200, (resp.status_code, resp.content[:2000])
    return resp.json() if resp.content else None


def weather() -> dict:
    return AgentConfigSerializer().serialize(agent_defs.weather_agent())


def started(api) -> str:
    return ok(api.post("/agent/start", {"agentConfig": weather(), "prompt": "Paris?"}))["executionId"]


def status_of(api, eid: str) -> dict:
    return ok(api.get(f"/agent/{eid}/status"))


def test_list_get_and_delete_deployed_agents(api):
    api.register_workflow(workflow_def("plain_wf", [simple_task("x")]))
    assert ok(api.get("/agent/list")) == []
    ok(api.post("/agent/deploy", {"agentConfig": weather()}))
    listed = ok(api.get("/agent/list"))
    assert [a["name"] for a in listed] == ["e2e_weather"]  # the plain workflow is no agent
    agent = listed[0]
    assert agent["version"] == 1 and agent["type"] == "conductor" and agent["createTime"] > 0
    assert len(agent["checksum"]) == 64 and agent["inputParameters"] == ["prompt", "media", "session_id", "context"]
    definition = ok(api.get("/agent/definitions/e2e_weather"))
    assert definition["name"] == "e2e_weather" and definition["metadata"]["agentDef"]["name"] == "e2e_weather"
    assert ok(api.get("/agent/definitions/e2e_weather", {"version": 1}))["version"] == 1
    for path, params in (("/agent/definitions/plain_wf", None), ("/agent/definitions/nobody", None),
                         ("/agent/definitions/e2e_weather", {"version": 7})):
        assert api.refused(api.get(path, params), 404)["message"].startswith("No agent found by name: ")
    assert "'version'" in api.refused(api.get("/agent/definitions/e2e_weather", {"version": "x"}), 400)["message"]
    # delete: never a plain workflow, never a missing version; the TaskDefs stay
    assert api.refused(api.delete("/agent/plain_wf"), 404)["message"] == "No agent found by name: plain_wf"
    assert api.get("/metadata/workflow/plain_wf").status_code == 200
    api.refused(api.delete("/agent/e2e_weather", params={"version": 2}), 404)
    ok(api.delete("/agent/e2e_weather"))
    assert ok(api.get("/agent/list")) == []
    assert api.get("/metadata/workflow/e2e_weather").status_code == 404
    assert api.get("/metadata/taskdefs/get_weather").status_code == 200
    api.refused(api.delete("/agent/e2e_weather"), 404)


def test_execution_detail_full_view_task_page_and_logs(api):
    eid = started(api)
    full = ok(api.get(f"/agent/executions/{eid}/full"))
    assert full["workflowId"] == eid and full["workflowName"] == "e2e_weather"
    tasks = full["tasks"]
    assert [t["taskId"] for t in tasks] == [t["taskId"] for t in api.workflow(eid)["tasks"]] and tasks
    detail = ok(api.get(f"/agent/executions/{eid}"))
    assert (detail["executionId"], detail["agentName"], detail["version"], detail["status"]) == (
        eid, "e2e_weather", 1, "RUNNING")
    assert detail["input"]["prompt"] == "Paris?"
    pending = [t for t in tasks if t["status"] in ("SCHEDULED", "IN_PROGRESS")]
    assert detail["currentTask"]["taskRefName"] == pending[-1]["referenceTaskName"]
    assert detail["currentTask"]["status"] == pending[-1]["status"]
    page = ok(api.get(f"/agent/executions/{eid}/tasks"))
    assert page["totalHits"] == len(tasks) and sum(page["summary"].values()) == len(tasks)
    assert [t["taskId"] for t in page["results"]] == [t["taskId"] for t in tasks][:15]
    second = ok(api.get(f"/agent/executions/{eid}/tasks", {"count": 1, "start": 1}))
    assert [t["taskId"] for t in second["results"]] == [tasks[1]["taskId"]]
    only = ok(api.get(f"/agent/executions/{eid}/tasks", {"status": pending[-1]["status"]}))
    assert only["totalHits"] == page["summary"][pending[-1]["status"]]
    assert {t["status"] for t in only["results"]} == {pending[-1]["status"]}
    for params, field in (({"status": "NAPPING"}, "status"), ({"count": -1}, "count"), ({"start": -2}, "start")):
        body = api.refused(api.get(f"/agent/executions/{eid}/tasks", params), 400)
        assert [e["path"] for e in body["validationErrors"]] == [field]
    task_id = tasks[0]["taskId"]
    ok(api.post(f"/tasks/{task_id}/log", raw="looked at the sky"))
    logs = ok(api.get(f"/agent/tasks/{task_id}/log"))
    assert [(x["log"], x["taskId"]) for x in logs] == [("looked at the sky", task_id)]
    assert api.refused(api.get("/agent/tasks/nope/log"), 404)["message"] == "Task not found for taskId: nope"
    for path in ("/agent/executions/nope", "/agent/executions/nope/full", "/agent/executions/nope/tasks"):
        assert api.refused(api.get(path), 404)["message"] == "No such workflow found by id: nope"


def test_pause_resume_cancel_restart_retry_rerun_and_remove(api):
    eid = started(api)
    ok(api.put(f"/agent/{eid}/pause"))
    assert status_of(api, eid)["status"] == "PAUSED"
    ok(api.put(f"/agent/{eid}/resume"))
    assert status_of(api, eid)["status"] == "RUNNING"
    assert "is not PAUSED" in api.refused(api.put(f"/agent/{eid}/resume"), 409)["message"]
    ok(api.delete(f"/agent/{eid}/cancel"))
    status = status_of(api, eid)
    assert status["status"] == "TERMINATED" and status["reasonForIncompletion"] == "Cancelled by user"
    restarted = api.post(f"/agent/executions/{eid}/restart")
    assert restarted.status_code == 200 and status_of(api, eid)["status"] == "RUNNING"
    ok(api.delete(f"/agent/executions/{eid}", params={"reason": "enough"}))
    assert status_of(api, eid)["reasonForIncompletion"] == "enough"
    ok(api.post(f"/agent/executions/{eid}/retry"))
    assert status_of(api, eid)["status"] == "RUNNING"
    # a running execution cannot be removed with its tasks archived, nor retried
    api.refused(api.delete(f"/agent/executions/{eid}/record", params={"archiveTasks": "true"}), 400)
    api.refused(api.post(f"/agent/executions/{eid}/retry"), 404)
    ok(api.delete(f"/agent/{eid}/cancel", params={"reason": "again"}))
    rerun = api.post(f"/agent/executions/{eid}/rerun", {})
    assert rerun.status_code == 200 and rerun.content.decode() == eid
    assert status_of(api, eid)["status"] == "RUNNING"
    assert "RerunWorkflowRequest is required" in api.refused(
        api.post(f"/agent/executions/{eid}/rerun", raw=""), 400)["message"]
    ok(api.delete(f"/agent/executions/{eid}/record"))
    assert api.get(f"/agent/executions/{eid}").status_code == 404
    for resp in (api.put("/agent/nope/pause"), api.put("/agent/nope/resume"), api.delete("/agent/nope/cancel"),
                 api.delete("/agent/executions/nope"), api.post("/agent/executions/nope/restart"),
                 api.post("/agent/executions/nope/retry"), api.post("/agent/executions/nope/rerun", {}),
                 api.delete("/agent/executions/nope/record")):
        assert resp.status_code == 404 and resp.json()["message"] == "No such workflow found by id: nope", resp


def test_bulk_operations_apply_to_each_id(api):
    a, b = started(api), started(api)
    ok(api.put("/agent/executions/bulk/pause", [a, b]))
    assert {status_of(api, x)["status"] for x in (a, b)} == {"PAUSED"}
    ok(api.put("/agent/executions/bulk/resume", [a, b]))
    ok(api.post("/agent/executions/bulk/terminate", [a, b], params={"reason": "bulk stop"}))
    assert {status_of(api, x)["reasonForIncompletion"] for x in (a, b)} == {"bulk stop"}
    ok(api.post("/agent/executions/bulk/restart", [a]))
    ok(api.post("/agent/executions/bulk/retry", [b]))
    assert {status_of(api, x)["status"] for x in (a, b)} == {"RUNNING"}
    for body in ({"ids": [a]}, [a, 3], "x"):
        refused = api.refused(api.put("/agent/executions/bulk/pause", body), 400)
        assert [e["path"] for e in refused["validationErrors"]] == ["body"]
    assert api.refused(api.post("/agent/executions/bulk/terminate", ["nope"]), 404)["message"] == \
        "No such workflow found by id: nope"
    assert api.post("/agent/executions/bulk/pause", [a]).status_code == 405
    assert status_of(api, a)["status"] == "RUNNING"


def test_the_raw_execution_search_sees_every_execution(api):
    api.register_workflow(workflow_def("plain_wf", [simple_task("x")]))
    plain = api.start("plain_wf", {})
    eid = started(api)
    every = ok(api.get("/agent/executions/search"))
    assert every["totalHits"] == 2 and {r["workflowId"] for r in every["results"]} == {plain, eid}
    agents = ok(api.get("/agent/executions/search", {"classifier": "agent"}))
    assert [r["workflowId"] for r in agents["results"]] == [eid]
    assert [r["workflowId"] for r in ok(api.get("/agent/executions/search", {
        "query": "workflowType IN (plain_wf)"}))["results"]] == [plain]
    assert ok(api.get("/agent/executions/search", {"size": 1}))["totalHits"] == 2
    assert len(ok(api.get("/agent/executions/search", {"size": 1}))["results"]) == 1
    body = api.refused(api.get("/agent/executions/search", {"size": 6000}), 400)
    assert [e["path"] for e in body["validationErrors"]] == ["size"]


def test_roles_of_the_new_operations(as_role):
    admin, operator, reader = as_role("admin"), as_role("operator"), as_role("read_only")
    assert admin.post("/agent/deploy", {"agentConfig": weather()}).status_code == 200
    eid = operator.post("/agent/start", {"agentConfig": weather(), "prompt": "hi"}).json()["executionId"]
    for path in ("/agent/list", "/agent/definitions/e2e_weather", f"/agent/executions/{eid}",
                 f"/agent/executions/{eid}/full", f"/agent/executions/{eid}/tasks", "/agent/executions/search"):
        assert reader.get(path).status_code == 200, path
    assert reader.put(f"/agent/{eid}/pause").status_code == 403
    assert reader.delete(f"/agent/{eid}/cancel").status_code == 403
    assert operator.put(f"/agent/{eid}/pause").status_code == 200
    assert operator.delete("/agent/e2e_weather").status_code == 403
    assert operator.delete(f"/agent/executions/{eid}").status_code == 200
    assert admin.delete("/agent/e2e_weather").status_code == 200


def test_prune_removes_ended_agent_executions_only(api):
    api.register_workflow(workflow_def("plain_wf", [simple_task("x")]))
    plain = api.start("plain_wf", {})
    ok(api.delete(f"/workflow/{plain}", params={"reason": "ended"}))
    ended, running = started(api), started(api)
    ok(api.delete(f"/agent/{ended}/cancel"))
    assert ok(api.post("/agent/executions/prune")) == {"deleted": 0}  # ended just now, not 30 days ago
    assert ok(api.post("/agent/executions/prune", params={"olderThanDays": 0, "archiveTasks": "true"})) == {
        "deleted": 1}
    assert api.get(f"/agent/executions/{ended}").status_code == 404
    assert status_of(api, running)["status"] == "RUNNING"
    assert api.workflow(plain)["status"] == "TERMINATED"  # not an agent's
    body = api.refused(api.post("/agent/executions/prune", params={"olderThanDays": -1}), 400)
    assert [e["path"] for e in body["validationErrors"]] == ["olderThanDays"]
