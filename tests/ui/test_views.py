"""Pages, permissions, actions and the audit log of the operator UI."""
from __future__ import annotations

import json
import re

import pytest

from apps.engine import executor, queue
from apps.engine.models import WorkflowExecution
from apps.ui.models import AuditLog
from tests.ui.conftest import register_chain

pytestmark = pytest.mark.django_db


def start(name: str, **input) -> str:
    return executor.workflow_start(name=name, version=None, input=input or {"x": 1}, correlation_id="corr-1")


# --- sign-in and permissions -------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/executions/", "/queues/", "/definitions/", "/start/", "/audit/"])
def test_every_page_needs_sign_in(client, path):
    resp = client.get(path)
    assert resp.status_code == 302
    assert resp["Location"].startswith("/login/?next=")


def test_sign_in_page_and_login(client, viewer):
    assert client.get("/login/").status_code == 200
    resp = client.post("/login/", {"username": "viewer", "password": "pw", "next": "/queues/"})
    assert resp.status_code == 302 and resp["Location"] == "/queues/"
    assert client.get("/queues/").status_code == 200


def test_user_without_permission_gets_403(client, nobody):
    client.force_login(nobody)
    assert client.get("/executions/").status_code == 403


def test_viewer_sees_no_action_buttons_and_cannot_post(viewer_client, chain):
    wf_id = start(chain)
    page = viewer_client.get(f"/execution/{wf_id}").content.decode()
    assert 'id="actions-menu"' not in page
    assert "Start a workflow" not in viewer_client.get("/executions/").content.decode()
    resp = viewer_client.post(f"/execution/{wf_id}/action/terminate", {"reason": "no"})
    assert resp.status_code == 403
    assert WorkflowExecution.objects.get(pk=wf_id).status == "RUNNING"
    assert viewer_client.post("/executions/bulk", {"action": "pause", "ids": [wf_id], "confirm": "yes"}).status_code == 403
    assert viewer_client.get("/start/").status_code == 403
    assert not AuditLog.objects.exists()


def test_actions_need_csrf(operator, chain):
    from django.test import Client

    wf_id = start(chain)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator)
    assert strict.post(f"/execution/{wf_id}/action/pause").status_code == 403
    assert WorkflowExecution.objects.get(pk=wf_id).status == "RUNNING"


# --- execution detail and actions -----------------------------------------------------------------

def test_execution_page_offers_what_the_state_allows(operator_client, chain):
    wf_id = start(chain)
    page = operator_client.get(f"/execution/{wf_id}").content.decode()
    assert f"/definitions/{chain}/1" in page

    def visible(html):
        import re
        return sorted(m.group(1) for m in re.finditer(r'data-action="([a-z_]+)" class="[^"]*" ?>', html))

    assert visible(page) == ["pause", "terminate"]
    executor.workflow_pause(workflow_id=wf_id)
    assert visible(operator_client.get(f"/execution/{wf_id}").content.decode()) == ["resume", "terminate"]
    executor.workflow_terminate(workflow_id=wf_id, reason="x")
    # no SUB_WORKFLOW task: "retry, resuming sub-workflow" is not offered
    assert visible(operator_client.get(f"/execution/{wf_id}").content.decode()) == [
        "restart", "restart_latest", "retry"]
    from tests.search.builders import make_task
    make_task(WorkflowExecution.objects.get(pk=wf_id), task_def_name="child", task_type="SUB_WORKFLOW", status="FAILED")
    assert visible(operator_client.get(f"/execution/{wf_id}").content.decode()) == [
        "restart", "restart_latest", "retry", "retry_resume"]


def test_header_reason_names_the_failed_task_by_reference(viewer_client, chain):
    from apps.ui import live
    wf_id = start(chain)
    task = queue.task_poll(task_type=f"{chain}_a", worker_id="w")[0]
    executor.task_update(task_result={"workflowInstanceId": wf_id, "taskId": task.task_id, "status": "FAILED",
                                      "reasonForIncompletion": "boom"})
    raw = WorkflowExecution.objects.get(pk=wf_id).reason_for_incompletion
    assert task.task_id in raw  # Conductor's text names the task id
    html = viewer_client.get(f"/execution/{wf_id}").content.decode()
    assert f'data-open-task="{task.task_id}">a</a>' in html
    header = live.build_snapshot(wf_id)["header"]
    assert header["failedTask"] == {"ref": "a", "taskId": task.task_id}
    assert task.task_id not in header["reason"] and header["reason"] == raw.replace(task.task_id, "a")


def test_action_returns_to_the_view_the_operator_left(operator_client, chain):
    wf_id = start(chain)
    back = f"/execution/{wf_id}?tab=timeline&task=x&iter=loop:1"
    confirm = operator_client.get(f"/execution/{wf_id}/action/pause", {"back": back}).content.decode()
    assert 'name="back" value="/execution/' in confirm and "tab=timeline" in confirm
    resp = operator_client.post(f"/execution/{wf_id}/action/pause", {"back": back})
    assert resp.status_code == 302 and resp["Location"] == back
    # anywhere else: the bare execution page
    for elsewhere in ("https://evil.example/", "/executions/", f"/execution/{wf_id}x"):
        resp = operator_client.post(f"/execution/{wf_id}/action/resume", {"back": elsewhere})
        assert resp["Location"] == f"/execution/{wf_id}"


def test_terminate_with_confirmation_is_audited(operator_client, operator, chain):
    wf_id = start(chain)
    confirm = operator_client.get(f"/execution/{wf_id}/action/terminate")
    assert confirm.status_code == 200 and b"Reason" in confirm.content
    resp = operator_client.post(f"/execution/{wf_id}/action/terminate", {"reason": "operator said so"})
    assert resp.status_code == 302 and resp["Location"] == f"/execution/{wf_id}"
    wf = WorkflowExecution.objects.get(pk=wf_id)
    assert wf.status == "TERMINATED" and wf.reason_for_incompletion == "operator said so"
    entry = AuditLog.objects.get()
    assert (entry.username, entry.action, entry.target, entry.ok) == ("operator", "terminate", wf_id, True)
    assert entry.params["reason"] == "operator said so"
    assert entry.user == operator


def test_refused_action_is_audited_with_conductors_message(operator_client, chain):
    wf_id = start(chain)
    resp = operator_client.post(f"/execution/{wf_id}/action/resume", follow=True)
    assert b"is not PAUSED so cannot resume" in resp.content
    entry = AuditLog.objects.get()
    assert entry.ok is False and "is not PAUSED" in entry.message


def test_pause_resume(operator_client, chain):
    wf_id = start(chain)
    operator_client.post(f"/execution/{wf_id}/action/pause")
    assert WorkflowExecution.objects.get(pk=wf_id).status == "PAUSED"
    operator_client.post(f"/execution/{wf_id}/action/resume")
    assert WorkflowExecution.objects.get(pk=wf_id).status == "RUNNING"
    assert list(AuditLog.objects.order_by("id").values_list("action", "ok")) == [("pause", True), ("resume", True)]


def test_missing_execution_is_404(viewer_client):
    assert viewer_client.get("/execution/nope").status_code == 404


def test_task_panel_json_and_downloads(viewer_client, chain):
    wf_id = start(chain, x="y" * 50_000)
    task = queue.task_poll(task_type=f"{chain}_a", worker_id="w1")[0]
    resp = viewer_client.get(f"/execution/{wf_id}/task/{task.task_id}.json")
    data = resp.json()
    assert data["task"]["referenceTaskName"] == "a" and data["task"]["status"] == "IN_PROGRESS"
    assert data["input"]["truncated"] is True and len(data["input"]["text"]) == 20_000
    assert data["workflowTask"]["taskReferenceName"] == "a"
    assert [p["workerId"] for p in data["pollData"]] == ["w1"]
    assert data["actions"] == []  # a viewer
    full = viewer_client.get(data["downloads"]["input"])
    assert full["Content-Disposition"].startswith("attachment") and json.loads(full.content)["x"] == "y" * 50_000
    assert viewer_client.get(f"/execution/{wf_id}/download/json").json()["workflowId"] == wf_id
    assert viewer_client.get(f"/execution/{wf_id}/download/input").json()["x"] == "y" * 50_000


def test_live_json_fallback(viewer_client, chain):
    wf_id = start(chain)
    first = viewer_client.get(f"/execution/{wf_id}/live.json").json()
    assert first["type"] == "snapshot" and first["data"]["header"]["status"] == "RUNNING"
    marker = first["data"]["marker"]
    assert viewer_client.get(f"/execution/{wf_id}/live.json", {"marker": marker}).json()["type"] == "unchanged"
    executor.workflow_pause(workflow_id=wf_id)
    again = viewer_client.get(f"/execution/{wf_id}/live.json", {"marker": marker}).json()
    assert again["type"] == "snapshot" and again["data"]["header"]["allowedActions"] == ["resume", "terminate"]


def test_complete_a_wait_task_from_the_panel(operator_client):
    from apps.metadata import services
    from tests.factories import unique, workflow_def

    name = unique("ui_wait")
    services.workflow_def_register(workflow_def=workflow_def(name, [
        {"name": "wait", "taskReferenceName": "w", "type": "WAIT", "inputParameters": {}}]))
    wf_id = executor.workflow_start(name=name, input={})
    task = WorkflowExecution.objects.get(pk=wf_id).tasks.get(reference_task_name="w")
    panel = operator_client.get(f"/execution/{wf_id}/task/{task.task_id}.json").json()
    assert panel["actions"] == ["complete_task", "fail_task"]
    url = panel["actionUrls"]["complete_task"]
    assert operator_client.get(url).status_code == 200
    resp = operator_client.post(url, {"output": '{"approved": true}'})
    assert resp.status_code == 302
    task.refresh_from_db()
    assert task.status == "COMPLETED" and task.output_data == {"approved": True}
    assert WorkflowExecution.objects.get(pk=wf_id).status == "COMPLETED"
    assert AuditLog.objects.get().action == "complete_task"


def test_invalid_json_in_a_task_action_is_refused(operator_client):
    from apps.metadata import services
    from tests.factories import unique, workflow_def

    name = unique("ui_wait")
    services.workflow_def_register(workflow_def=workflow_def(name, [
        {"name": "wait", "taskReferenceName": "w", "type": "WAIT", "inputParameters": {}}]))
    wf_id = executor.workflow_start(name=name, input={})
    task = WorkflowExecution.objects.get(pk=wf_id).tasks.get(reference_task_name="w")
    resp = operator_client.post(f"/execution/{wf_id}/task-action/complete_task?task={task.task_id}", {"output": "{oops"})
    assert resp.status_code == 400 and b"not valid JSON" in resp.content
    assert not AuditLog.objects.exists()


# --- search and bulk -----------------------------------------------------------------------------

def test_search_filters_sorting_paging_and_running_tasks(viewer_client):
    a = register_chain()
    b = register_chain()
    ids_a = [start(a, x=i) for i in range(3)]
    # three starts can share a millisecond (a start takes about 1 ms): give each its own
    # create_time, so sorting by start has one right order (ties are ordered by id)
    first = WorkflowExecution.objects.get(pk=ids_a[0]).create_time
    for i, wf_id in enumerate(ids_a):
        WorkflowExecution.objects.filter(pk=wf_id).update(create_time=first + i)
    id_b = executor.workflow_start(name=b, input={"x": "needle-in-input"}, correlation_id="c-b")
    executor.workflow_terminate(workflow_id=ids_a[0], reason="special reason text")

    def ids(params):
        html = viewer_client.get("/executions/", params).content.decode()
        import re
        return re.findall(r'<tr data-workflow-id="([^"]+)"', html)

    assert set(ids({"name": a})) == set(ids_a)
    assert set(ids({"name": [a, b]})) == set(ids_a) | {id_b}
    assert ids({"name": [a, b], "status": "TERMINATED"}) == [ids_a[0]]
    assert ids({"name": [a, b], "status": ["TERMINATED", "PAUSED"]}) == [ids_a[0]]
    assert ids({"q": "needle-in"}) == [id_b]
    assert ids({"q": "special reason"}) == [ids_a[0]]
    assert ids({"correlation_id": "c-b"}) == [id_b]
    assert ids({"workflow_id": ids_a[1]}) == [ids_a[1]]
    assert ids({"name": a, "version": 1, "sort": "start"}) == ids_a
    assert ids({"name": a, "sort": "-start"}) == ids_a[::-1]
    page1 = ids({"name": a, "sort": "start", "size": 10, "page": 1})
    assert page1 == ids_a
    assert ids({"name": a, "start_from": "2000-01-01T00:00", "start_to": "2001-01-01T00:00"}) == []
    html = viewer_client.get("/executions/", {"workflow_id": ids_a[1]}).content.decode()
    assert 'st-SCHEDULED small' in html and ">a</span>" in html  # the task waiting for a worker


def test_search_paging_in_the_database(viewer_client):
    from apps.ui.selectors import SearchQuery, search_executions
    from django.http import QueryDict

    name = register_chain()
    for _ in range(23):
        start(name)
    # workflows started in one loop often share a millisecond: the order is start time,
    # then workflow id (tests/search/test_paging_ties.py makes such ties on purpose)
    made = list(WorkflowExecution.objects.order_by("create_time", "workflow_id").values_list("workflow_id", flat=True))
    q = SearchQuery.from_querydict(QueryDict(f"name={name}&size=10&page=3&sort=start"))
    result = search_executions(q)
    assert result.total == 23 and result.pages == 3 and [r["workflow_id"] for r in result.rows] == made[20:]


def test_bulk_confirmation_then_results(operator_client):
    name = register_chain()
    ids = [start(name) for _ in range(3)]
    executor.workflow_terminate(workflow_id=ids[2], reason="done")
    confirm = operator_client.post("/executions/bulk", {"action": "pause", "ids": ids, "back": "/executions/"})
    assert confirm.status_code == 200
    text = confirm.content.decode()
    assert "Pause 3 executions?" in text and 'id="confirm-count">3<' in text
    assert not AuditLog.objects.exists()
    result = operator_client.post("/executions/bulk", {"action": "pause", "ids": ids, "confirm": "yes", "back": "/executions/"})
    body = result.content.decode()
    assert "2 succeeded, 1 failed" in body and "has ended, status cannot be updated" in body
    assert [WorkflowExecution.objects.get(pk=i).status for i in ids] == ["PAUSED", "PAUSED", "TERMINATED"]
    # one audit group: the selection's summary row plus one row per execution
    summary = AuditLog.objects.get(action="bulk_selection")
    assert summary.params == {"action": "pause", "reason": "", "executions": 3} and summary.group_kind == "selection"
    rows = AuditLog.objects.filter(group=summary.group).exclude(pk=summary.pk)
    assert sorted(rows.values_list("target", "ok")) == sorted([(ids[0], True), (ids[1], True), (ids[2], False)])
    assert AuditLog.objects.filter(bulk=True).count() == 4
    assert f'href="/audit/?group={summary.group}"' in body
    audit_page = operator_client.get("/audit/", {"group": summary.group}).content.decode()
    assert audit_page.count('class="small group-rows"') == 4 and "3 selected executions" in audit_page
    # a second selection is a group of its own
    operator_client.post("/executions/bulk", {"action": "resume", "ids": ids[:1], "confirm": "yes"})
    assert AuditLog.objects.filter(action="bulk_selection").values("group").distinct().count() == 2
    assert AuditLog.objects.filter(group=summary.group).count() == 4


def test_bulk_terminate_carries_the_reason(operator_client):
    name = register_chain()
    ids = [start(name) for _ in range(2)]
    operator_client.post("/executions/bulk", {"action": "terminate", "ids": ids, "confirm": "yes", "reason": "cleanup"})
    assert set(WorkflowExecution.objects.filter(pk__in=ids).values_list("status", "reason_for_incompletion")) == {
        ("TERMINATED", "cleanup")}


# --- other pages --------------------------------------------------------------------------------

def test_definition_page_has_graph_and_executions_link(viewer_client, chain):
    page = viewer_client.get(f"/definitions/{chain}/1").content.decode()
    assert f"/executions/?name={chain}&amp;version=1" in page
    assert 'id="graph-data"' in page and '"kind": "start"' in page
    assert viewer_client.get(f"/definitions/{chain}/9").status_code == 404
    assert chain in viewer_client.get("/definitions/").content.decode()


def test_queues_page_lists_pollers_and_warns(viewer_client, chain):
    from apps.engine.models import PollData

    start(chain)
    queue.task_poll(task_type=f"{chain}_b", worker_id="wb")
    PollData.objects.create(queue_name=f"{chain}_b", domain="", worker_id="wb2", last_poll_time=1)
    html = viewer_client.get("/queues/").content.decode()
    assert f'data-task-type="{chain}_a"' in html
    assert "no worker has ever polled" in html  # chain_a has a task and no poller
    assert "wb</span>" in html and "+1 older poller" in html


def test_queue_overview_flags_stale_pollers(db, chain):
    from apps.core.clock import now_ms
    from apps.engine.models import PollData
    from apps.ui.selectors import queues_overview

    start(chain)
    now = now_ms()
    PollData.objects.create(queue_name=f"{chain}_a", domain="", worker_id="old", last_poll_time=now - 120_000)
    PollData.objects.create(queue_name=f"{chain}_a", domain="", worker_id="older", last_poll_time=now - 300_000)
    row = next(r for r in queues_overview(now, stale_seconds=60) if r["task_type"] == f"{chain}_a")
    assert row["depth"] == 1 and [w["worker_id"] for w in row["workers"]] == ["old", "older"]
    assert "no worker has polled for 120 s" in row["warning"]
    PollData.objects.create(queue_name=f"{chain}_a", domain="", worker_id="fresh", last_poll_time=now - 1000)
    row = next(r for r in queues_overview(now, stale_seconds=60) if r["task_type"] == f"{chain}_a")
    assert row["warning"] is None and row["workers"][0]["worker_id"] == "fresh"


def test_start_page_builds_a_form_from_input_parameters(operator_client, chain):
    page = operator_client.get("/start/", {"name": chain}).content.decode()
    assert 'name="input.x"' in page and 'name="input.y"' in page
    resp = operator_client.post("/start/", {"name": chain, "version": "1", "input.x": "42", "input.y": "hello",
                                            "input_json": '{"z": [1]}', "correlation_id": "from-ui"})
    assert resp.status_code == 302
    wf_id = resp["Location"].rsplit("/", 1)[1]
    wf = WorkflowExecution.objects.get(pk=wf_id)
    assert wf.input == {"x": 42, "y": "hello", "z": [1]} and wf.correlation_id == "from-ui"
    assert wf.created_by == "operator"
    entry = AuditLog.objects.get()
    assert (entry.action, entry.target, entry.ok) == ("start", wf_id, True)


def test_start_with_bad_json_is_refused(operator_client, chain):
    resp = operator_client.post("/start/", {"name": chain, "version": "1", "input_json": "[1]"})
    assert resp.status_code == 400 and b"must be a JSON object" in resp.content
    assert not WorkflowExecution.objects.exists()


def test_search_groups_failures_with_ids_masked(operator_client, chain):
    from tests.search.builders import make_workflow
    for i in range(3):
        make_workflow(chain, status="FAILED", reason=f"Task 0b9d2c1e-1111-4a4a-9b9b-00000000000{i} failed: timeout after 3000{i} ms")
    make_workflow(chain, status="FAILED", reason="payment declined")
    html = operator_client.get("/executions/", {"name": chain}).content.decode()
    assert 'id="failure-clusters"' in html
    first = re.search(r'<tr data-cluster="([^"]*)"><td class="num">(\d+)</td>', html)
    assert first.group(1) == "Task … failed: timeout after … ms" and first.group(2) == "3"
    link = re.search(r'<a href="\?([^"]+)" class="cluster-filter">', html).group(1).replace("&amp;", "&")
    filtered = operator_client.get("/executions/?" + link).content.decode()
    assert len(re.findall(r'<tr data-workflow-id=', filtered)) == 3 and 'id="cluster-note"' in filtered
    assert "payment declined</td>" not in filtered


def test_reason_column_is_one_line_with_the_whole_text_on_hover(viewer_client, chain):
    from tests.search.builders import make_workflow
    long = "x" * 400
    make_workflow(chain, status="FAILED", reason=long)
    html = viewer_client.get("/executions/").content.decode()
    assert f'class="col-reason reason one-line" data-label="Reason" title="{long}"' in html


def test_favicon_and_styled_not_found(viewer_client, client):
    resp = client.get("/favicon.ico")
    assert resp.status_code == 200 and b"<svg" in b"".join(resp.streaming_content)
    browser = {"HTTP_ACCEPT": "text/html,*/*;q=0.8"}  # without it the 404 is JSON (tests/ui/test_error_pages.py)
    resp = viewer_client.get("/no/such/page", **browser)
    assert resp.status_code == 404 and b'id="error-page"' in resp.content and b"ui/app.css" in resp.content
    resp = viewer_client.get("/execution/no-such-id", **browser)
    assert resp.status_code == 404 and b'id="error-page"' in resp.content


def test_json_tab_reads_a_preview_not_the_whole_document(viewer_client, chain):
    wf_id = start(chain, big="y" * 5000)
    resp = viewer_client.get(f"/execution/{wf_id}/download/json", {"preview": 1000})
    assert len(resp.content) == 1000 and int(resp["X-Total-Chars"]) > 5000
    whole = viewer_client.get(f"/execution/{wf_id}/download/json")
    assert len(whole.content) == int(resp["X-Total-Chars"]) and whole["Content-Disposition"].startswith("attachment")


def test_audit_page(operator_client, chain):
    wf_id = start(chain)
    operator_client.post(f"/execution/{wf_id}/action/pause")
    html = operator_client.get("/audit/", {"target": wf_id}).content.decode()
    assert "pause" in html and wf_id in html


# --- recovery actions (engine services: restart, retry, rerun, skip) ----------------------------------

def _failed_chain(name):
    wf_id = start(name)
    task = queue.task_poll(task_type=f"{name}_a", worker_id="w")[0]
    executor.task_update(task_result={"workflowInstanceId": wf_id, "taskId": task.task_id, "status": "FAILED",
                                      "reasonForIncompletion": "boom"})
    assert WorkflowExecution.objects.get(pk=wf_id).status == "FAILED"
    return wf_id, task


def test_retry_restart_and_rerun_with_edited_input(operator_client, chain):
    wf_id, task = _failed_chain(chain)
    page = operator_client.get(f"/execution/{wf_id}").content.decode()
    assert 'data-action="retry" class="" >' in page
    operator_client.post(f"/execution/{wf_id}/action/retry")
    wf = WorkflowExecution.objects.get(pk=wf_id)
    assert wf.status == "RUNNING" and wf.tasks.filter(reference_task_name="a", status="SCHEDULED").count() == 1

    executor.workflow_terminate(workflow_id=wf_id, reason="again")
    operator_client.post(f"/execution/{wf_id}/action/restart_latest")
    assert WorkflowExecution.objects.get(pk=wf_id).status == "RUNNING"

    executor.workflow_terminate(workflow_id=wf_id, reason="rerun next")
    first = WorkflowExecution.objects.get(pk=wf_id).tasks.get(reference_task_name="a")
    panel = operator_client.get(f"/execution/{wf_id}/task/{first.task_id}.json").json()
    assert panel["actions"] == ["rerun"]
    form = operator_client.get(panel["actionUrls"]["rerun"]).content.decode()
    assert "Task input (JSON)" in form
    resp = operator_client.post(panel["actionUrls"]["rerun"], {"task_input": '{"x": "edited"}'})
    assert resp.status_code == 302
    wf = WorkflowExecution.objects.get(pk=wf_id)
    assert wf.status == "RUNNING"
    assert wf.tasks.get(reference_task_name="a", status="SCHEDULED").input_data == {"x": "edited"}
    assert [a for a, in AuditLog.objects.order_by("id").values_list("action")] == ["retry", "restart_latest", "rerun"]
    assert all(AuditLog.objects.values_list("ok", flat=True))


def test_skip_a_task_that_has_not_run(operator_client, chain):
    wf_id = start(chain)
    url = f"/execution/{wf_id}/task-action/skip?ref=b"
    assert operator_client.get(url).status_code == 200
    operator_client.post(url, {"output": '{"skipped_by": "ui"}'})
    skipped = WorkflowExecution.objects.get(pk=wf_id).tasks.get(reference_task_name="b")
    assert skipped.status == "SKIPPED" and skipped.output_data == {"skipped_by": "ui"}
    entry = AuditLog.objects.get()
    assert (entry.action, entry.ok, entry.params["task_reference_name"]) == ("skip", True, "b")
