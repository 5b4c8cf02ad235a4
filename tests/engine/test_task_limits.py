"""TaskDef limits at poll time (Conductor ``ExecutionService.poll``): ``concurrentExecLimit``
(IN_PROGRESS tasks of the definition) and ``rateLimitPerFrequency`` per
``rateLimitFrequencyInSeconds`` (deliveries in a sliding window). Handed case 48 covers the
slot of a terminated run; these tests cover every way a slot is freed, the window, and that
queue sizes and the tasks refused stay as they were. Clock: frozen (``clock`` fixture)."""
from __future__ import annotations

from apps.engine import sweeper
from tests.factories import task_def, unique, workflow_def


def limited_runs(api, runs: int, **limits) -> tuple[str, list[str]]:
    """A one-task workflow whose task definition has ``limits``; ``runs`` runs started."""
    ttype = unique("limited")
    api.register_task_defs(task_def(ttype, **limits))
    name = unique("limited_wf")
    api.register_workflow(workflow_def(name, [{"name": ttype, "taskReferenceName": "work", "type": "SIMPLE"}]))
    return ttype, [api.start(name, {"i": i}) for i in range(runs)]


def queue_size(api, ttype: str) -> int:
    return api.ok(api.get("/tasks/queue/sizes", {"taskType": ttype})).json()[ttype]


def in_progress(api, ids: list[str]) -> int:
    return sum(1 for wid in ids for t in api.workflow(wid)["tasks"] if t["status"] == "IN_PROGRESS")


def test_concurrent_exec_limit_hands_out_at_most_the_limit(api, clock):
    ttype, ids = limited_runs(api, 5, concurrentExecLimit=2)
    got = api.poll(ttype, count=5)
    assert len(got) == 2
    assert queue_size(api, ttype) == 3
    # the refused tasks are back in the queue exactly as they were
    waiting = [t for wid in ids for t in api.workflow(wid)["tasks"] if t["status"] == "SCHEDULED"]
    assert len(waiting) == 3
    assert all(t["pollCount"] == 0 and t["startTime"] == 0 and t.get("workerId") is None for t in waiting)
    clock.advance(5)
    assert api.poll(ttype, count=5) == []  # still two IN_PROGRESS
    assert queue_size(api, ttype) == 3


def test_every_end_of_a_task_frees_its_slot(api, clock):
    """Completed, failed, timed out (responseTimeoutSeconds) and canceled by a terminate:
    each leaves the IN_PROGRESS count, and the next poll gets exactly one more task."""
    ttype, ids = limited_runs(api, 5, concurrentExecLimit=1, responseTimeoutSeconds=30)
    by_wf = {}

    def take_one():
        clock.advance(1.5)  # past the postponement of the tasks refused before
        got = api.poll(ttype, count=3)
        assert len(got) == 1, got
        assert api.poll(ttype, count=3) == []
        by_wf[got[0]["workflowInstanceId"]] = got[0]
        return got[0]

    first = take_one()
    api.complete(first)
    second = take_one()
    api.ok(api.update(second, "FAILED", reasonForIncompletion="boom"))
    assert api.workflow(second["workflowInstanceId"])["status"] == "FAILED"
    third = take_one()
    clock.advance(31)
    sweeper.sweep_once()
    assert api.workflow(third["workflowInstanceId"])["tasks"][0]["status"] == "TIMED_OUT"
    fourth = take_one()
    api.ok(api.delete(f"/workflow/{fourth['workflowInstanceId']}", params={"reason": "stop"}))
    assert api.workflow(fourth["workflowInstanceId"])["tasks"][0]["status"] == "CANCELED"
    fifth = take_one()
    assert len({t["taskId"] for t in (first, second, third, fourth, fifth)}) == 5
    assert queue_size(api, ttype) == 0
    assert in_progress(api, ids) == 1


def test_a_retry_waits_for_a_slot_like_any_task(api, clock):
    ttype, ids = limited_runs(api, 2, concurrentExecLimit=1, retryCount=1)
    a = api.poll_one(ttype)
    api.ok(api.update(a, "FAILED", reasonForIncompletion="again"))  # retried at once (delay 0)
    clock.advance(1.5)
    b = api.poll_one(ttype)  # one of the two SCHEDULED tasks, the retry or the other run
    assert api.poll(ttype, count=2) == []
    api.complete(b)
    clock.advance(1.5)
    c = api.poll_one(ttype)
    api.complete(c)
    assert {api.workflow(w)["status"] for w in ids} == {"COMPLETED"}


def test_rate_limit_counts_deliveries_in_a_sliding_window(api, clock):
    ttype, ids = limited_runs(api, 5, rateLimitPerFrequency=2, rateLimitFrequencyInSeconds=10)
    first = api.poll(ttype, count=5)
    assert len(first) == 2
    for task in first:
        api.complete(task)
    # nothing is running, but the window's two deliveries are spent
    assert api.poll(ttype, count=5) == []
    assert queue_size(api, ttype) == 3
    clock.advance(9.999)
    assert api.poll(ttype, count=5) == []
    clock.advance(0.001)
    second = api.poll(ttype, count=5)
    assert len(second) == 2
    clock.advance(4)
    assert api.poll(ttype) == []
    clock.advance(6)
    assert len(api.poll(ttype, count=5)) == 1
    for task in second:
        api.complete(task)
    assert queue_size(api, ttype) == 0


def test_rate_limit_of_zero_frequency_is_no_limit(api, clock):
    """Conductor applies the rate limit only when both values are above 0."""
    ttype, _ = limited_runs(api, 3, rateLimitPerFrequency=1, rateLimitFrequencyInSeconds=0)
    assert len(api.poll(ttype, count=3)) == 3


def test_both_limits_together(api, clock):
    ttype, _ = limited_runs(api, 4, concurrentExecLimit=1, rateLimitPerFrequency=2, rateLimitFrequencyInSeconds=60)
    a = api.poll(ttype, count=4)
    assert len(a) == 1  # concurrency first
    api.complete(a[0])
    clock.advance(1.5)
    b = api.poll(ttype, count=4)
    assert len(b) == 1
    api.complete(b[0])
    clock.advance(1.5)
    assert api.poll(ttype, count=4) == []  # concurrency free, rate window spent
    clock.advance(60)
    assert len(api.poll(ttype, count=4)) == 1


def test_limits_span_domains(api, clock):
    """The count is per task definition, whatever queue (domain) a task sits in."""
    ttype = unique("limited")
    api.register_task_defs(task_def(ttype, concurrentExecLimit=1))
    name = unique("limited_wf")
    api.register_workflow(workflow_def(name, [{"name": ttype, "taskReferenceName": "work", "type": "SIMPLE"}]))
    api.start(name, taskToDomain={ttype: "east"})
    api.start(name)
    assert len(api.poll(ttype, domain="east")) == 1
    assert api.poll(ttype) == []


def test_queue_pages_count_refused_tasks_as_waiting(api, clock):
    """The operator queue page and /tasks/queue/all show the tasks a limit holds back as
    queued (SCHEDULED), and only the handed-out ones as in progress."""
    from apps.ui.selectors import queues_overview

    ttype, _ = limited_runs(api, 5, concurrentExecLimit=2)
    api.poll(ttype, count=5)
    row = next(r for r in queues_overview() if r["task_type"] == ttype)
    assert (row["depth"], row["in_progress"]) == (3, 2)
    assert api.ok(api.get("/tasks/queue/all")).json()[ttype] == 3
