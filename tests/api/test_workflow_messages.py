"""The workflow message queue through the REST API: ``POST /api/workflow/{id}/messages``
and the PULL_WORKFLOW_MESSAGES system task (Conductor's WorkflowMessageQueueResource and
PullWorkflowMessages), on both databases."""
from __future__ import annotations

import re
import uuid

import pytest

from tests.factories import simple_task, task_def, unique, workflow_def


def latest(wf: dict, ref: str) -> dict:
    """The last task of the Workflow JSON with this reference."""
    return [t for t in wf["tasks"] if t["referenceTaskName"] == ref][-1]


def pull(ref: str = "pull", **inputs) -> dict:
    return {"name": ref, "taskReferenceName": ref, "type": "PULL_WORKFLOW_MESSAGES", "inputParameters": inputs}


def push(api, workflow_id: str, payload, raw: str | None = None):
    return api.post(f"/workflow/{workflow_id}/messages", payload, raw=raw)


def pushed(api, workflow_id: str, payload: dict) -> str:
    resp = api.ok(push(api, workflow_id, payload))
    assert resp["Content-Type"].startswith("text/plain")
    message_id = resp.content.decode()
    assert str(uuid.UUID(message_id)) == message_id
    return message_id


def waiting_rows(workflow_id: str) -> int:
    from apps.wmq import queue

    return queue.size(workflow_id)


def test_a_push_wakes_a_waiting_pull_at_once_and_the_workflow_goes_on(api):
    after = unique("after")
    api.register_task_defs(task_def(after))
    name = unique("wmq")
    api.register_workflow(workflow_def(name, [pull(batchSize=5), simple_task(after, "after",
                                                                              {"got": "${pull.output.messages}"})]))
    workflow_id = api.start(name)
    task = latest(api.workflow(workflow_id), "pull")
    assert task["status"] == "IN_PROGRESS" and task["taskType"] == "PULL_WORKFLOW_MESSAGES"

    message_id = pushed(api, workflow_id, {"text": "hello", "z": 1, "a": [1, 2]})

    wf = api.workflow(workflow_id)
    task = latest(wf, "pull")
    assert task["status"] == "COMPLETED"
    assert task["outputData"]["count"] == 1
    (message,) = task["outputData"]["messages"]
    assert message["id"] == message_id and message["workflowId"] == workflow_id
    assert message["payload"] == {"text": "hello", "z": 1, "a": [1, 2]}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z", message["receivedAt"])
    worker = api.poll_one(after)
    assert worker["inputData"]["got"] == [message]
    assert waiting_rows(workflow_id) == 0


def test_messages_pushed_before_the_pull_wait_in_order_and_batch_size_bounds_one_pull(api):
    first, after = unique("first"), unique("after")
    api.register_task_defs(task_def(first), task_def(after))
    name = unique("wmq")
    api.register_workflow(workflow_def(name, [simple_task(first, "first"), pull(batchSize=2),
                                              simple_task(after, "after"), pull("pull2", batchSize=2.9)]))
    workflow_id = api.start(name)
    ids = [pushed(api, workflow_id, {"n": n}) for n in range(3)]
    assert waiting_rows(workflow_id) == 3
    api.complete(api.poll_one(first))

    task = latest(api.workflow(workflow_id), "pull")
    assert task["status"] == "COMPLETED" and task["outputData"]["count"] == 2
    assert [m["id"] for m in task["outputData"]["messages"]] == ids[:2]
    assert [m["payload"] for m in task["outputData"]["messages"]] == [{"n": 0}, {"n": 1}]
    assert waiting_rows(workflow_id) == 1

    api.complete(api.poll_one(after))
    wf = api.workflow(workflow_id)
    task = latest(wf, "pull2")
    assert [m["id"] for m in task["outputData"]["messages"]] == ids[2:]
    assert wf["status"] == "COMPLETED"


def test_a_non_blocking_pull_of_an_empty_queue_completes_with_none(api):
    name = unique("wmq")
    api.register_workflow(workflow_def(name, [pull(blocking=False, batchSize=0)]))
    workflow_id = api.start(name)
    wf = api.workflow(workflow_id)
    assert wf["status"] == "COMPLETED"
    assert latest(wf, "pull")["outputData"] == {"messages": [], "count": 0}


def test_a_string_blocking_counts_as_blocking_as_conductor_reads_it(api):
    name = unique("wmq")
    api.register_workflow(workflow_def(name, [pull(blocking="false")]))
    workflow_id = api.start(name)
    assert latest(api.workflow(workflow_id), "pull")["status"] == "IN_PROGRESS"


def test_an_event_loop_of_do_while_takes_one_message_per_iteration(transactional_db, api):
    """The loop condition is evaluated after the push's commit (outside the lock): real commits."""
    name = unique("wmq_loop")
    api.register_workflow(workflow_def(name, [{
        "name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
        "loopCondition": "$.loop['iteration'] < 3",
        "loopOver": [pull(batchSize=1),
                     {"name": "echo", "taskReferenceName": "echo", "type": "SET_VARIABLE",
                      "inputParameters": {"last": "${pull.output.messages[0].payload.text}"}}],
    }]))
    workflow_id = api.start(name)
    for word in ("one", "two", "three"):
        assert api.workflow(workflow_id)["status"] == "RUNNING"
        pushed(api, workflow_id, {"text": word})
        assert api.workflow(workflow_id)["variables"]["last"] == word
    assert api.workflow(workflow_id)["status"] == "COMPLETED"


def test_push_answers_404_409_and_400_as_conductor(api):
    resp = push(api, "no-such-workflow", {"a": 1})
    assert resp.status_code == 404 and resp["Content-Type"].startswith("text/plain")
    assert resp.content.decode() == "Workflow not found: no-such-workflow"

    name = unique("wmq")
    api.register_workflow(workflow_def(name, [pull()]))
    workflow_id = api.start(name)
    for body in ([1, 2], "text", None):
        api.refused(push(api, workflow_id, body, raw=None if body is not None else ""), 400)
    api.refused(push(api, workflow_id, None, raw="{not json"), 400)
    assert waiting_rows(workflow_id) == 0

    api.ok(api.put(f"/workflow/{workflow_id}/pause"))
    resp = push(api, workflow_id, {"a": 1})
    assert resp.status_code == 409
    assert resp.content.decode() == f"Workflow {workflow_id} is not in RUNNING state (current: PAUSED)"
    api.ok(api.put(f"/workflow/{workflow_id}/resume"))
    api.ok(api.delete(f"/workflow/{workflow_id}", params={"reason": "done"}))
    resp = push(api, workflow_id, {"a": 1})
    assert resp.status_code == 409
    assert resp.content.decode() == f"Workflow {workflow_id} is not in RUNNING state (current: TERMINATED)"
    assert waiting_rows(workflow_id) == 0


def test_a_full_queue_answers_429_and_a_taken_message_makes_room(api, settings):
    settings.CONDUCTOR_WMQ = {**settings.CONDUCTOR_WMQ, "MAX_QUEUE_SIZE": 2}
    first = unique("first")
    api.register_task_defs(task_def(first))
    name = unique("wmq")
    api.register_workflow(workflow_def(name, [simple_task(first, "first"), pull(batchSize=1), pull("pull2")]))
    workflow_id = api.start(name)
    pushed(api, workflow_id, {"n": 1})
    pushed(api, workflow_id, {"n": 2})
    resp = push(api, workflow_id, {"n": 3})
    assert resp.status_code == 429 and resp["Content-Type"].startswith("text/plain")
    assert resp.content.decode() == (f"Workflow message queue for workflowId={workflow_id} has reached the "
                                     "maximum size of 2")
    assert waiting_rows(workflow_id) == 2
    api.complete(api.poll_one(first))  # the first pull takes one, the second the other
    wf = api.workflow(workflow_id)
    assert [latest(wf, r)["outputData"]["messages"][0]["payload"] for r in ("pull", "pull2")] == [{"n": 1}, {"n": 2}]
    assert wf["status"] == "COMPLETED"


def test_the_batch_size_is_bounded_by_the_server_maximum(api, settings):
    settings.CONDUCTOR_WMQ = {**settings.CONDUCTOR_WMQ, "MAX_BATCH_SIZE": 2}
    first = unique("first")
    api.register_task_defs(task_def(first))
    name = unique("wmq")
    api.register_workflow(workflow_def(name, [simple_task(first, "first"), pull(batchSize=50),
                                              simple_task(first, "last")]))
    workflow_id = api.start(name)
    for n in range(3):
        pushed(api, workflow_id, {"n": n})
    api.complete(api.poll_one(first))
    assert latest(api.workflow(workflow_id), "pull")["outputData"]["count"] == 2
    assert waiting_rows(workflow_id) == 1


def test_a_workflow_that_ends_drops_its_queue_and_removal_deletes_it(api):
    first = unique("first")
    api.register_task_defs(task_def(first))
    name = unique("wmq")
    api.register_workflow(workflow_def(name, [simple_task(first, "first"), pull()]))
    ended = api.start(name)
    pushed(api, ended, {"n": 1})
    api.ok(api.delete(f"/workflow/{ended}", params={"reason": "stop"}))
    assert waiting_rows(ended) == 0

    removed = api.start(name)
    pushed(api, removed, {"n": 1})
    api.ok(api.delete(f"/workflow/{removed}/remove", params={"archiveWorkflow": "false"}))
    assert waiting_rows(removed) == 0


def test_a_queue_older_than_its_time_to_live_is_dropped(api, clock, settings):
    settings.CONDUCTOR_WMQ = {**settings.CONDUCTOR_WMQ, "TTL_SECONDS": 60}
    first = unique("first")
    api.register_task_defs(task_def(first))
    name = unique("wmq")
    api.register_workflow(workflow_def(name, [simple_task(first, "first"), pull(blocking=False)]))
    workflow_id = api.start(name)
    pushed(api, workflow_id, {"old": True})
    clock.advance(61)
    api.complete(api.poll_one(first))
    assert latest(api.workflow(workflow_id), "pull")["outputData"] == {"messages": [], "count": 0}


@pytest.mark.parametrize("raw, expected", [(None, 1), (0, 1), (-3, 1), (7, 7), (7.9, 7), (True, 1), ("5", 1),
                                           (500, 100)])
def test_batch_size_reads_as_conductor(raw, expected):
    from apps.engine.state import TaskState
    from apps.engine.task_types.pull_workflow_messages import batch_size

    task = TaskState(task_id="t", workflow_id="w", task_type="PULL_WORKFLOW_MESSAGES", task_def_name="p",
                     reference_task_name="p", input_data={} if raw is None else {"batchSize": raw})
    assert batch_size(task, 100) == expected


def test_the_plain_delete_names_the_models_table():
    from apps.wmq.models import MESSAGE_TABLE, WorkflowMessage

    assert MESSAGE_TABLE == WorkflowMessage._meta.db_table
