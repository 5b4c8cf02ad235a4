"""``/api/workflow/bulk/*`` and ``apps.engine.bulk.bulk_action`` (docs/conductor-notes.md
§1.3): each id through the engine service, failures collected
per id, 200 with a BulkResponse, list limits as Conductor's bean validation."""
from __future__ import annotations

import pytest

from apps.core.errors import InvalidInput
from apps.engine import bulk, executor

pytestmark = pytest.mark.django_db



def bulk_ok(resp):
    assert resp.status_code == 200, (resp.status_code, resp.content[:2000])
    body = resp.json()
    assert set(body) == {"bulkErrorResults", "bulkSuccessfulResults"}  # no "message" (never serialised)
    return body


def status_of(api, wf_id):
    return api.workflow(wf_id, include_tasks=False)["status"]


def test_pause_mixed_success_and_failure(api, flow):
    a, b = flow.start(2)
    done = flow.start(1)[0]
    # complete the oldest poll: whichever workflow it belongs to is then COMPLETED
    finished = flow.finish("COMPLETED")
    running = [w for w in (a, b, done) if w != finished]
    body = bulk_ok(api.put("/workflow/bulk/pause", [*running, finished, "no-such-id"]))
    assert body["bulkSuccessfulResults"] == running
    assert body["bulkErrorResults"] == {
        finished: f"Workflow {flow.name}.1/{finished} has ended, status cannot be updated.",
        "no-such-id": "No such workflow found by id: no-such-id",
    }
    assert [status_of(api, w) for w in running] == ["PAUSED", "PAUSED"]


def test_resume(api, flow):
    paused, running = flow.start(2)
    api.ok(api.put(f"/workflow/{paused}/pause"))
    body = bulk_ok(api.put("/workflow/bulk/resume", [paused, running]))
    assert body["bulkSuccessfulResults"] == [paused]
    assert body["bulkErrorResults"] == {
        running: f"The workflow {running} is not PAUSED so cannot resume. Current status is RUNNING"}
    assert status_of(api, paused) == "RUNNING"


def test_terminate_with_reason(api, flow):
    w1, w2, w3 = flow.start(3)
    completed = flow.finish("COMPLETED")
    others = [w for w in (w1, w2, w3) if w != completed]
    body = bulk_ok(api.post("/workflow/bulk/terminate", [*others, completed], params={"reason": "bulk stop"}))
    assert body["bulkSuccessfulResults"] == others
    assert body["bulkErrorResults"] == {completed: "Cannot terminate a COMPLETED workflow."}
    for w in others:
        wf = api.workflow(w, include_tasks=False)
        assert wf["status"] == "TERMINATED"
        assert wf["reasonForIncompletion"] == "bulk stop"


def test_remove_archives_by_default_so_running_ones_fail(api, flow):
    running = flow.start(1)[0]
    ended = flow.start(1)[0]
    api.ok(api.delete(f"/workflow/{ended}", params={"reason": "x"}))
    body = bulk_ok(api.delete("/workflow/bulk/remove", [running, ended]))
    assert body["bulkSuccessfulResults"] == [ended]
    assert body["bulkErrorResults"] == {running: f"Cannot archive workflow: {running} with status: RUNNING"}
    assert api.get(f"/workflow/{ended}").status_code == 404
    body = bulk_ok(api.delete("/workflow/bulk/remove", [running], params={"archiveWorkflow": False}))
    assert body["bulkSuccessfulResults"] == [running]
    assert api.get(f"/workflow/{running}").status_code == 404


def test_terminate_remove_records_both_steps(api, flow):
    running = flow.start(1)[0]
    body = bulk_ok(api.delete("/workflow/bulk/terminate-remove", [running, "ghost"], params={"reason": "cleanup"}))
    # Conductor appends the id once per successful step
    assert body["bulkSuccessfulResults"] == [running, running]
    assert body["bulkErrorResults"] == {"ghost": "No such workflow found by id: ghost"}
    assert api.get(f"/workflow/{running}").status_code == 404


def test_bulk_search_answers_workflows(api, flow):
    w = flow.start(1)[0]
    body = bulk_ok(api.post("/workflow/bulk/search", [w, "ghost"], params={"includeTasks": False}))
    (found,) = body["bulkSuccessfulResults"]
    assert found["workflowId"] == w and found["tasks"] == []
    assert body["bulkErrorResults"] == {"ghost": "No such workflow found by id: ghost"}
    body = bulk_ok(api.post("/workflow/bulk/search", [w]))
    assert len(body["bulkSuccessfulResults"][0]["tasks"]) == 1


def test_restart(api, flow):
    running, ended = flow.start(2)
    api.ok(api.delete(f"/workflow/{ended}"))
    body = bulk_ok(api.post("/workflow/bulk/restart", [ended, running], params={"useLatestDefinitions": True}))
    assert body["bulkSuccessfulResults"] == [ended]
    assert body["bulkErrorResults"] == {running: f"Workflow: {running} is not in terminal state, unable to restart."}
    assert status_of(api, ended) == "RUNNING"


def test_retry(api, flow):
    w1, w2 = flow.start(2)
    failed = flow.finish("FAILED")
    running = w2 if failed == w1 else w1
    assert status_of(api, failed) == "FAILED"
    body = bulk_ok(api.post("/workflow/bulk/retry", [failed, running]))
    assert body["bulkSuccessfulResults"] == [failed]
    assert body["bulkErrorResults"] == {running: "Workflow is still running.  status=RUNNING"}
    wf = api.workflow(failed)
    assert wf["status"] == "RUNNING"
    assert [t["status"] for t in wf["tasks"]] == ["FAILED", "SCHEDULED"]


def test_an_empty_or_missing_list_is_conductors_validation_400(api):
    for raw in ("[]", ""):
        resp = api.put("/workflow/bulk/pause", raw=raw)
        assert resp.status_code == 400, raw
        body = resp.json()
        assert body["message"] == "Validation failed, check below errors for detail."
        assert body["validationErrors"] == [{"path": "pauseWorkflow.arg0", "message": "WorkflowIds list cannot be null."}]


def test_more_than_1000_ids_is_400(api):
    resp = api.post("/workflow/bulk/terminate", [f"id-{i}" for i in range(1001)])
    assert resp.status_code == 400
    assert resp.json()["validationErrors"] == [{
        "path": "terminate.arg0", "message": "Cannot process more than 1000 workflows. Please use multiple requests."}]


def test_exactly_1000_ids_are_processed(api):
    body = bulk_ok(api.put("/workflow/bulk/pause", [f"id-{i}" for i in range(1000)]))
    assert body["bulkSuccessfulResults"] == []
    assert len(body["bulkErrorResults"]) == 1000


@pytest.mark.parametrize("raw", ['{"ids": ["a"]}', '"a"', "not json", "[1, {}]"])
def test_a_body_that_is_not_a_list_of_ids_is_400(api, raw):
    assert api.put("/workflow/bulk/pause", raw=raw).status_code == 400


@pytest.mark.parametrize("method, path", [("post", "pause"), ("put", "retry"), ("get", "terminate"), ("post", "remove")])
def test_wrong_method_is_405(api, method, path):
    kwargs = {} if method == "get" else {"data": '["x"]', "content_type": "application/json"}
    resp = getattr(api.client, method)(f"/api/workflow/bulk/{path}", **kwargs)
    assert resp.status_code == 405
    assert resp.json()["status"] == 405


def test_bulk_routes_win_over_the_workflow_id_routes(api):
    # /workflow/{id}/pause would take "bulk" as an id
    body = bulk_ok(api.put("/workflow/bulk/pause", ["x"]))
    assert body["bulkErrorResults"] == {"x": "No such workflow found by id: x"}


# --- the service (what the UI reuses) ---------------------------------------------------------------

def test_bulk_action_service(api, flow):
    a, b = flow.start(2)
    out = bulk.bulk_action("terminate", [a, b, a], reason="svc", trigger_failure_workflow=False)
    assert out == {"bulkErrorResults": {}, "bulkSuccessfulResults": [a, b, a]}  # TERMINATED again is a no-op
    with pytest.raises(InvalidInput, match="Unknown bulk action"):
        bulk.bulk_action("explode", [a])
    with pytest.raises(InvalidInput):
        bulk.bulk_action("pause", [])


def test_unexpected_errors_are_recorded_per_id(api, flow, monkeypatch):
    a, b = flow.start(2)

    def flaky(*, workflow_id):
        if workflow_id == a:
            raise RuntimeError("disk on fire")
        return real(workflow_id=workflow_id)

    real = executor.workflow_pause
    monkeypatch.setattr(executor, "workflow_pause", flaky)
    out = bulk.bulk_action("pause", [a, b])
    assert out == {"bulkErrorResults": {a: "disk on fire"}, "bulkSuccessfulResults": [b]}
