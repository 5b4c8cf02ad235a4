"""Processing of the internal event queue: handlers matched by event, conditions over the
payload, the actions start_workflow / complete_task / fail_task / terminate_workflow /
update_workflow_variables through engine services, one EventExecution per handler action,
idempotent processing, and the default queue behind POST /api/queue/update
(docs/conductor-notes.md §1.5, §1.6, §2.6; DefaultEventProcessor, SimpleActionProcessor)."""
from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.db import connection

from apps.engine import event_handlers
from apps.engine.event_handlers import event_execution_list, process_event_message_job
from apps.engine.event_queue import event_message_publish
from apps.engine.models import EventExecution, EventMessage
from tests.events.conftest import drain, pending_message_ids
from tests.events.test_event_task import event_task, tasks_by_ref
from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)


def wait_task(ref: str = "wait_for_approval") -> dict:
    return {"name": ref, "taskReferenceName": ref, "type": "WAIT"}


@pytest.fixture
def waiter(api):
    """A registered workflow that blocks on a WAIT task ``wait_for_approval``."""
    name = unique("waiter")
    api.register_workflow(workflow_def(name, [wait_task()], outputParameters={
        "approvedBy": "${wait_for_approval.output.approvedBy}"}))
    return name


@pytest.fixture
def publisher(api):
    """A registered workflow whose EVENT task publishes ``conductor:<name>:approvals`` with
    the target workflow id, the WAIT reference and an ``approved`` flag."""
    name = unique("publisher")
    api.register_workflow(workflow_def(name, [event_task("approve", "conductor:approvals", {
        "workflowId": "${workflow.input.target}", "taskRefName": "wait_for_approval",
        "approved": "${workflow.input.approved}"})]))
    return name


def add_handler(api, name: str, event: str, actions: list[dict], **extra) -> None:
    body = {"name": name, "event": event, "actions": actions, "active": True}
    body.update(extra)
    api.ok(api.post("/event", body))


def complete_wait_action(**details) -> dict:
    out = {"workflowId": "${workflowId}", "taskRefName": "${taskRefName}",
           "output": {"approvedBy": "${workflowInstanceId}"}}
    out.update(details)
    return {"action": "complete_task", "complete_task": out}


def test_handler_with_condition_completes_the_wait_task_of_another_workflow(api, waiter, publisher):
    target = api.start(waiter)
    handler = unique("approve")
    event = f"conductor:{publisher}:approvals"
    add_handler(api, handler, event, [complete_wait_action()], condition="$.approved == true")

    # condition false: SKIPPED, nothing changes
    rejected = api.start(publisher, {"target": target, "approved": False})
    assert drain() == 1
    [skipped] = event_execution_list(handler_name=handler)
    assert skipped["status"] == "SKIPPED"
    assert skipped["output"]["condition"] == "$.approved == true"
    assert skipped["messageId"] == tasks_by_ref(api.workflow(rejected))["approve"]["taskId"]
    assert tasks_by_ref(api.workflow(target))["wait_for_approval"]["status"] == "IN_PROGRESS"

    # condition true: the WAIT task completes with the resolved output
    approver = api.start(publisher, {"target": target, "approved": True})
    message_id = tasks_by_ref(api.workflow(approver))["approve"]["taskId"]
    assert process_event_message_job(message_id) is True
    wf = api.workflow(target)
    assert wf["status"] == "COMPLETED"
    assert wf["output"] == {"approvedBy": approver}
    wait = tasks_by_ref(wf)["wait_for_approval"]
    assert wait["status"] == "COMPLETED"
    assert wait["outputData"]["approvedBy"] == approver
    assert wait["outputData"]["conductor.event.messageId"] == message_id
    assert wait["outputData"]["conductor.event.name"] == event
    [done] = event_execution_list(message_id=message_id)
    assert done["status"] == "COMPLETED"
    assert done["action"] == "complete_task"
    assert done["name"] == handler and done["event"] == event
    assert done["output"]["workflowId"] == target

    # processing the same message again does nothing
    assert process_event_message_job(message_id) is False
    assert EventExecution.objects.filter(message_id=message_id).count() == 1
    assert EventMessage.objects.get(pk=message_id).processed_time is not None


def test_handler_starts_a_workflow(api, publisher):
    child = unique("child")
    worker = unique("child_task")
    api.register_task_defs(task_def(worker))
    api.register_workflow(workflow_def(child, [simple_task(worker, "work", {"o": "${workflow.input.orderId}"})]))
    event = f"conductor:{publisher}:approvals"
    add_handler(api, unique("starter"), event, [{"action": "start_workflow", "start_workflow": {
        "name": child, "correlationId": "${workflowInstanceId}",
        "input": {"orderId": "${workflowId}", "text": "approved=${approved}"}}}])

    publisher_id = api.start(publisher, {"target": "order-7", "approved": True})
    message_id = tasks_by_ref(api.workflow(publisher_id))["approve"]["taskId"]
    drain()
    [execution] = event_execution_list(message_id=message_id)
    assert execution["status"] == "COMPLETED" and execution["action"] == "start_workflow"
    started = api.workflow(execution["output"]["workflowId"])
    assert started["workflowName"] == child
    assert started["status"] == "RUNNING"
    assert started["correlationId"] == publisher_id
    assert started["event"] == event
    assert started["input"] == {"orderId": "order-7", "text": "approved=true",
                                "conductor.event.messageId": message_id, "conductor.event.name": event}
    assert tasks_by_ref(started)["work"]["inputData"] == {"o": "order-7"}


def test_inactive_handlers_never_fire(api, waiter):
    target = api.start(waiter)
    event = f"conductor:{unique('src')}:x"
    name = unique("inactive")
    body = {"name": name, "event": event, "actions": [complete_wait_action()]}
    api.ok(api.post("/event", body))  # active defaults to false
    message_id = event_message_publish(event=event, payload={"workflowId": target, "taskRefName": "wait_for_approval"})
    assert process_event_message_job(message_id) is True
    assert not EventExecution.objects.exists()
    assert tasks_by_ref(api.workflow(target))["wait_for_approval"]["status"] == "IN_PROGRESS"

    # switched on, then off again: only the message sent while active fires
    api.ok(api.put("/event", {**body, "active": True}))
    api.ok(api.put("/event", {**body, "active": False}))
    event_message_publish(event=event, payload={"workflowId": target, "taskRefName": "wait_for_approval"})
    drain()
    assert not EventExecution.objects.exists()
    assert api.workflow(target)["status"] == "RUNNING"


def test_failed_actions_are_recorded_and_do_not_stop_the_others(api, waiter):
    target = api.start(waiter)
    event = f"conductor:{unique('src')}:x"
    name = unique("mixed")
    add_handler(api, name, event, [
        {"action": "start_workflow", "start_workflow": {"name": "no_such_workflow"}},
        {"action": "complete_task", "complete_task": {"workflowId": "missing-workflow", "taskRefName": "t"}},
        {"action": "start_agent", "start_agent": {"name": "a"}},
        complete_wait_action(),
    ])
    message_id = event_message_publish(event=event, payload={"workflowId": target, "taskRefName": "wait_for_approval",
                                                              "workflowInstanceId": "someone"})
    assert process_event_message_job(message_id)
    executions = event_execution_list(message_id=message_id)
    assert [(e["action"], e["status"]) for e in executions] == [
        ("start_workflow", "FAILED"), ("complete_task", "FAILED"), ("start_agent", "FAILED"),
        ("complete_task", "COMPLETED")]
    assert executions[0]["output"] == {"exception": "No such workflow found by name: no_such_workflow, version: null"}
    assert executions[1]["output"] == {"exception": "No such workflow found by id: missing-workflow"}
    assert executions[2]["output"] == {"exception": f"Action not supported start_agent for event {event}"}
    assert [e["id"] for e in executions] == [f"{message_id}_{i}" for i in range(4)]
    assert api.workflow(target)["status"] == "COMPLETED"


def test_task_not_found_is_reported_in_the_output(api, waiter):
    """As SimpleActionProcessor: no such task -> the execution completes with ``error``."""
    target = api.start(waiter)
    event = f"conductor:{unique('src')}:x"
    add_handler(api, unique("h"), event, [complete_wait_action(taskRefName="nope")])
    message_id = event_message_publish(event=event, payload={"workflowId": target})
    drain()
    [execution] = event_execution_list(message_id=message_id)
    assert execution["status"] == "COMPLETED"
    assert execution["output"]["error"] == f"No task found with taskId: null, reference name: nope, workflowId: {target}"


def test_fail_task_fails_the_wait_task_with_the_reason(api, waiter):
    target = api.start(waiter)
    event = f"conductor:{unique('src')}:x"
    add_handler(api, unique("h"), event, [{"action": "fail_task", "fail_task": {
        "workflowId": "${wf}", "taskRefName": "wait_for_approval", "reasonForIncompletion": "rejected by ${who}",
        "output": {"who": "${who}"}}}])
    event_message_publish(event=event, payload={"wf": target, "who": "alice"})
    drain()
    wf = api.workflow(target)
    wait = tasks_by_ref(wf)["wait_for_approval"]
    assert wait["status"] == "FAILED"
    assert wait["reasonForIncompletion"] == "rejected by alice"
    assert wait["outputData"]["who"] == "alice"
    assert wf["status"] == "FAILED"


def test_complete_by_task_id(api, waiter):
    target = api.start(waiter)
    task_id = tasks_by_ref(api.workflow(target))["wait_for_approval"]["taskId"]
    event = f"conductor:{unique('src')}:x"
    add_handler(api, unique("h"), event, [{"action": "complete_task", "complete_task": {"taskId": "${id}"}}])
    event_message_publish(event=event, payload={"id": task_id})
    drain()
    assert api.workflow(target)["status"] == "COMPLETED"


def test_update_workflow_variables_and_terminate(api, waiter):
    target = api.start(waiter)
    api.ok(api.post(f"/tasks/{target}/wait_for_approval/IN_PROGRESS", {}))
    event = f"conductor:{unique('src')}:x"
    add_handler(api, unique("vars"), event, [
        {"action": "update_workflow_variables", "update_workflow_variables": {
            "workflowId": "${wf}", "variables": {"status": "${status}", "seen": ["${status}"]}, "appendArray": True}},
    ])
    event_message_publish(event=event, payload={"wf": target, "status": "one"})
    event_message_publish(event=event, payload={"wf": target, "status": "two"})
    assert drain() == 2
    assert api.workflow(target)["variables"] == {"status": "two", "seen": ["one", "two"]}

    stop = f"conductor:{unique('src')}:stop"
    add_handler(api, unique("stop"), stop, [{"action": "terminate_workflow", "terminate_workflow": {
        "workflowId": "${wf}", "terminationReason": "stopped by ${who}"}}])
    event_message_publish(event=stop, payload={"wf": target, "who": "bob"})
    drain()
    wf = api.workflow(target)
    assert wf["status"] == "TERMINATED"
    assert wf["reasonForIncompletion"] == "stopped by bob"


def test_condition_errors_and_evaluator_types(api):
    event = f"conductor:{unique('src')}:x"
    broken, by_value = unique("broken"), unique("byvalue")
    add_handler(api, broken, event, [{"action": "start_agent"}], condition="$.a.b.c.d")
    add_handler(api, by_value, event, [{"action": "start_agent"}], condition="flag", evaluatorType="value-param")
    message_id = event_message_publish(event=event, payload={"flag": True, "inline": "{\"a\": 1}"})
    drain()
    [failed] = event_execution_list(message_id=message_id, handler_name=broken)
    assert failed["status"] == "FAILED" and "exception" in failed["output"]
    [ran] = event_execution_list(message_id=message_id, handler_name=by_value)
    assert ran["action"] == "start_agent"  # the condition held; the action itself is unsupported


def test_expanded_inline_json_in_conditions(api):
    event = f"conductor:{unique('src')}:x"
    name = unique("inline")
    add_handler(api, name, event, [{"action": "start_agent"}], condition="$.body.kind == 'order'")
    message_id = event_message_publish(event=event, payload={"body": "{\"kind\": \"order\"}"})
    drain()
    [execution] = event_execution_list(message_id=message_id)
    assert execution["status"] == "FAILED" and execution["action"] == "start_agent"


def test_messages_without_handlers_are_marked_processed(api):
    message_id = event_message_publish(event="conductor:nobody:listens", payload={"a": 1})
    assert pending_message_ids() == [message_id]
    assert drain() == 1
    assert pending_message_ids() == []


def test_a_redelivered_message_does_not_repeat_recorded_actions(api):
    """A worker died after the first action committed but before the message was marked
    processed: the next attempt runs only what is not recorded."""
    child = unique("child")
    api.register_workflow(workflow_def(child, [wait_task("w")]))
    event = f"conductor:{unique('src')}:x"
    add_handler(api, unique("h"), event, [{"action": "start_workflow", "start_workflow": {"name": child}}])
    message_id = event_message_publish(event=event, payload={})
    assert process_event_message_job(message_id)
    EventMessage.objects.filter(pk=message_id).update(processed_time=None, lease_until=0)
    assert process_event_message_job(message_id)
    from apps.engine.models import WorkflowExecution

    assert WorkflowExecution.objects.filter(workflow_name=child).count() == 1


def test_a_claimed_message_is_not_processed_twice(api, clock):
    event = f"conductor:{unique('src')}:x"
    add_handler(api, unique("h"), event, [{"action": "start_agent"}])
    message_id = event_message_publish(event=event, payload={})
    # another worker holds the lease
    EventMessage.objects.filter(pk=message_id).update(lease_until=clock.ms + 60_000)
    assert process_event_message_job(message_id) is False
    assert event_handlers.event_messages_sweep() == 0
    assert not EventExecution.objects.exists()
    # the sweep takes over once the lease has expired
    clock.advance(61)
    assert event_handlers.event_messages_sweep() == 1
    assert EventExecution.objects.count() == 1
    assert event_handlers.event_messages_sweep() == 0


def test_the_sweep_leaves_fresh_messages_to_their_job(api, clock):
    message_id = event_message_publish(event="conductor:a:b", payload={})
    assert event_handlers.event_messages_sweep() == 0
    clock.advance(settings.CONDUCTOR["EVENT_SWEEP_GRACE_MS"] / 1000)
    assert event_handlers.event_messages_sweep() == 1
    assert EventMessage.objects.get(pk=message_id).processed_time == clock.ms


def test_transient_failures_are_retried_then_recorded(api, monkeypatch):
    from apps.core.clock import now_ms
    from apps.core.errors import Transient

    event = f"conductor:{unique('src')}:x"
    add_handler(api, unique("h"), event, [{"action": "start_agent"}])
    calls = []

    def flaky(action, payload, event, message_id):
        calls.append(message_id)
        raise Transient("backend busy")

    monkeypatch.setattr(event_handlers, "execute_action", flaky)
    message_id = event_message_publish(event=event, payload={})
    assert process_event_message_job(message_id) is False
    assert not EventExecution.objects.exists()
    for attempt in range(2, settings.CONDUCTOR["EVENT_MESSAGE_MAX_ATTEMPTS"] + 1):
        EventMessage.objects.filter(pk=message_id).update(lease_until=0)
        done = process_event_message_job(message_id)
        assert done is (attempt == settings.CONDUCTOR["EVENT_MESSAGE_MAX_ATTEMPTS"])
    [execution] = event_execution_list(message_id=message_id)
    assert execution["status"] == "FAILED"
    assert execution["output"] == {"exception": "backend busy"}
    assert len(calls) == settings.CONDUCTOR["EVENT_MESSAGE_MAX_ATTEMPTS"]
    assert EventMessage.objects.get(pk=message_id).processed_time <= now_ms()


# --- the default queue: POST /api/queue/update ---------------------------------------------------

def test_queue_update_completes_the_waiting_task(api, waiter):
    target = api.start(waiter)
    resp = api.post(f"/queue/update/{target}/wait_for_approval/COMPLETED", {"approvedBy": "queue"})
    assert resp.status_code == 200 and resp.content == b""
    assert api.ok(api.get("/queue/size")).json() == {"_default_queue:COMPLETED": 1, "_default_queue:FAILED": 0}
    drain()
    wf = api.workflow(target)
    assert wf["status"] == "COMPLETED"
    wait = tasks_by_ref(wf)["wait_for_approval"]
    assert wait["outputData"]["approvedBy"] == "queue"
    assert wait["outputData"]["externalId"] == f'{{"workflowId": "{target}", "taskRefName": "wait_for_approval"}}'


def test_queue_update_by_task_id_fails_the_task(api, waiter):
    target = api.start(waiter)
    task_id = tasks_by_ref(api.workflow(target))["wait_for_approval"]["taskId"]
    api.ok(api.post(f"/queue/update/{target}/task/{task_id}/FAILED", {}))
    drain()
    assert tasks_by_ref(api.workflow(target))["wait_for_approval"]["status"] == "FAILED"


def test_queue_update_answers(api):
    resp = api.post("/queue/update/wf/ref/IN_PROGRESS", {})
    assert resp.status_code == 400
    assert resp.json()["message"] == "There is no queue for handling IN_PROGRESS status"
    assert api.ok(api.get("/queue/")).json() == {"COMPLETED": "_default_queue:COMPLETED",
                                                  "FAILED": "_default_queue:FAILED"}
    # a message naming no workflow is dropped
    api.ok(api.post("/queue/update/no-such-workflow/ref/COMPLETED", {}))
    assert drain() == 1


@pytest.mark.postgres
def test_concurrent_workers_run_each_action_once(api):
    """Two workers race on one message whose lease expires under them: every action runs
    once (the EventExecution row commits with the action's effect)."""
    child = unique("child")
    api.register_workflow(workflow_def(child, [wait_task("w")]))
    event = f"conductor:{unique('src')}:x"
    add_handler(api, unique("h"), event, [{"action": "start_workflow", "start_workflow": {"name": child}}] * 3)
    message_ids = [event_message_publish(event=event, payload={"n": i}) for i in range(5)]
    barrier = threading.Barrier(4)

    def worker():
        try:
            barrier.wait()
            for _ in range(3):
                for message_id in message_ids:
                    EventMessage.objects.filter(pk=message_id).update(lease_until=0)  # leases always expired
                    process_event_message_job(message_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    from apps.engine.models import WorkflowExecution

    assert WorkflowExecution.objects.filter(workflow_name=child).count() == 15
    assert EventExecution.objects.filter(status="COMPLETED").count() == 15


def test_each_new_message_is_handed_to_the_cluster_after_commit(api, waiter, publisher, monkeypatch):
    """With django-q2 in sync mode the job enqueued on commit runs at once: publishing
    alone completes the waiting workflow (the job's dotted path resolves)."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)
    target = api.start(waiter)
    add_handler(api, unique("approve"), f"conductor:{publisher}:approvals", [complete_wait_action()])
    api.start(publisher, {"target": target, "approved": True})
    assert pending_message_ids() == []
    assert api.workflow(target)["status"] == "COMPLETED"


def test_a_workflow_can_wait_for_its_own_event(api):
    """EVENT then WAIT in one workflow; a handler on the published event completes the
    WAIT (processing runs after the publishing transaction commits)."""
    name = unique("self")
    api.register_workflow(workflow_def(name, [event_task("notify", "conductor"), wait_task("w")]))
    add_handler(api, unique("h"), f"conductor:{name}:notify", [{"action": "complete_task", "complete_task": {
        "workflowId": "${workflowInstanceId}", "taskRefName": "w", "output": {"via": "${event_produced}"}}}])
    wf_id = api.start(name)
    assert tasks_by_ref(api.workflow(wf_id))["w"]["status"] == "IN_PROGRESS"
    assert drain() == 1
    wf = api.workflow(wf_id)
    assert wf["status"] == "COMPLETED"
    assert tasks_by_ref(wf)["w"]["outputData"]["via"] == f"conductor:{name}:notify"
