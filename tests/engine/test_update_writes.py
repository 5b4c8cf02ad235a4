"""What a worker's task update writes and reads (issue #25, fewer statements per
transition), with the behaviour unchanged:

* an update that only pushes the execution's next deadline later keeps the earlier one
  stored (no workflow row written); the sweeper decides at the earlier time, writes the
  exact deadline, and every timeout still fires on time;
* an execution of at most ``TaskList.LOAD_ALL_UP_TO`` tasks is read whole when locked
  (one statement), a larger one lazily (its unsettled tasks, then by reference);
* a JSON column decoded and left as it was is not written again (on PostgreSQL the
  text read back from ``jsonb`` never equals the text written)."""
from __future__ import annotations

from contextlib import contextmanager

from django.db import connection

from apps.engine import store, sweeper
from apps.engine.models import WorkflowExecution
from apps.engine.state import TaskList
from tests.factories import simple_task, task_def, unique, workflow_def


def next_decide_at(wid: str) -> int | None:
    return WorkflowExecution.objects.values_list("next_decide_at", flat=True).get(pk=wid)


def test_an_update_keeps_an_earlier_deadline_and_the_sweeper_still_times_out_on_time(api, clock):
    a, b = unique("wa"), unique("wb")
    api.register_task_defs(task_def(a, retryCount=0, responseTimeoutSeconds=10),
                           task_def(b, retryCount=0, responseTimeoutSeconds=10, timeoutPolicy="TIME_OUT_WF"))
    name = unique("deadline_wf")
    api.register_workflow(workflow_def(name, [simple_task(a, "a"), simple_task(b, "b")]))
    t0 = clock.ms
    wid = api.start(name)
    assert next_decide_at(wid) == t0 + 10_000  # a's provisional response deadline
    clock.advance(1)
    api.complete(api.poll_one(a), {"x": 1})
    # b's deadline (t0 + 11 s) is later: the stored t0 + 10 s stays, no workflow row written
    assert next_decide_at(wid) == t0 + 10_000
    clock.advance(1)
    api.poll_one(b)  # b IN_PROGRESS from t0 + 2 s: response deadline t0 + 12 s
    clock.advance(8.1)  # t0 + 10.1 s: the earlier deadline is due; the sweeper writes the exact one
    assert sweeper.sweep_once() == 1
    assert next_decide_at(wid) == t0 + 12_000
    assert api.workflow(wid)["status"] == "RUNNING"
    clock.advance(2)  # t0 + 12.1 s
    assert sweeper.sweep_once() == 1
    wf = api.workflow(wid)
    assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("a", "COMPLETED"), ("b", "TIMED_OUT")]
    assert wf["status"] == "TIMED_OUT"
    assert next_decide_at(wid) is None


def test_an_earlier_deadline_from_an_update_is_written(api, clock):
    a, b = unique("wa"), unique("wb")
    api.register_task_defs(task_def(a, retryCount=0, responseTimeoutSeconds=60),
                           task_def(b, retryCount=0, responseTimeoutSeconds=5))
    name = unique("deadline_wf")
    api.register_workflow(workflow_def(name, [simple_task(a, "a"), simple_task(b, "b")]))
    t0 = clock.ms
    wid = api.start(name)
    assert next_decide_at(wid) == t0 + 60_000
    clock.advance(1)
    api.complete(api.poll_one(a), {})
    assert next_decide_at(wid) == t0 + 6_000


@contextmanager
def statements():
    """The SQL text of every statement run meanwhile, the engine's own cursors included
    (``connection.execute_wrapper`` sees them on both databases)."""
    seen: list[str] = []

    def record(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield seen


def tasks_statements(queries) -> int:
    """Statements that read task rows of one execution."""
    return sum(1 for sql in queries if sql.startswith("SELECT task_id, workflow_id")
               and "FROM engine_task_execution WHERE workflow_id" in sql)


def test_a_small_execution_is_read_whole_once_per_update(api):
    worker = unique("small")
    api.register_task_defs(task_def(worker, retryCount=0))
    name = unique("small_wf")
    api.register_workflow(workflow_def(name, [simple_task(worker, f"t{i}") for i in range(3)],
                                       outputParameters={"first": "${t0.output.x}"}))
    wid = api.start(name)
    for i in range(3):
        task = api.poll_one(worker)
        with statements() as update:
            api.complete(task, {"x": i})
        # the lock reads every task row in one statement: no look-up by reference, no
        # MAX(seq), no TERMINATE / failed-task / last-task reads at the end
        assert tasks_statements(update) == 1, [sql[:120] for sql in update]
        assert not any(sql.startswith("SELECT MAX(seq)") for sql in update)
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    assert wf["output"] == {"first": 0}
    assert [t["seq"] for t in wf["tasks"]] == [1, 2, 3]


def test_a_larger_execution_is_read_lazily_and_numbers_its_tasks_right(api):
    worker = unique("big")
    api.register_task_defs(task_def(worker, retryCount=0))
    n = TaskList.LOAD_ALL_UP_TO + 3
    name = unique("big_wf")
    api.register_workflow(workflow_def(name, [simple_task(worker, f"t{i}") for i in range(n)]))
    wid = api.start(name)
    for i in range(n):
        api.complete(api.poll_one(worker), {"x": i})
    loaded = store.snapshot_workflow(wid)
    assert not loaded.tasks.complete  # past the bound: the unsettled rows only
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    assert [t["seq"] for t in wf["tasks"]] == list(range(1, n + 1))


def test_a_decoded_json_column_left_as_it_was_is_not_written(api):
    worker = unique("json")
    api.register_task_defs(task_def(worker, retryCount=0))
    name = unique("json_wf")
    api.register_workflow(workflow_def(name, [simple_task(worker, "a", {"nested": {"zz": 1, "a": [1, 2.5, True]}}),
                                              simple_task(worker, "b")]))
    api.start(name)
    task = api.poll_one(worker)
    with statements() as update:
        api.complete(task, {"out": 1})
    written = [sql for sql in update if sql.startswith("UPDATE engine_task_execution SET")]
    assert written and not any("input_data" in sql for sql in written), written


def test_same_json_tells_1_1_0_and_true_apart_and_ignores_key_order():
    raw = store._Raw('{"a": 1}')
    assert store._same_json({"a": 1}, raw)
    assert not store._same_json({"a": 1.0}, raw)
    assert not store._same_json({"a": True}, raw)
    assert store._same_json({"b": [1, 2], "a": None}, store._Raw('{"a": null, "b": [1, 2]}'))


def test_a_claim_records_the_same_polled_event_with_or_without_a_task_limit(api):
    """On PostgreSQL the claim's own statement writes the ``task.polled`` event of a task
    no limit holds back, and ``history.record_polls`` that of a limited task it admitted;
    both read the same (on SQLite both come from ``record_polls``)."""
    from apps.engine.models import ExecutionEvent

    free, limited = unique("free"), unique("limited")
    api.register_task_defs(task_def(free), task_def(limited, concurrentExecLimit=5))
    events = {}
    for name in (free, limited):
        wf_name = unique("polled_wf")
        api.register_workflow(workflow_def(wf_name, [simple_task(name, "only")]))
        wid = api.start(wf_name)
        task = api.poll_one(name, worker_id="w-9")
        [event] = ExecutionEvent.objects.filter(workflow_id=wid, kind="task.polled")
        assert event.task_id == task["taskId"]
        events[name] = event.data
        assert event.data == {"ref": "only", "from": "SCHEDULED", "to": "IN_PROGRESS", "workerId": "w-9",
                              "pollCount": 1, "startTime": task["startTime"]}
    assert events[free].keys() == events[limited].keys()


def test_a_large_execution_locked_after_a_concurrent_update_numbers_its_next_task_after_it(api, transactional_db):
    """Two updates of one execution of more than ``TaskList.LOAD_ALL_UP_TO`` tasks: the
    second waits for the first's lock and must see the task the first scheduled when it
    numbers its own (on PostgreSQL a statement that waited for a row lock reads the rest
    as of its start, so the highest seq is read after the lock)."""
    import threading
    import time

    from django.db import close_old_connections, transaction

    from apps.engine import executor

    worker = unique("race")
    api.register_task_defs(task_def(worker, retryCount=0))
    n = TaskList.LOAD_ALL_UP_TO + 4
    name = unique("race_wf")
    api.register_workflow(workflow_def(name, [simple_task(worker, f"t{i}") for i in range(n)]))
    wid = api.start(name)
    for i in range(n - 2):
        api.complete(api.poll_one(worker), {"x": i})
    task = api.poll_one(worker)  # seq n - 1; completing it schedules seq n
    locked, seen = threading.Event(), {}

    def first():
        try:
            with transaction.atomic():
                executor.task_update(task_result={"workflowInstanceId": wid, "taskId": task["taskId"],
                                                  "status": "COMPLETED", "outputData": {}})
                locked.set()
                time.sleep(0.5)  # the second locker is waiting meanwhile
        finally:
            close_old_connections()

    def second():
        locked.wait(30)
        try:
            with transaction.atomic():
                seen["max"] = store.lock_workflow(wid).tasks.max_seq()
        finally:
            close_old_connections()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert seen["max"] == n
