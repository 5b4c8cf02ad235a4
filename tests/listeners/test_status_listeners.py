"""Status listeners: the outbox written with the change, HTTP deliveries in order and
once, retries with backoff, the queue publisher and archiving."""
from __future__ import annotations

import pytest

from apps.engine import event_handlers
from apps.engine.models import EventMessage, WorkflowExecution
from apps.listeners import delivery
from apps.listeners.models import Notification
from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db


def register(api, enabled: bool = True) -> tuple[str, str]:
    name, task = unique("notified_wf"), unique("notified_task")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "first", description="the first step"),
                                              simple_task(task, "second")],
                                       workflowStatusListenerEnabled=enabled))
    return name, task


def run_to_completion(api, name: str, task: str) -> str:
    workflow_id = api.start(name, {"order": 7})
    for _ in range(2):
        api.complete(api.poll_one(task), {"ok": True})
    assert api.workflow(workflow_id)["status"] == "COMPLETED"
    return workflow_id


def deliver_all() -> None:
    for _ in range(20):
        if delivery.deliver_due() == 0:
            return


def test_every_subscribed_transition_is_posted_once_in_order(api, clock, listener_settings, receiver):
    name, task = register(api)
    workflow_id = run_to_completion(api, name, task)
    assert Notification.objects.filter(workflow_id=workflow_id, state="PENDING").count() == 6
    deliver_all()
    deliver_all()  # nothing twice
    got = [(r["path"], r["headers"]["x-conductor-event"], r["body"].get("referenceTaskName")) for r in receiver.delivered()]
    assert got == [("/workflow", "STARTED", None), ("/task", "SCHEDULED", "first"), ("/task", "COMPLETED", "first"),
                   ("/task", "SCHEDULED", "second"), ("/task", "COMPLETED", "second"), ("/workflow", "COMPLETED", None)]
    assert receiver.attempts() == 6
    started, completed = receiver.delivered()[0]["body"], receiver.delivered()[-1]["body"]
    assert started["workflowId"] == workflow_id and started["status"] == "RUNNING" and started["workflowType"] == name
    assert completed["status"] == "COMPLETED" and completed["output"] == '{"ok": true}' and '"order": 7' in completed["input"]
    first = receiver.delivered()[1]["body"]
    assert first["taskDescription"] == "the first step" and first["workflowTaskType"] == "SIMPLE"
    assert first["retryCount"] == 0 and first["taskDefName"] == task and first["workflowId"] == workflow_id
    assert set(Notification.objects.filter(workflow_id=workflow_id).values_list("state", flat=True)) == {"DELIVERED"}


def test_definitions_without_the_flag_are_not_reported(api, clock, listener_settings, receiver):
    name, task = register(api, enabled=False)
    run_to_completion(api, name, task)
    assert not Notification.objects.exists()


def test_nothing_is_recorded_without_a_configured_listener(api, clock, settings):
    name, task = register(api)
    run_to_completion(api, name, task)
    assert not Notification.objects.exists()


def test_a_failing_receiver_is_retried_with_backoff_then_given_up(api, clock, listener_settings, receiver):
    name, task = register(api)
    workflow_id = api.start(name, {})
    receiver.failing.set()
    assert delivery.deliver_due() == 1  # STARTED tried; the SCHEDULED task waits behind it
    row = Notification.objects.get(workflow_id=workflow_id, event="STARTED")
    assert row.state == "PENDING" and row.attempts == 1 and row.last_error == "Unexpected response status: 503"
    assert delivery.deliver_due() == 0  # not before its retry delay
    clock.advance(1)
    assert delivery.deliver_due() == 1
    assert Notification.objects.get(pk=row.pk).attempts == 2
    clock.advance(1.5)
    assert delivery.deliver_due() == 0  # the second delay is twice the first
    clock.advance(0.5)
    assert delivery.deliver_due() == 2  # the last attempt; then the row behind it goes
    row.refresh_from_db()
    assert row.state == "FAILED" and row.attempts == 3
    receiver.failing.clear()
    clock.advance(1)
    deliver_all()
    assert [r["headers"]["x-conductor-event"] for r in receiver.delivered()] == ["SCHEDULED"]


def test_terminated_paused_and_resumed(api, clock, listener_settings, receiver):
    name, _task = register(api)
    workflow_id = api.start(name, {})
    api.ok(api.put(f"/workflow/{workflow_id}/pause"))
    api.ok(api.put(f"/workflow/{workflow_id}/resume"))
    api.ok(api.delete(f"/workflow/{workflow_id}", params={"reason": "stop"}))
    deliver_all()
    events = [r["headers"]["x-conductor-event"] for r in receiver.delivered() if r["path"] == "/workflow"]
    assert events == ["STARTED", "PAUSED", "RESUMED", "TERMINATED"]
    assert receiver.delivered()[-1]["body"]["reasonForIncompletion"] == "stop"


def test_queue_publisher_feeds_event_handlers(api, clock, listener_settings):
    name, task = register(api)
    follow_up = unique("on_success")
    api.register_workflow(workflow_def(follow_up, [simple_task(task, "again")]))
    api.ok(api.post("/event", {"name": unique("callback"), "event": "conductor:_callbackSuccessQueue", "active": True,
                               "actions": [{"action": "start_workflow",
                                            "start_workflow": {"name": follow_up, "input": {"after": "${workflowId}"}}}]}))
    workflow_id = run_to_completion(api, name, task)
    messages = {m.event: m for m in EventMessage.objects.all()}
    assert set(messages) == {"conductor:_callbackSuccessQueue", "conductor:_callbackFinalizeQueue"}
    assert messages["conductor:_callbackSuccessQueue"].payload["workflowId"] == workflow_id
    event_handlers.process_event_message_job(messages["conductor:_callbackSuccessQueue"].message_id)
    started = WorkflowExecution.objects.get(workflow_name=follow_up)
    assert started.input["after"] == workflow_id


def test_archive_removes_finished_executions_after_the_delay(api, clock, listener_settings, settings):
    settings.CONDUCTOR = {**listener_settings, "WORKFLOW_STATUS_LISTENER": "archive"}
    name, task = register(api)
    done = run_to_completion(api, name, task)
    running = api.start(name, {})
    deliver_all()
    assert WorkflowExecution.objects.filter(pk=done).exists()  # not before the delay
    clock.advance(60)
    deliver_all()
    assert not WorkflowExecution.objects.filter(pk=done).exists()
    assert WorkflowExecution.objects.filter(pk=running).exists()
    assert api.get(f"/workflow/{done}").status_code == 404


def test_kick_hands_due_deliveries_to_the_cluster_once(api, clock, listener_settings, monkeypatch):
    queued = []
    monkeypatch.setattr("django_q.tasks.async_task", lambda func, *a, **kw: queued.append(func))
    monkeypatch.setattr(delivery, "_last_kick", 0)
    monkeypatch.setattr(delivery, "_last_check", 0)
    delivery.kick()
    assert queued == []  # nothing due
    name, _task = register(api)
    api.start(name, {})
    delivery.kick()
    assert queued == []  # looked less than a second ago
    clock.advance(1)
    delivery.kick()
    delivery.kick()  # at most once a second
    assert queued == ["apps.listeners.delivery.deliver_job"]


def test_failed_then_retried_then_restarted(api, clock, listener_settings, receiver, settings):
    settings.CONDUCTOR = {**listener_settings, "STATUS_NOTIFIER_SUBSCRIBED_WORKFLOW_STATUSES":
                          "FAILED,RETRIED,RESTARTED,RERAN"}
    name, task = register(api)
    workflow_id = api.start(name, {})
    api.ok(api.update(api.poll_one(task), "FAILED", reasonForIncompletion="boom"))
    assert api.workflow(workflow_id)["status"] == "FAILED"
    clock.advance(1)
    api.ok(api.post(f"/workflow/{workflow_id}/retry"), 204)
    api.ok(api.update(api.poll_one(task), "FAILED", reasonForIncompletion="boom again"))
    clock.advance(1)
    api.ok(api.post(f"/workflow/{workflow_id}/restart"), 204)
    failed = api.poll_one(task)
    api.ok(api.update(failed, "FAILED", reasonForIncompletion="boom thrice"))
    clock.advance(1)
    api.ok(api.post(f"/workflow/{workflow_id}/rerun", {"reRunFromWorkflowId": workflow_id,
                                                       "reRunFromTaskId": failed["taskId"]}))
    api.ok(api.update(api.poll_one(task), "FAILED", reasonForIncompletion="boom four"))
    clock.advance(1)
    api.ok(api.post(f"/workflow/{workflow_id}/restart"), 204)
    deliver_all()
    got = [(r["headers"]["x-conductor-event"], r["body"]["status"]) for r in receiver.delivered()
           if r["path"] == "/workflow"]
    assert got == [("TERMINATED", "FAILED"), ("RETRIED", "RUNNING"), ("TERMINATED", "FAILED"), ("RESTARTED", "RUNNING"),
                   ("TERMINATED", "FAILED"), ("RERAN", "RUNNING"), ("TERMINATED", "FAILED"), ("RESTARTED", "RUNNING")]


def test_the_outbox_and_schedules_are_listed_in_the_admin(api, clock, listener_settings, receiver, client):
    from django.contrib.auth.models import User

    name, _task = register(api)
    workflow_id = api.start(name, {})
    receiver.failing.set()
    delivery.deliver_due()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get("/admin/listeners/notification/").content.decode()
    assert workflow_id in page and "Unexpected response status: 503" in page
    assert client.get("/admin/scheduler/workflowschedule/").status_code == 200
    assert client.get("/admin/scheduler/scheduleexecution/").status_code == 200
