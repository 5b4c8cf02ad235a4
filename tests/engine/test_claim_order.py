"""The order a poll hands tasks out in (``apps.engine.queue``): the highest
``workflowPriority`` first, then the earliest visible, as Conductor's queue pops
(``PostgresQueueDAO.peekMessages``: ``ORDER BY priority DESC, deliver_on, created_on``).
The claim reads the queue through the ``task_claim`` index up to its LIMIT; these tests
hold it to that order on either database, one task per poll and several per batch poll.
Clock: frozen, advanced between the starts so each task has its own visible time."""
from __future__ import annotations

from tests.factories import task_def, unique, workflow_def


def queued(api, clock, priorities: list[int]) -> tuple[str, dict[str, tuple[int, int]]]:
    """One workflow per entry of ``priorities``, started 1 s apart; its first task's type
    and ``{workflow id: (priority, start order)}``."""
    ttype = unique("ordered")
    api.register_task_defs(task_def(ttype))
    name = unique("ordered_wf")
    api.register_workflow(workflow_def(name, [{"name": ttype, "taskReferenceName": "work", "type": "SIMPLE"}]))
    started = {}
    for order, priority in enumerate(priorities):
        started[api.start(name, {"i": order}, priority=priority)] = (priority, order)
        clock.advance(1)
    return ttype, started


def expected_order(started: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(started, key=lambda wid: (-started[wid][0], started[wid][1]))


def test_single_polls_take_the_highest_priority_then_the_oldest(api, clock):
    ttype, started = queued(api, clock, [0, 5, 0, 9, 5, 0, 99, 9])
    handed = [api.poll_one(ttype)["workflowInstanceId"] for _ in started]
    assert handed == expected_order(started)
    assert api.poll(ttype) == []


def test_a_batch_poll_takes_the_first_of_that_order(api, clock):
    ttype, started = queued(api, clock, [3, 0, 7, 3, 7, 0])
    first = api.poll(ttype, count=3)
    rest = api.poll(ttype, count=10)
    order = expected_order(started)
    assert {t["workflowInstanceId"] for t in first} == set(order[:3])
    assert [t["workflowInstanceId"] for t in rest] == order[3:]


def test_a_task_not_yet_visible_waits_whatever_its_priority(api, clock):
    """A task put back with a callback (visible later) is skipped by the claim until then,
    even when its priority is the highest of the queue."""
    ttype, started = queued(api, clock, [9, 0])
    top = api.poll_one(ttype)
    assert started[top["workflowInstanceId"]][0] == 9
    api.ok(api.update(top, "IN_PROGRESS", callbackAfterSeconds=30))
    low = api.poll_one(ttype)
    assert started[low["workflowInstanceId"]][0] == 0
    assert api.poll(ttype) == []
    clock.advance(31)
    assert api.poll_one(ttype)["taskId"] == top["taskId"]


def test_one_claim_for_several_workers_gives_each_its_own_of_the_first_tasks(api, clock):
    """``queue.claim_for`` (a fused batch's update-v2 calls of one queue, claimed at once):
    the first tasks of the queue's order, one per worker (which worker gets which of them
    is not promised), IN_PROGRESS for that worker, with its task.polled event; a worker
    beyond the queue's tasks gets None."""
    from django.db import transaction

    from apps.engine import queue

    ttype, started = queued(api, clock, [0, 9, 5, 7, 0])
    with transaction.atomic():
        got = queue.claim_for(ttype, ["w1", "w2", "w3"])
    assert sorted(t.workflow_id for t in got) == sorted(expected_order(started)[:3])
    rest = [wid for wid in expected_order(started)[3:]]
    with transaction.atomic():
        got = queue.claim_for(ttype, ["w1", "w2", "w3"])
    assert got[2] is None and sorted(t.workflow_id for t in got[:2]) == sorted(rest)
    for task, worker in zip(got[:2], ["w1", "w2"]):
        stored = api.task(task.task_id)
        assert (stored["status"], stored["workerId"], stored["pollCount"]) == ("IN_PROGRESS", worker, 1)
        events = api.get(f"/workflow/{task.workflow_id}/history").json()["events"]
        assert [e["data"]["workerId"] for e in events if e["kind"] == "task.polled"] == [worker]
    assert api.poll(ttype) == []


def test_one_claim_for_several_workers_keeps_a_concurrency_limit(api, clock):
    """A TaskDef's concurrentExecLimit holds back what a joint claim took beyond it: the
    tasks over the limit go back to the queue, their workers get None."""
    from django.db import transaction

    from apps.engine import queue

    ttype = unique("limited")
    api.register_task_defs(task_def(ttype, concurrentExecLimit=1))
    name = unique("limited_wf")
    api.register_workflow(workflow_def(name, [{"name": ttype, "taskReferenceName": "work", "type": "SIMPLE"}]))
    for i in range(3):
        api.start(name, {"i": i})
        clock.advance(1)
    with transaction.atomic():
        got = queue.claim_for(ttype, ["w1", "w2", "w3"])
    assert [t is not None for t in got] == [True, False, False]
    assert api.poll(ttype) == []  # one IN_PROGRESS: the limit holds the others back
