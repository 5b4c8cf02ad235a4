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
