"""``GET /api/workflow/{id}/history``: the execution's history, camelCase, paged by seq,
Conductor's 404 body for an unknown id, 400 for bad paging, read-only role enough; the
application that acted is named in the events."""
from __future__ import annotations

from tests.auth.conftest import as_role, auth_on  # noqa: F401 - fixtures
from tests.factories import task_def, unique, workflow_def


def _flow(api):
    t = unique("hapi")
    api.register_task_defs(task_def(t))
    name = unique("hapi_wf")
    api.register_workflow(workflow_def(name, [{"name": t, "taskReferenceName": "only", "type": "SIMPLE"}]))
    return name, t


def test_history_is_served_in_seq_order_and_paged(api):
    name, t = _flow(api)
    wid = api.start(name, {"n": 1})
    api.complete(api.poll_one(t, worker_id="w-1"), {"ok": True})
    body = api.ok(api.get(f"/workflow/{wid}/history")).json()
    assert body["workflowId"] == wid and body["next"] is None
    kinds = [e["kind"] for e in body["events"]]
    assert kinds == ["workflow.started", "task.scheduled", "task.polled", "task.updated", "workflow.updated",
                     "workflow.status"]
    assert body["events"][0]["data"]["tracked"] == ["input", "output", "variables", "createTime", "correlationId"]
    # the output a completed workflow takes: what it was before, and how large it became
    assert body["events"][4]["data"] == {"fields": ["output"], "before": {"output": {}},
                                         "sizes": {"output": len('{"ok":true}')}}
    polled = body["events"][2]
    assert set(polled) == {"seq", "time", "kind", "taskId", "data"}
    assert polled["data"]["workerId"] == "w-1" and polled["data"]["ref"] == "only"
    assert body["events"][3]["data"]["outputSize"] == len('{"ok":true}')
    seqs = [e["seq"] for e in body["events"]]
    assert seqs == sorted(seqs)

    page1 = api.ok(api.get(f"/workflow/{wid}/history", {"limit": 2})).json()
    assert [e["seq"] for e in page1["events"]] == seqs[:2] and page1["next"] == seqs[1]
    page2 = api.ok(api.get(f"/workflow/{wid}/history", {"limit": 2, "after": page1["next"]})).json()
    assert [e["seq"] for e in page2["events"]] == seqs[2:4]
    page3 = api.ok(api.get(f"/workflow/{wid}/history", {"limit": 2, "after": page2["next"]})).json()
    assert [e["seq"] for e in page3["events"]] == seqs[4:] and page3["next"] is None


def test_unknown_id_and_bad_paging(api):
    r = api.get("/workflow/nope-123/history")
    assert r.status_code == 404
    body = r.json()
    assert body["status"] == 404 and body["message"] == "No such workflow found by id: nope-123"
    name, _ = _flow(api)
    wid = api.start(name)
    for params in ({"limit": 0}, {"limit": 1001}, {"after": -1}, {"limit": "x"}):
        r = api.get(f"/workflow/{wid}/history", params)
        assert r.status_code == 400, params
        assert "message" in r.json()


def test_roles_and_who_acted(as_role):  # noqa: F811
    admin = as_role("admin")
    name, t = _flow(admin)
    operator = as_role("operator")
    wid = operator.start(name)
    operator.ok(operator.delete(f"/workflow/{wid}", params={"reason": "by hand"}))
    reader = as_role("read_only")
    body = reader.ok(reader.get(f"/workflow/{wid}/history")).json()
    action = next(e for e in body["events"] if e["kind"] == "action")
    assert action["data"] == {"action": "terminate", "by": "app:app-operator", "reason": "by hand"}
    assert body["events"][0]["data"]["by"] == "app:app-operator"
    from tests.auth.conftest import TokenApi

    assert TokenApi(None).get(f"/workflow/{wid}/history").status_code == 401
