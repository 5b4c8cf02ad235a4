"""/api/metadata: TaskDef and WorkflowDef registration, lookup and deletion with
Conductor's verbs, status codes and messages (docs/conductor-notes.md §1.1)."""
from __future__ import annotations

import pytest

from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db


def error(resp, status):
    assert resp.status_code == status, (resp.status_code, resp.content)
    body = resp.json()
    assert body["status"] == status
    assert body["retryable"] is False
    assert "instance" in body
    return body


# --- TaskDefs ---------------------------------------------------------------------------------------

def test_register_task_defs_list_then_get(api):
    name = unique("td")
    resp = api.post("/metadata/taskdefs", [task_def(name, retryCount=2, retryDelaySeconds=4, description="d")])
    assert resp.status_code == 200
    assert resp.content == b""
    got = api.ok(api.get(f"/metadata/taskdefs/{name}")).json()
    assert got["name"] == name
    assert got["retryCount"] == 2
    assert got["retryDelaySeconds"] == 4
    assert got["description"] == "d"
    assert got["timeoutPolicy"] == "TIME_OUT_WF"
    assert got["retryLogic"] == "FIXED"
    assert isinstance(got["createTime"], int) and got["createTime"] > 0


def test_register_task_def_fills_conductors_defaults(api):
    name = unique("td")
    api.register_task_defs({"name": name})
    got = api.ok(api.get(f"/metadata/taskdefs/{name}")).json()
    assert got["retryCount"] == 3
    assert got["retryLogic"] == "FIXED"
    assert got["retryDelaySeconds"] == 60
    assert got["responseTimeoutSeconds"] == 3600
    assert got["timeoutSeconds"] == 0
    assert got["timeoutPolicy"] == "TIME_OUT_WF"


def test_post_task_defs_is_an_upsert(api):
    name = unique("td")
    api.register_task_defs(task_def(name, retryCount=1))
    created = api.ok(api.get(f"/metadata/taskdefs/{name}")).json()["createTime"]
    resp = api.post("/metadata/taskdefs", [task_def(name, retryCount=5)])
    assert resp.status_code == 200
    got = api.ok(api.get(f"/metadata/taskdefs/{name}")).json()
    assert got["retryCount"] == 5
    assert got["createTime"] == created


def test_post_task_defs_empty_list_is_400(api):
    body = error(api.post("/metadata/taskdefs", []), 400)
    assert "TaskDefList is empty" in str(body)


def test_post_invalid_task_def_is_400_and_stores_nothing(api):
    good, bad = unique("good"), unique("bad")
    body = error(api.post("/metadata/taskdefs", [task_def(good),
                                                task_def(bad, timeoutSeconds=10, responseTimeoutSeconds=20)]), 400)
    assert body["message"] == "Validation failed, check below errors for detail."
    assert any(e["message"] == f"TaskDef: {bad} responseTimeoutSeconds: 20 must be less than timeoutSeconds: 10"
               for e in body["validationErrors"])
    assert api.get(f"/metadata/taskdefs/{good}").status_code == 404


def test_put_task_def_updates_one(api):
    name = unique("td")
    api.register_task_defs(task_def(name, retryCount=1))
    resp = api.put("/metadata/taskdefs", task_def(name, retryCount=4, responseTimeoutSeconds=30))
    assert resp.status_code == 200
    got = api.ok(api.get(f"/metadata/taskdefs/{name}")).json()
    assert (got["retryCount"], got["responseTimeoutSeconds"]) == (4, 30)


def test_put_unknown_task_def_is_404(api):
    name = unique("nope")
    body = error(api.put("/metadata/taskdefs", task_def(name)), 404)
    assert body["message"] == f"No such task by name {name}"


def test_get_unknown_task_def_is_404(api):
    body = error(api.get("/metadata/taskdefs/no_such_td"), 404)
    assert body["message"] == "No such taskType found by name: no_such_td"


def test_list_task_defs(api):
    a, b = unique("a"), unique("b")
    api.register_task_defs(task_def(a), task_def(b))
    listed = api.ok(api.get("/metadata/taskdefs")).json()
    assert isinstance(listed, list)
    assert {a, b} <= {d["name"] for d in listed}


def test_delete_task_def(api):
    name = unique("td")
    api.register_task_defs(task_def(name))
    resp = api.delete(f"/metadata/taskdefs/{name}")
    assert resp.status_code == 200
    assert resp.content == b""
    assert api.get(f"/metadata/taskdefs/{name}").status_code == 404
    body = error(api.delete(f"/metadata/taskdefs/{name}"), 404)
    assert body["message"] == "No such task definition"


# --- WorkflowDefs -------------------------------------------------------------------------------------

def wdef(name, version=1, **kw):
    return workflow_def(name, [simple_task("t1", "a")], version=version, **kw)


def test_post_workflow_def_then_get(api):
    name = unique("wf")
    resp = api.post("/metadata/workflow", wdef(name, description="first"))
    assert resp.status_code == 200
    assert resp.content == b""
    got = api.ok(api.get(f"/metadata/workflow/{name}")).json()
    assert got["name"] == name
    assert got["version"] == 1
    assert got["description"] == "first"
    assert got["tasks"][0]["taskReferenceName"] == "a"
    assert got["schemaVersion"] == 2
    assert got["timeoutPolicy"] == "ALERT_ONLY"
    assert isinstance(got["createTime"], int)


def test_post_existing_workflow_def_without_overwrite_is_409(api):
    name = unique("wf")
    api.ok(api.post("/metadata/workflow", wdef(name)))
    body = error(api.post("/metadata/workflow", wdef(name, description="again")), 409)
    assert body["message"] == f"Workflow with {name}.1 already exists!"
    body = error(api.post("/metadata/workflow", wdef(name), params={"overwrite": False}), 409)
    assert body["message"] == f"Workflow with {name}.1 already exists!"


def test_post_with_overwrite_true_replaces(api):
    name = unique("wf")
    api.ok(api.post("/metadata/workflow", wdef(name, description="v-one")))
    resp = api.post("/metadata/workflow", wdef(name, description="replaced"), params={"overwrite": True})
    assert resp.status_code == 200
    assert api.ok(api.get(f"/metadata/workflow/{name}")).json()["description"] == "replaced"


def test_put_workflow_defs_list_answers_a_bulk_response(api):
    a, b = unique("wa"), unique("wb")
    resp = api.put("/metadata/workflow", [wdef(a), wdef(b, version=3)], params={"overwrite": True})
    assert resp.status_code == 200
    assert resp.json() == {"bulkErrorResults": {}, "bulkSuccessfulResults": [a, b]}
    assert api.ok(api.get(f"/metadata/workflow/{b}", {"version": 3})).json()["version"] == 3
    # PUT is an upsert
    resp = api.put("/metadata/workflow", [wdef(a, description="updated")])
    assert resp.json() == {"bulkErrorResults": {}, "bulkSuccessfulResults": [a]}
    assert api.ok(api.get(f"/metadata/workflow/{a}")).json()["description"] == "updated"


def test_put_workflow_defs_one_invalid_fails_all(api):
    a = unique("wa")
    body = error(api.put("/metadata/workflow", [wdef(a), {"name": "", "tasks": []}]), 400)
    assert body["validationErrors"]
    assert api.get(f"/metadata/workflow/{a}").status_code == 404


def test_get_workflow_def_latest_and_by_version(api):
    name = unique("wf")
    for v in (1, 2, 3):
        api.ok(api.post("/metadata/workflow", wdef(name, version=v, description=f"v{v}")))
    assert api.ok(api.get(f"/metadata/workflow/{name}")).json()["version"] == 3
    got = api.ok(api.get(f"/metadata/workflow/{name}", {"version": 2})).json()
    assert (got["version"], got["description"]) == (2, "v2")


def test_get_unknown_workflow_def_is_404(api):
    body = error(api.get("/metadata/workflow/x_unknown"), 404)
    assert body["message"] == "No such workflow found by name: x_unknown, version: null"
    name = unique("wf")
    api.ok(api.post("/metadata/workflow", wdef(name)))
    body = error(api.get(f"/metadata/workflow/{name}", {"version": 7}), 404)
    assert body["message"] == f"No such workflow found by name: {name}, version: 7"


def test_list_workflow_defs_has_every_version(api):
    name = unique("wf")
    api.ok(api.post("/metadata/workflow", wdef(name, version=1)))
    api.ok(api.post("/metadata/workflow", wdef(name, version=2)))
    listed = api.ok(api.get("/metadata/workflow")).json()
    assert sorted(d["version"] for d in listed if d["name"] == name) == [1, 2]


def test_delete_workflow_def_version(api):
    name = unique("wf")
    api.ok(api.post("/metadata/workflow", wdef(name, version=1)))
    api.ok(api.post("/metadata/workflow", wdef(name, version=2)))
    resp = api.delete(f"/metadata/workflow/{name}/2")
    assert resp.status_code == 200
    assert resp.content == b""
    assert api.ok(api.get(f"/metadata/workflow/{name}")).json()["version"] == 1  # latest recomputed
    body = error(api.delete(f"/metadata/workflow/{name}/2"), 404)
    assert body["message"] == f"No such workflow definition: {name} version: 2"


def test_validate_endpoint(api):
    assert api.post("/metadata/workflow/validate", wdef(unique("ok"))).status_code == 200
    body = error(api.post("/metadata/workflow/validate", {"name": "", "tasks": [simple_task("t1")]}), 400)
    assert body["message"] == "Validation failed, check below errors for detail."
    assert [e["message"] for e in body["validationErrors"]] == ["WorkflowDef name cannot be null or empty"]
    assert body["validationErrors"][0]["path"].endswith(".name")


def test_validate_reports_each_field(api):
    body = error(api.post("/metadata/workflow/validate", {"name": "v", "tasks": [], "schemaVersion": 1}), 400)
    by_message = {e["message"]: e["path"] for e in body["validationErrors"]}
    assert by_message["WorkflowTask list cannot be empty"].endswith(".tasks")
    assert by_message["workflowDef schemaVersion: 2 is only supported"].endswith(".schemaVersion")


def test_register_invalid_workflow_def_is_400(api):
    body = error(api.post("/metadata/workflow", workflow_def("dups", [simple_task("t", "r"), simple_task("u", "r")])),
                 400)
    assert [e["message"] for e in body["validationErrors"]] == [
        "taskReferenceName: r should be unique across tasks for a given workflowDefinition: dups"]


def test_registration_does_not_require_task_defs(api):
    name = unique("wf")
    resp = api.post("/metadata/workflow", workflow_def(name, [simple_task(unique("never_registered"))]))
    assert resp.status_code == 200
