"""Conductor's AdminResource (``/api/admin``) and ``/tasks/queue/all/verbose``."""
from __future__ import annotations

import pytest

from apps.engine import sweeper
from apps.engine.models import EventMessage, TaskExecution, WorkflowExecution
from tests.factories import unique, workflow_def


def _task_row(wf_id: str) -> TaskExecution:
    return TaskExecution.objects.get(workflow_id=wf_id)


def test_queue_all_verbose_counts_waiting_and_unacked_tasks(api, flow):
    name, task = flow
    for n in range(3):
        api.start(name, {"n": n})
    api.poll_one(task)
    body = api.ok(api.get("/tasks/queue/all/verbose")).json()
    assert body[task] == {"a": {"size": 2, "uacked": 1}}


def test_pending_tasks_of_a_type_paged(api, flow):
    name, task = flow
    ids = [api.start(name, {"n": n}) for n in range(3)]
    api.poll_one(task)
    done = api.start(name)
    polled = api.poll(task, count=5)
    api.complete(next(t for t in polled if t["workflowInstanceId"] == done))
    listed = api.ok(api.get(f"/admin/task/{task}")).json()
    assert sorted(t["workflowInstanceId"] for t in listed) == sorted(ids)
    assert {t["taskType"] for t in listed} == {task}
    assert {t["status"] for t in listed} == {"IN_PROGRESS"}
    page = api.ok(api.get(f"/admin/task/{task}", {"start": 1, "count": 1})).json()
    assert len(page) == 1 and page[0]["taskId"] == listed[1]["taskId"]
    assert api.ok(api.get(f"/admin/task/{task}", {"start": 10})).json() == []
    assert api.ok(api.get(f"/admin/task/{unique('none')}")).json() == []


def test_pending_tasks_refuses_bad_paging(api, flow):
    _, task = flow
    assert "start" in api.refused(api.get(f"/admin/task/{task}", {"start": -1}))["message"]
    assert "count" in api.refused(api.get(f"/admin/task/{task}", {"count": 2**31}))["message"]
    assert "count" in api.refused(api.get(f"/admin/task/{task}", {"count": "many"}))["message"]


def test_config_has_numbers_and_version_but_no_strings(api, settings, monkeypatch):
    monkeypatch.setitem(settings.CONDUCTOR, "STATUS_NOTIFIER_URL", "http://user:hunter2@notify.invalid/")
    resp = api.ok(api.get("/admin/config"))
    body = resp.json()
    assert body["API_TOKEN_TTL_SECONDS"] == settings.CONDUCTOR["API_TOKEN_TTL_SECONDS"]
    assert body["buildDate"] == "UNKNOWN" and isinstance(body["version"], str)
    assert b"hunter2" not in resp.content
    assert "STATUS_NOTIFIER_URL" not in body
    assert all(not isinstance(v, str) for k, v in body.items() if k not in ("version", "buildDate"))


def test_sweep_requeue_makes_the_decide_due_now(api, flow):
    name, _ = flow
    wf_id = api.start(name)
    WorkflowExecution.objects.filter(pk=wf_id).update(next_decide_at=None)
    resp = api.ok(api.post(f"/admin/sweep/requeue/{wf_id}"))
    assert resp.content.decode() == f"true.{wf_id}"
    due = WorkflowExecution.objects.get(pk=wf_id).next_decide_at
    assert due is not None
    # already on the sweeper's queue: Conductor's pushIfNotExists answers false
    assert api.ok(api.post(f"/admin/sweep/requeue/{wf_id}")).content.decode() == f"false.{wf_id}"
    assert WorkflowExecution.objects.get(pk=wf_id).next_decide_at == due
    assert sweeper.sweep_once(now=due) >= 1
    assert api.workflow(wf_id)["status"] == "RUNNING"


def test_sweep_requeue_of_an_unknown_or_finished_workflow_is_true(api, flow):
    """Conductor pushes any id onto its decider queue (its sweeper drops it): true.<id>."""
    name, _ = flow
    unknown = unique("nope")
    assert api.ok(api.post(f"/admin/sweep/requeue/{unknown}")).content.decode() == f"true.{unknown}"
    assert not WorkflowExecution.objects.filter(pk=unknown).exists()
    wf_id = api.start(name)
    api.ok(api.delete(f"/workflow/{wf_id}"))
    assert api.ok(api.post(f"/admin/sweep/requeue/{wf_id}")).content.decode() == f"true.{wf_id}"
    row = WorkflowExecution.objects.get(pk=wf_id)
    assert (row.status, row.next_decide_at) == ("TERMINATED", None)


def test_verify_and_repair_unknown_workflow_is_404(api):
    api.refused(api.post(f"/admin/consistency/verifyAndRepair/{unique('nope')}"), 404)


def test_verify_and_repair_leaves_a_healthy_workflow_alone(api, flow):
    name, _ = flow
    wf_id = api.start(name)
    before = _task_row(wf_id)
    assert api.ok(api.post(f"/admin/consistency/verifyAndRepair/{wf_id}")).content == b"false"
    after = _task_row(wf_id)
    assert (after.queue_name, after.visible_at) == (before.queue_name, before.visible_at)


def test_verify_and_repair_puts_a_lost_task_back_on_its_queue(api, flow):
    name, task = flow
    wf_id = api.start(name)
    TaskExecution.objects.filter(workflow_id=wf_id).update(queue_name="")
    assert api.poll(task) == []
    assert api.ok(api.post(f"/admin/consistency/verifyAndRepair/{wf_id}")).content == b"true"
    assert _task_row(wf_id).queue_name == task
    repairs = [e["data"] for e in api.ok(api.get(f"/workflow/{wf_id}/history")).json()["events"]
               if e["kind"] == "action"]
    assert repairs == [{"action": "verifyAndRepair", "by": "api", "params": {"requeued": ["t1"]}}]
    assert api.poll_one(task)["workflowInstanceId"] == wf_id
    # polled since: nothing more to repair
    assert api.ok(api.post(f"/admin/consistency/verifyAndRepair/{wf_id}")).content == b"false"


def test_verify_and_repair_gets_a_stuck_workflow_decided(api, flow):
    name, _ = flow
    wf_id = api.start(name)
    # a finished task whose decide was lost: nothing is due and nothing is pending
    TaskExecution.objects.filter(workflow_id=wf_id).update(status="COMPLETED")
    WorkflowExecution.objects.filter(pk=wf_id).update(next_decide_at=None)
    assert api.ok(api.post(f"/admin/consistency/verifyAndRepair/{wf_id}")).content == b"true"
    due = WorkflowExecution.objects.get(pk=wf_id).next_decide_at
    assert due is not None
    sweeper.sweep_once(now=due)
    assert api.workflow(wf_id)["status"] == "COMPLETED"
    assert api.ok(api.post(f"/admin/consistency/verifyAndRepair/{wf_id}")).content == b"false"
    repairs = [e["data"] for e in api.ok(api.get(f"/workflow/{wf_id}/history")).json()["events"]
               if e["kind"] == "action"]
    assert repairs == [{"action": "verifyAndRepair", "by": "api", "params": {"decideDue": True}}]


@pytest.mark.parametrize("child_status,task_status", [("COMPLETED", "COMPLETED"), ("FAILED", "FAILED"),
                                                      ("TERMINATED", "CANCELED"), ("TIMED_OUT", "TIMED_OUT")])
def test_verify_and_repair_mirrors_a_sub_workflow_that_ended(api, flow, child_status, task_status):
    """The child ended but the parent's decide was lost: the SUB_WORKFLOW task takes the
    child's status and output (Conductor's WorkflowRepairService.repairSubWorkflowTask)."""
    child, _ = flow
    parent = unique("parent")
    api.register_workflow(workflow_def(parent, [
        {"name": child, "taskReferenceName": "sub", "type": "SUB_WORKFLOW",
         "subWorkflowParam": {"name": child, "version": 1}}]))
    wf_id = api.start(parent)
    sub = api.workflow(wf_id)["tasks"][0]
    assert sub["status"] == "IN_PROGRESS"
    WorkflowExecution.objects.filter(pk=sub["subWorkflowId"]).update(status=child_status, output={"r": 7})
    WorkflowExecution.objects.filter(pk=wf_id).update(next_decide_at=None)
    assert api.ok(api.post(f"/admin/consistency/verifyAndRepair/{wf_id}")).content == b"true"
    wf = api.workflow(wf_id)
    assert wf["tasks"][0]["status"] == task_status
    assert wf["tasks"][0]["outputData"]["r"] == 7
    assert wf["status"] != "RUNNING"  # and the parent moved on
    events = api.ok(api.get(f"/workflow/{wf_id}/history")).json()["events"]
    at = next(i for i, e in enumerate(events) if e["kind"] == "action")
    assert events[at]["data"] == {"action": "verifyAndRepair", "by": "api", "params": {"subWorkflowTasks": ["sub"]}}
    assert (events[at + 1]["taskId"], events[at + 1]["data"]["to"]) == (sub["taskId"], task_status)
    assert api.ok(api.post(f"/admin/consistency/verifyAndRepair/{wf_id}")).content == b"false"


def test_event_queues_of_active_handlers(api):
    active, idle = f"conductor:{unique('evq')}", f"conductor:{unique('evq')}"
    for name, event, on in ((unique("h"), active, True), (unique("h"), idle, False)):
        api.ok(api.post("/event", {"name": name, "event": event, "active": on,
                                   "actions": [{"action": "complete_task", "complete_task": {
                                       "workflowId": "w", "taskRefName": "t"}}]}))
    EventMessage.objects.create(message_id=unique("m"), event=active, payload={}, created_time=1)
    plain = api.ok(api.get("/admin/queues")).json()
    assert plain[active] == active and idle not in plain
    verbose = api.ok(api.get("/admin/queues", {"verbose": "true"})).json()
    assert verbose[active] == {active: 1} and idle not in verbose
    assert "verbose" in api.refused(api.get("/admin/queues", {"verbose": "maybe"}))["message"]
