"""The problem views (issue #31) through the UI's HTTP endpoints: status counts and
one-click views, saved views, exports, the search as code, "why is it stuck?", the run
grid and the human-task inbox, with the read-only user seeing and never acting."""
from __future__ import annotations

import csv
import io
import json

import pytest

from apps.engine import executor, queue
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.metadata import services
from apps.problems import durations
from apps.problems.models import SavedView
from apps.ui.models import AuditLog
from tests.factories import task_def, unique, workflow_def

pytestmark = pytest.mark.django_db


def start(name: str, **input) -> str:
    return executor.workflow_start(name=name, version=None, input=input or {"x": 1})


def fail_first(name: str, reason: str) -> str:
    """Start ``name`` and fail its first task (no retries): a FAILED execution."""
    wf = start(name)
    task = queue.task_poll(task_type=f"{name}_a", worker_id="w-fail")[0]
    executor.task_update(task_result={"workflowInstanceId": wf, "taskId": task.task_id, "status": "FAILED_WITH_TERMINAL_ERROR",
                                      "reasonForIncompletion": reason})
    return wf


def test_counts_views_and_sort(viewer_client, chain):
    failed = fail_first(chain, "card declined")
    running = [start(chain) for _ in range(2)]
    page = viewer_client.get("/executions/", {"name": chain}).content.decode()
    assert 'data-status="FAILED" data-count="1"' in page
    assert 'data-status="RUNNING" data-count="2"' in page
    # a count is for the query without its status: choosing FAILED still counts the running ones
    page = viewer_client.get("/executions/", {"name": chain, "status": "FAILED"}).content.decode()
    assert 'data-status="RUNNING" data-count="2"' in page and failed in page and running[0] not in page
    page = viewer_client.get("/executions/", {"status": "FAILED"}).content.decode()
    assert failed in page and 'class="quick on" data-view="failed"' in page
    page = viewer_client.get("/executions/", {"since": "1h"}).content.decode()
    assert failed in page and running[1] in page
    assert "since must be one of" in viewer_client.get("/executions/", {"since": "2d"}).content.decode()


def test_slow_view_uses_the_p95_of_completed_runs(viewer_client, chain):
    durations.forget()
    done = []
    for _ in range(6):
        wf = start(chain)
        for ref in ("a", "b"):
            t = queue.task_poll(task_type=f"{chain}_{ref}", worker_id="w")[0]
            executor.task_update(task_result={"workflowInstanceId": wf, "taskId": t.task_id, "status": "COMPLETED"})
        done.append(wf)
    WorkflowExecution.objects.filter(pk__in=done).update(end_time=models_f_plus("create_time", 1000))
    slow, fresh = start(chain), start(chain)
    WorkflowExecution.objects.filter(pk=slow).update(create_time=models_f_plus("create_time", -60_000))
    durations.forget()
    page = viewer_client.get("/executions/", {"slow": "1"}).content.decode()
    assert slow in page and fresh not in page
    assert all(d not in page for d in done)


def models_f_plus(column: str, ms: int):
    from django.db.models import F

    return F(column) + ms


def test_saved_views_by_name_and_only_operators_save(viewer_client, operator, chain, client):
    from django.test import Client

    fail_first(chain, "boom")
    assert 'id="save-view-form"' not in viewer_client.get("/executions/").content.decode()
    resp = viewer_client.post("/executions/views/save", {"view_name": "mine", "q": "status=FAILED"})
    assert resp.status_code == 403 and not SavedView.objects.exists()
    op = Client()
    op.force_login(operator)
    assert 'id="save-view-form"' in op.get("/executions/").content.decode()
    resp = op.post("/executions/views/save", {"view_name": "failed orders", "q": f"status=FAILED&name={chain}&page=3"})
    assert resp.status_code == 302 and resp["Location"] == "/executions/view/failed%20orders"
    row = SavedView.objects.get(name="failed orders")
    assert "page" not in row.query and "status=FAILED" in row.query
    resp = viewer_client.get("/executions/view/failed orders")
    assert resp.status_code == 302 and "status=FAILED" in resp["Location"] and "saved=failed+orders" in resp["Location"]
    page = viewer_client.get(resp["Location"]).content.decode()
    assert 'data-saved="failed orders"' in page
    assert viewer_client.get("/executions/view/nope").status_code == 404
    assert op.post("/executions/view/failed orders/delete").status_code == 302
    assert not SavedView.objects.exists()
    assert AuditLog.objects.filter(action__in=["save_view", "delete_view"]).count() == 2


def test_exports_stream_every_match_in_order(viewer_client, chain):
    ids = [start(chain) for _ in range(3)]
    resp = viewer_client.get("/executions/export.ids", {"name": chain, "sort": "id"})
    assert resp.streaming
    got = b"".join(resp.streaming_content).decode().split()
    assert got == sorted(ids)
    rows = list(csv.DictReader(io.StringIO(b"".join(
        viewer_client.get("/executions/export.csv", {"name": chain}).streaming_content).decode())))
    assert {r["workflowId"] for r in rows} == set(ids) and rows[0]["status"] == "RUNNING"
    data = json.loads(b"".join(viewer_client.get("/executions/export.json", {"name": chain, "status": "FAILED"})
                               .streaming_content))
    assert data == []
    assert viewer_client.get("/executions/export.xml").status_code == 404


def test_export_reads_in_keyset_batches(viewer_client, chain, monkeypatch):
    from apps.problems import listing

    monkeypatch.setattr(listing, "EXPORT_BATCH", 2)
    ids = [start(chain) for _ in range(5)]
    got = b"".join(viewer_client.get("/executions/export.ids", {"name": chain, "sort": "-id"})
                   .streaming_content).decode().split()
    assert got == sorted(ids, reverse=True)


def test_search_as_code_runs_against_the_api(viewer_client, chain):
    from apps.engine import search
    from apps.problems import listing
    from apps.ui.selectors import SearchQuery
    from django.http import QueryDict

    failed = fail_first(chain, "x")
    start(chain)
    query = SearchQuery.from_querydict(QueryDict(f"name={chain}&status=FAILED&since=today"))
    text, free, missing = listing.conductor_query(query)
    assert missing == [] and f"workflowType IN ({chain})" in text and "status IN (FAILED)" in text
    total, rows = search.workflow_search(query=text, free_text=free, start=0, size=10)
    assert total == 1 and rows[0].workflow_id == failed
    page = viewer_client.get("/executions/", {"name": chain, "status": "FAILED"}).content.decode()
    assert "curl -G" in page and "get_workflow_client().search(" in page and "conductor workflow search" in page


def _stuck_setup(name: str) -> str:
    services.task_defs_register(task_defs=[task_def(f"{name}_t", retryCount=2)])
    services.workflow_def_register(workflow_def=workflow_def(name, [
        {"name": f"{name}_t", "taskReferenceName": "work", "type": "SIMPLE"}]), overwrite=True)
    return start(name)


def test_stuck_panel_warns_when_no_worker_polls(viewer_client):
    name = unique("stuck")
    wf = _stuck_setup(name)
    page = viewer_client.get(f"/execution/{wf}").content.decode()
    assert 'id="stuck-panel"' in page and "No worker has ever polled the queue" in page
    assert "Attempt" in page and "(2 retries left)" in page
    # the stuck view lists it; the queues page links to it
    assert wf in viewer_client.get("/executions/", {"stuck": "1"}).content.decode()
    assert "?stuck=1" in viewer_client.get("/queues/").content.decode()
    # a worker polls, takes it and fails it: the retry's panel shows the error and the worker
    t = queue.task_poll(task_type=f"{name}_t", worker_id="host-7")[0]
    executor.task_update(task_result={"workflowInstanceId": wf, "taskId": t.task_id, "status": "FAILED",
                                      "reasonForIncompletion": "disk full"})
    panel = viewer_client.get(f"/execution/{wf}/stuck").content.decode()
    assert "disk full" in panel and "host-7" in panel and "(1 retry left)" in panel
    assert "No worker has ever polled" not in panel
    assert wf not in viewer_client.get("/executions/", {"stuck": "1"}).content.decode()
    assert viewer_client.get("/execution/nope/stuck").status_code == 404


def test_run_grid(viewer_client, chain):
    failed = fail_first(chain, "bad")
    running = start(chain)
    page = viewer_client.get(f"/definitions/{chain}/grid").content.decode()
    assert f'data-workflow-id="{failed}"' in page and f'data-workflow-id="{running}"' in page
    assert page.index(failed) < page.index(f'data-workflow-id="{running}"')  # oldest first
    assert 'data-ref="a"' in page and 'data-status="FAILED_WITH_TERMINAL_ERROR"' in page
    assert 'id="failure-rate">100 %' in page
    assert 'data-rolling="100"' in page  # the failed run, then the running one: the ended one failed
    assert viewer_client.get("/definitions/no_such_thing/grid").status_code == 404


def _human_setup(name: str, schema: dict | None) -> str:
    td = task_def(f"{name}_approve")
    if schema:
        td["outputSchema"] = {"data": schema, "type": "JSON"}
    services.task_defs_register(task_defs=[td])
    services.workflow_def_register(workflow_def=workflow_def(name, [
        {"name": f"{name}_approve", "taskReferenceName": "approve", "type": "HUMAN",
         "inputParameters": {"assignee": "${workflow.input.who}"}}]), overwrite=True)
    return executor.workflow_start(name=name, version=None, input={"who": "alice"})


def test_inbox_lists_filters_and_completes_with_a_schema_form(viewer_client, operator):
    from django.test import Client

    name = unique("human")
    schema = {"type": "object", "required": ["approved"],
              "properties": {"approved": {"type": "boolean"}, "amount": {"type": "integer"},
                             "note": {"type": "string"}}}
    wf = _human_setup(name, schema)
    other = _human_setup(name, schema)
    TaskExecution.objects.filter(workflow_id=other).update(input_data={"assignee": "bob"})
    page = viewer_client.get("/inbox/", {"workflow": name}).content.decode()
    assert wf in page and other in page and 'name="field.amount"' not in page  # read-only: no form
    page = viewer_client.get("/inbox/", {"field": "assignee", "value": "alice"}).content.decode()
    assert wf in page and other not in page
    assert wf not in viewer_client.get("/inbox/", {"ref": "other_ref"}).content.decode()
    assert wf in viewer_client.get("/inbox/", {"ref": "approve"}).content.decode()
    task = TaskExecution.objects.get(workflow_id=wf, reference_task_name="approve")
    assert viewer_client.post(f"/inbox/{task.task_id}/complete", {"field.approved": "on"}).status_code == 403
    op = Client()
    op.force_login(operator)
    assert 'name="field.amount"' in op.get("/inbox/").content.decode()
    resp = op.post(f"/inbox/{task.task_id}/complete", {"field.approved": "on", "field.amount": "x"}, follow=True)
    assert "not a valid integer" in resp.content.decode()
    assert TaskExecution.objects.get(pk=task.task_id).status == "IN_PROGRESS"
    op.post(f"/inbox/{task.task_id}/complete", {"field.approved": "on", "field.amount": "12", "outcome": "COMPLETED"})
    task.refresh_from_db()
    assert task.status == "COMPLETED" and task.output_data == {"approved": True, "amount": 12}
    assert WorkflowExecution.objects.get(pk=wf).status == "COMPLETED"
    assert AuditLog.objects.filter(action="complete_task", target=wf, ok=True).exists()


def test_inbox_json_box_without_schema_and_fail(operator_client):
    name = unique("human")
    wf = _human_setup(name, None)
    task = TaskExecution.objects.get(workflow_id=wf, reference_task_name="approve")
    assert 'name="output_json"' in operator_client.get("/inbox/").content.decode()
    resp = operator_client.post(f"/inbox/{task.task_id}/complete", {"output_json": "[1]"}, follow=True)
    assert "must be a JSON object" in resp.content.decode()
    operator_client.post(f"/inbox/{task.task_id}/complete", {"outcome": "FAILED", "reason": "no budget"})
    task.refresh_from_db()
    assert task.status == "FAILED" and task.reason_for_incompletion == "no budget"


def test_inbox_refuses_a_field_name_that_is_not_a_key_path(viewer_client):
    name = unique("human")
    wf = _human_setup(name, None)
    TaskExecution.objects.filter(workflow_id=wf).update(input_data={"who": {"team": "ops"}})
    assert wf in viewer_client.get("/inbox/", {"field": "who.team", "value": "ops"}).content.decode()
    resp = viewer_client.get("/inbox/", {"field": "who__contains", "value": "x"})
    assert resp.status_code == 200 and "Invalid input field name" in resp.content.decode()


def test_status_counts_stop_at_the_cap(viewer_client, chain, monkeypatch):
    from apps.problems import listing

    monkeypatch.setattr(listing, "COUNT_CAP", 2)
    for _ in range(3):
        start(chain)
    page = viewer_client.get("/executions/", {"name": chain}).content.decode()
    assert 'data-status="RUNNING" data-count="3"' in page and ">2+<" in page and "more than 2 in all" in page


def test_inbox_lists_wait_tasks_waiting_for_a_signal_not_timers(viewer_client, operator_client):
    name = unique("waits")
    services.workflow_def_register(workflow_def=workflow_def(name, [
        {"name": "signal", "taskReferenceName": "signal", "type": "WAIT"}]), overwrite=True)
    timer = unique("timer")
    services.workflow_def_register(workflow_def=workflow_def(timer, [
        {"name": "nap", "taskReferenceName": "nap", "type": "WAIT", "inputParameters": {"duration": "1 hour"}}]),
        overwrite=True)
    wf = executor.workflow_start(name=name, version=None, input={})
    napping = executor.workflow_start(name=timer, version=None, input={})
    page = viewer_client.get("/inbox/").content.decode()
    assert wf in page and napping not in page
    task = TaskExecution.objects.get(workflow_id=wf, reference_task_name="signal")
    operator_client.post(f"/inbox/{task.task_id}/complete", {"output_json": '{"ok": true}'})
    assert WorkflowExecution.objects.get(pk=wf).status == "COMPLETED"


def test_stuck_panel_warns_when_the_worker_holding_a_task_stopped_polling(viewer_client):
    from apps.engine.models import PollData

    name = unique("held")
    wf = _stuck_setup(name)
    queue.task_poll(task_type=f"{name}_t", worker_id="host-9")
    panel = viewer_client.get(f"/execution/{wf}/stuck").content.decode()
    assert "Held by worker host-9" in panel and "may be gone" not in panel
    PollData.objects.filter(queue_name=f"{name}_t").update(last_poll_time=1)
    panel = viewer_client.get(f"/execution/{wf}/stuck").content.decode()
    assert "that worker has not polled for" in panel and 'data-level="warn"' in panel


def test_inbox_form_and_stuck_retries_read_an_inline_task_definition(operator_client):
    """A task made from its definition stores no WorkflowTask of its own: the inbox's
    form and the stuck panel's retries read the inline ``taskDefinition`` from the
    execution's definition snapshot."""
    name = unique("inline")
    schema = {"type": "object", "properties": {"approved": {"type": "boolean"}}}
    services.workflow_def_register(workflow_def=workflow_def(name, [
        {"name": f"{name}_approve", "taskReferenceName": "approve", "type": "HUMAN",
         "taskDefinition": {"name": f"{name}_approve", "outputSchema": {"type": "JSON", "data": schema}}},
        ]), overwrite=True)
    wf = start(name)
    assert 'name="field.approved"' in operator_client.get("/inbox/", {"workflow": name}).content.decode()
    task = TaskExecution.objects.get(workflow_id=wf, reference_task_name="approve")
    operator_client.post(f"/inbox/{task.task_id}/complete", {"field.approved": "on"})
    assert TaskExecution.objects.get(pk=task.task_id).output_data == {"approved": True}
    stuck = unique("inline_stuck")
    services.workflow_def_register(workflow_def=workflow_def(stuck, [
        {"name": f"{stuck}_t", "taskReferenceName": "work", "type": "SIMPLE",
         "taskDefinition": task_def(f"{stuck}_t", retryCount=4)}]), overwrite=True)
    panel = operator_client.get(f"/execution/{start(stuck)}/stuck").content.decode()
    assert "(4 retries left)" in panel


def test_stuck_panel_queries_do_not_grow_with_the_pending_tasks():
    """The panel reloads every 10 s while an execution runs: its queries are one per queue
    and task name, not one per pending task (a fork's branches share both)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.problems import stuck

    def queries(width: int) -> int:
        name = unique("wide")
        services.task_defs_register(task_defs=[task_def(f"{name}_t", retryCount=1)])
        services.workflow_def_register(workflow_def=workflow_def(name, [
            {"name": "fork", "taskReferenceName": "fork", "type": "FORK_JOIN",
             "forkTasks": [[{"name": f"{name}_t", "taskReferenceName": f"w{i}", "type": "SIMPLE"}]
                           for i in range(width)]},
            {"name": "join", "taskReferenceName": "join", "type": "JOIN", "joinOn": [f"w{i}" for i in range(width)]}]),
            overwrite=True)
        wf = start(name)
        with CaptureQueriesContext(connection) as captured:
            entries = stuck.diagnose(wf)
        assert sum(1 for e in entries if e["type"] == "SIMPLE") == width
        assert all(e["retries_left"] == 1 for e in entries if e["type"] == "SIMPLE")
        return len(captured.captured_queries)

    assert queries(2) == queries(6)


def test_the_stuck_view_works_out_its_queues_once_per_page(viewer_client):
    """The list, its failure groups and the seven status counts filter by the same stuck
    executions: the queues no worker polls are read once, not once per filter."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    wf = _stuck_setup(unique("once"))
    with CaptureQueriesContext(connection) as captured:
        page = viewer_client.get("/executions/", {"stuck": "1"}).content.decode()
    assert wf in page and 'data-status="RUNNING" data-count="1"' in page
    assert sum("engine_poll_data" in q["sql"] for q in captured.captured_queries) == 1
