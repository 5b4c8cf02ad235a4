"""``GET /api/workflow/search(-v2)``, ``/workflow/search-by-tasks(-v2)``,
``/api/tasks/search(-v2)`` and the ``workflow_search``/``task_search`` selectors
(docs/conductor-notes.md §1.2, §1.4, §2.6)."""
from __future__ import annotations

import re

import pytest

from apps.core.errors import InvalidInput
from apps.engine import search
from tests.factories import simple_task, task_def, unique, workflow_def
from tests.search.builders import T0, make_task, make_workflow

pytestmark = pytest.mark.django_db

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def search_ok(api, path="/workflow/search", **params):
    resp = api.get(path, params)
    assert resp.status_code == 200, (resp.status_code, resp.content[:2000])
    body = resp.json()
    assert set(body) >= {"totalHits", "results"}
    return body


def ids(body):
    return [r["workflowId"] for r in body["results"]]


@pytest.fixture
def fleet(db):
    """Six executions of two workflow types, one minute apart (oldest first)."""
    wfs = {
        "o1": make_workflow("order", status="COMPLETED", create_time=T0, end_time=T0 + 5_000,
                            correlation_id="cust-1", input={"orderId": "A-1", "note": "Crème brûlée"},
                            output={"total": 10}),
        "o2": make_workflow("order", status="FAILED", create_time=T0 + 60_000, end_time=T0 + 70_000,
                            correlation_id="cust-2", input={"orderId": "QA-2"}, reason="payment declined"),
        "o3": make_workflow("order", status="RUNNING", create_time=T0 + 120_000, correlation_id="cust-1",
                            input={"orderId": "B-3", "quote": 'say "hi"'}),
        "s1": make_workflow("shipping", status="RUNNING", create_time=T0 + 180_000, correlation_id="cust-3",
                            version=2, input={"carrier": "ups"}),
        "s2": make_workflow("shipping", status="PAUSED", create_time=T0 + 240_000, correlation_id=None),
        "s3": make_workflow("shipping", status="TERMINATED", create_time=T0 + 300_000, end_time=T0 + 310_000,
                            reason="manual stop", output={"trackingId": "ZZ-9"}),
    }
    wfs["child"] = make_workflow("shipping_child", status="RUNNING", create_time=T0 + 360_000,
                                 parent_workflow_id=wfs["s1"].workflow_id)
    return {k: w.workflow_id for k, w in wfs.items()}


# --- workflow search ------------------------------------------------------------------------------

def test_everything_newest_first_with_total_hits(api, fleet):
    body = search_ok(api)
    assert body["totalHits"] == 7
    assert ids(body) == [fleet[k] for k in ("child", "s3", "s2", "s1", "o3", "o2", "o1")]


def test_sdk_style_query_by_correlation_id_and_status_in(api, fleet):
    body = search_ok(api, queryId="", start=0, size=10, freeText="*", query="correlationId='cust-1'")
    assert sorted(ids(body)) == sorted([fleet["o1"], fleet["o3"]])
    body = search_ok(api, query="status IN (RUNNING,PAUSED)")
    assert set(ids(body)) == {fleet["o3"], fleet["s1"], fleet["s2"], fleet["child"]}


def test_workflow_type_and_status(api, fleet):
    body = search_ok(api, query='workflowType="order" AND status="RUNNING"')
    assert ids(body) == [fleet["o3"]]
    assert body["totalHits"] == 1


def test_wildcard_in_equals(api, fleet):
    body = search_ok(api, query="workflowType = ship*")
    assert set(ids(body)) == {fleet["s1"], fleet["s2"], fleet["s3"], fleet["child"]}
    body = search_ok(api, query="workflowType = *_CHILD")  # case-insensitive, like the SQLite DAO
    assert ids(body) == [fleet["child"]]


def test_time_range_in_epoch_ms(api, fleet):
    body = search_ok(api, query=f"startTime > {T0 + 60_000} AND startTime < {T0 + 300_000}")
    assert ids(body) == [fleet["s2"], fleet["s1"], fleet["o3"]]
    body = search_ok(api, query=f"endTime > {T0 + 60_000}")
    assert set(ids(body)) == {fleet["o2"], fleet["s3"]}


def test_parent_workflow_id_and_top_level_only(api, fleet):
    assert ids(search_ok(api, query=f"parentWorkflowId = {fleet['s1']}")) == [fleet["child"]]
    body = search_ok(api, topLevelOnly="true")
    assert fleet["child"] not in ids(body) and body["totalHits"] == 6


def test_unknown_fields_are_ignored(api, fleet):
    body = search_ok(api, query="nonsense = 1 AND workflowType = order")
    assert body["totalHits"] == 3


def test_malformed_query_is_400(api, fleet):
    resp = api.get("/workflow/search", {"query": "workflowType"})
    assert resp.status_code == 400
    assert resp.json()["message"] == "Incorrectly formatted query string: workflowType"


@pytest.mark.parametrize("text, expected", [
    ("qa-2", ["o2"]),                     # input JSON, case-insensitive (not hex: ids are searched too)
    ("PAYMENT DECLINED", ["o2"]),         # reasonForIncompletion
    ("zz-9", ["s3"]),                     # output JSON
    ("cust-3", ["s1"]),                   # correlationId
    ("brûlée", ["o1"]),                   # non-ASCII inside JSON
    ('say "hi"', ["o3"]),                 # quotes are escaped inside JSON text
    ("*", None),
    ("no-such-thing", []),
])
def test_free_text(api, fleet, text, expected):
    body = search_ok(api, freeText=text)
    if expected is None:
        assert body["totalHits"] == 7
    else:
        assert sorted(ids(body)) == sorted(fleet[k] for k in expected)
        assert body["totalHits"] == len(expected)


def test_free_text_matches_the_workflow_id(api, fleet):
    body = search_ok(api, freeText=fleet["s2"][:13])
    assert ids(body) == [fleet["s2"]]


def test_sort_and_multiple_sort_keys(api, fleet):
    body = search_ok(api, sort="startTime:ASC", query="workflowType = order")
    assert ids(body) == [fleet["o1"], fleet["o2"], fleet["o3"]]
    body = search_ok(api, sort="workflowType:DESC|startTime:ASC", size=3)
    assert ids(body) == [fleet["child"], fleet["s1"], fleet["s2"]]
    # repeated sort parameters work too
    resp = api.client.get("/api/workflow/search?sort=workflowType:ASC&sort=startTime:DESC&size=2")
    assert [r["workflowId"] for r in resp.json()["results"]] == [fleet["o3"], fleet["o2"]]


def test_paging_with_start_and_size(api, fleet):
    pages = [search_ok(api, start=start, size=3, sort="startTime:ASC") for start in (0, 3, 6, 9)]
    assert [p["totalHits"] for p in pages] == [7, 7, 7, 7]
    assert [len(p["results"]) for p in pages] == [3, 3, 1, 0]
    seen = [i for p in pages for i in ids(p)]
    assert seen == [fleet[k] for k in ("o1", "o2", "o3", "s1", "s2", "s3", "child")]


def test_size_zero_counts_only(api, fleet):
    body = search_ok(api, size=0)
    assert body == {"totalHits": 7, "results": []}


def test_size_above_5000_is_conductors_validation_400(api, fleet):
    resp = api.get("/workflow/search", {"size": 5001})
    assert resp.status_code == 400
    body = resp.json()
    assert body["message"] == "Validation failed, check below errors for detail."
    assert body["validationErrors"] == [{"path": "searchWorkflows.arg1", "invalidValue": "5001",
                                         "message": "Cannot return more than 5000 workflows. Please use pagination."}]
    assert search_ok(api, size=5000)["totalHits"] == 7
    resp = api.get("/workflow/search-v2", {"size": 6000})
    assert resp.status_code == 400
    assert resp.json()["validationErrors"][0]["path"] == "searchWorkflowsV2.arg1"


@pytest.mark.parametrize("params", [{"size": "many"}, {"start": -1}, {"size": -5}])
def test_bad_paging_is_400(api, fleet, params):
    assert api.get("/workflow/search", params).status_code == 400


def test_query_id_is_echoed(api, fleet):
    assert search_ok(api, queryId="q-42")["queryId"] == "q-42"
    assert "queryId" not in search_ok(api, queryId="")


def test_workflow_summary_shape(api, fleet):
    body = search_ok(api, query=f"workflowId = {fleet['o1']}")
    (s,) = body["results"]
    assert s["workflowType"] == "order"
    assert s["version"] == 1
    assert s["workflowId"] == fleet["o1"]
    assert s["correlationId"] == "cust-1"
    assert s["status"] == "COMPLETED"
    assert s["startTime"] == "2023-11-14T22:13:20.000Z"
    assert s["endTime"] == "2023-11-14T22:13:25.000Z"
    assert ISO.match(s["updateTime"])
    assert s["executionTime"] == 5000
    assert isinstance(s["input"], str) and "A-1" in s["input"]
    assert isinstance(s["output"], str)
    assert s["failedReferenceTaskNames"] == ""
    assert s["parentWorkflowId"] == ""
    running = search_ok(api, query=f"workflowId = {fleet['o3']}")["results"][0]
    assert "endTime" not in running and running["executionTime"] == 0


def test_search_v2_answers_workflows_without_tasks(api, fleet):
    body = search_ok(api, "/workflow/search-v2", query="workflowType = shipping", sort="startTime:ASC")
    assert body["totalHits"] == 3
    first = body["results"][0]
    assert first["workflowId"] == fleet["s1"]
    assert first["tasks"] == []
    assert first["startTime"] == T0 + 180_000  # epoch ms, not text
    assert first["workflowVersion"] == 2
    assert first["workflowDefinition"]["name"] == "shipping"
    assert first["input"] == {"carrier": "ups"}


def test_classifier_filter(api, db):
    agent = make_workflow("agentic", definition={"name": "agentic", "version": 1, "tasks": [],
                                                  "metadata": {"classifier": "agent"}})
    plain = make_workflow("plain")
    assert ids(search_ok(api, classifier="agent")) == [agent.workflow_id]
    assert ids(search_ok(api, classifier="workflow")) == [plain.workflow_id]
    assert set(ids(search_ok(api, classifier="agent,workflow"))) == {agent.workflow_id, plain.workflow_id}


def test_a_started_workflow_is_found_by_the_api(api):
    name = unique("searchable")
    api.register_task_defs(task_def(f"{name}_t"))
    api.register_workflow(workflow_def(name, [simple_task(f"{name}_t", "t")]))
    wf_id = api.start(name, {"orderId": "Q-77"}, correlationId="corr-77")
    body = search_ok(api, query=f'workflowType="{name}" AND status="RUNNING"', freeText="q-77")
    assert ids(body) == [wf_id]


# --- the selector (what the UI calls) ------------------------------------------------------------------

def test_selector_with_filterset_filters(fleet):
    total, rows = search.workflow_search(workflowType=["order", "shipping"], status="running,paused",
                                         startTimeFrom=T0 + 100_000, sort="startTime:ASC")
    assert total == 3
    assert [w.workflow_id for w in rows] == [fleet["o3"], fleet["s1"], fleet["s2"]]
    assert all(w.definition == {} for w in rows)
    total, rows = search.workflow_search(query="workflowType = order", correlationId=["cust-1"], with_definition=True)
    assert total == 2 and rows[0].definition["name"] == "order"
    total, _ = search.workflow_search(topLevelOnly=True, endTimeTo=T0 + 70_000)
    assert total == 2


def test_selector_rejects_unknown_and_invalid_filters(fleet):
    with pytest.raises(InvalidInput, match="Unknown search filter"):
        search.workflow_search(colour="blue")
    with pytest.raises(InvalidInput) as exc:
        search.workflow_search(startTimeFrom="yesterday")
    assert exc.value.validation_errors[0]["path"] == "startTimeFrom"


# --- search by tasks ---------------------------------------------------------------------------------

def test_search_by_tasks(api, fleet):
    from apps.engine.models import WorkflowExecution

    o2 = WorkflowExecution.objects.get(pk=fleet["o2"])
    s1 = WorkflowExecution.objects.get(pk=fleet["s1"])
    make_task(o2, task_def_name="charge", status="FAILED", reason="card expired")
    make_task(o2, task_def_name="charge", status="FAILED", reason="card expired", retry_count=1)
    make_task(s1, task_def_name="label", status="IN_PROGRESS")
    body = search_ok(api, "/workflow/search-by-tasks", query="taskType = charge AND status = FAILED")
    assert ids(body) == [fleet["o2"]] and body["totalHits"] == 1
    assert body["results"][0]["workflowType"] == "order"
    body = search_ok(api, "/workflow/search-by-tasks-v2", freeText="*")
    assert ids(body) == [fleet["s1"], fleet["o2"]]
    assert body["results"][0]["tasks"] == []


# --- task search ------------------------------------------------------------------------------------

@pytest.fixture
def tasks(fleet):
    from apps.engine.models import WorkflowExecution

    o1 = WorkflowExecution.objects.get(pk=fleet["o1"])
    o3 = WorkflowExecution.objects.get(pk=fleet["o3"])
    return {
        "charge": make_task(o1, task_def_name="charge", ref="charge_ref", status="COMPLETED", scheduled_time=T0,
                            start_time=T0 + 100, end_time=T0 + 1_600, output_data={"receipt": "R-1"},
                            worker_id="w-1", input_data={"amount": 10}),
        "ship": make_task(o1, task_def_name="ship", ref="ship_ref", status="COMPLETED", scheduled_time=T0 + 2_000,
                          start_time=T0 + 2_500, end_time=T0 + 3_000),
        "http": make_task(o3, task_def_name="notify", task_type="HTTP", ref="notify_ref", status="IN_PROGRESS",
                          scheduled_time=T0 + 121_000, start_time=T0 + 121_000),
        "charge3": make_task(o3, task_def_name="charge", ref="charge_ref", status="SCHEDULED",
                             scheduled_time=T0 + 122_000),
    }


def tids(body):
    return [r["taskId"] for r in body["results"]]


def test_task_search_by_type_name_status_and_workflow(api, fleet, tasks):
    body = search_ok(api, "/tasks/search", query="taskType = charge")
    assert tids(body) == [tasks["charge3"].task_id, tasks["charge"].task_id]
    body = search_ok(api, "/tasks/search", query="taskType IN (HTTP,ship)", sort="scheduledTime:ASC")
    assert tids(body) == [tasks["ship"].task_id, tasks["http"].task_id]
    body = search_ok(api, "/tasks/search", query=f"workflowId = {fleet['o1']} AND status = COMPLETED")
    assert body["totalHits"] == 2
    body = search_ok(api, "/tasks/search", query="referenceTaskName = notify_ref")
    assert tids(body) == [tasks["http"].task_id]
    body = search_ok(api, "/tasks/search", query="correlationId = cust-1")
    assert body["totalHits"] == 4
    body = search_ok(api, "/tasks/search", query=f"startTime > {T0 + 2_000}", sort="startTime:ASC")
    assert tids(body) == [tasks["ship"].task_id, tasks["http"].task_id]


def test_task_search_free_text_and_paging(api, tasks):
    assert tids(search_ok(api, "/tasks/search", freeText="r-1")) == [tasks["charge"].task_id]
    body = search_ok(api, "/tasks/search", size=1, start=1, sort="scheduledTime:ASC")
    assert body["totalHits"] == 4 and tids(body) == [tasks["ship"].task_id]


def test_task_summary_shape(api, fleet, tasks):
    (s,) = search_ok(api, "/tasks/search", query=f"taskId = {tasks['charge'].task_id}")["results"]
    assert s["taskId"] == tasks["charge"].task_id
    assert s["workflowId"] == fleet["o1"]
    assert s["workflowType"] == "order"
    assert s["correlationId"] == "cust-1"
    assert s["taskType"] == "charge"  # Conductor: a SIMPLE task's type is its name
    assert s["taskDefName"] == "charge"
    assert s["status"] == "COMPLETED"
    assert s["scheduledTime"] == "2023-11-14T22:13:20.000Z"
    assert s["startTime"] == "2023-11-14T22:13:20.100Z"
    assert s["endTime"] == "2023-11-14T22:13:21.600Z"
    assert s["executionTime"] == 1500
    assert s["queueWaitTime"] == 100
    assert s["input"] == '{"amount": 10}' and '"R-1"' in s["output"]
    (pending,) = search_ok(api, "/tasks/search", query=f"taskId = {tasks['charge3'].task_id}")["results"]
    assert pending["startTime"] == "1970-01-01T00:00:00.000Z"
    assert pending["endTime"] == "1970-01-01T00:00:00.000Z"
    assert pending["executionTime"] == 0


def test_task_search_v2_answers_task_json_with_workflow_task(api, tasks):
    body = search_ok(api, "/tasks/search-v2", query="taskType = charge", sort="scheduledTime:ASC")
    first = body["results"][0]
    assert first["taskId"] == tasks["charge"].task_id
    assert first["startTime"] == T0 + 100
    assert first["outputData"] == {"receipt": "R-1"}
    assert first["workflowInstanceId"] == tasks["charge"].workflow_id
    assert first["correlationId"] == "cust-1"


def test_task_search_size_cap(api, tasks):
    resp = api.get("/tasks/search", {"size": 5001})
    assert resp.status_code == 400
    assert resp.json()["validationErrors"][0]["message"] == "Cannot return more than 5000 tasks. Please use pagination."


def test_task_selector_filters(tasks):
    total, hits = search.task_search(taskType=["charge"], status=["scheduled"])
    assert total == 1 and hits[0].task.task_id == tasks["charge3"].task_id
    assert hits[0].correlation_id == "cust-1"
    total, _ = search.task_search(startTimeFrom=T0 + 2_000, startTimeTo=T0 + 130_000)
    assert total == 2
