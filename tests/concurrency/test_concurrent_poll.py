"""Concurrent polling: a task is handed to at most one poller (docs/conductor-notes.md §1.4
poll algorithm; case 30 "a task instance is delivered to at most one poller")."""
from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from apps.engine import executor
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.metadata import services
from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)

HOLD_SECONDS = 120  # bound on how long a test transaction holds a row (ends as soon as released)


def one_task_workflows(count: int) -> tuple[str, str, list[str]]:
    name = unique("poll_wf")
    ttype = f"{name}_t"
    services.task_defs_register(task_defs=[task_def(ttype)])
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(ttype, "t", {"i": "${workflow.input.i}"})]))
    ids = [executor.workflow_start(name=name, input={"i": i}) for i in range(count)]
    return name, ttype, ids


def test_200_tasks_polled_by_8_threads_are_each_handed_out_once(threads):
    _, ttype, wf_ids = one_task_workflows(200)
    assert TaskExecution.objects.filter(task_def_name=ttype, status="SCHEDULED").count() == 200

    def poller(worker: str):
        def run():
            api = Api()
            got = []
            while True:
                batch = api.poll(ttype, count=7, worker_id=worker)
                if not batch:
                    return got
                got.extend((t["taskId"], t["workerId"], t["pollCount"], t["status"]) for t in batch)
        return run

    results = threads([poller(f"w{i}") for i in range(8)])
    handed = [item for per_thread in results for item in per_thread]
    ids = [h[0] for h in handed]
    assert len(ids) == 200
    assert len(set(ids)) == 200
    assert all(h[2] == 1 and h[3] == "IN_PROGRESS" for h in handed)
    by_worker = {h[0]: h[1] for h in handed}
    rows = {r.task_id: r for r in TaskExecution.objects.filter(task_def_name=ttype)}
    assert set(rows) == set(ids)
    assert all(r.status == "IN_PROGRESS" and r.poll_count == 1 for r in rows.values())
    assert all(rows[tid].worker_id == worker for tid, worker in by_worker.items())
    assert {r.workflow_id for r in rows.values()} == set(wf_ids)
    assert sum(1 for per_thread in results if per_thread) >= 2  # the work was really shared


def test_terminate_racing_polls_never_leaves_a_task_running(threads):
    """Terminating workflows while pollers claim their tasks: every task of a TERMINATED
    workflow ends CANCELED, whoever won."""
    _, ttype, wf_ids = one_task_workflows(30)

    def terminator():
        for wf_id in wf_ids:
            executor.workflow_terminate(workflow_id=wf_id, reason="race")

    def poller(worker):
        def run():
            api = Api()
            got = []
            for _ in range(40):
                got.extend(t["taskId"] for t in api.poll(ttype, count=2, worker_id=worker))
            return got
        return run

    results = threads([terminator] + [poller(f"p{i}") for i in range(3)])
    polled = [tid for per_thread in results[1:] for tid in per_thread]
    assert len(polled) == len(set(polled))
    assert set(WorkflowExecution.objects.filter(workflow_id__in=wf_ids).values_list("status", flat=True)) == \
        {"TERMINATED"}
    statuses = set(TaskExecution.objects.filter(task_def_name=ttype).values_list("status", flat=True))
    assert statuses == {"CANCELED"}


@pytest.mark.postgres
def test_poll_skips_rows_locked_by_another_transaction(postgres_only):
    """PostgreSQL: a poll never waits for, nor returns, a task row another transaction
    holds (FOR UPDATE SKIP LOCKED)."""
    _, ttype, _ = one_task_workflows(3)
    locked_id = TaskExecution.objects.filter(task_def_name=ttype).order_by("seq", "task_id").first().task_id
    locked = threading.Event()
    release = threading.Event()
    gave_up = threading.Event()  # set inside the transaction, before its lock goes

    def holder():
        try:
            with transaction.atomic():
                list(TaskExecution.objects.select_for_update().filter(pk=locked_id))
                locked.set()
                if not release.wait(HOLD_SECONDS):
                    gave_up.set()
        finally:
            connection.close()

    t = threading.Thread(target=holder, daemon=True)
    t.start()
    try:
        assert locked.wait(HOLD_SECONDS)
        got = Api().poll(ttype, count=10, worker_id="skipper")
        # no timing (issue #14): a poll that waited for the row could only have gone on
        # once the holder gave up, and the holder says so before it lets the row go
        assert not gave_up.is_set(), "the poll waited for the locked row"
    finally:
        release.set()
        t.join(HOLD_SECONDS)
    assert len(got) == 2
    assert locked_id not in {task["taskId"] for task in got}
    assert TaskExecution.objects.get(pk=locked_id).status == "SCHEDULED"


def test_requeued_tasks_are_handed_out_once_while_pollers_race(threads):
    """Workers answering IN_PROGRESS (callbackAfterSeconds 0) put the same task back on its
    queue while other workers poll: every requeued task is delivered exactly once more."""
    _, ttype, wf_ids = one_task_workflows(20)
    first = Api().poll(ttype, count=20, worker_id="first")
    assert len(first) == 20
    seen: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + HOLD_SECONDS  # a bound: the pollers stop once all 20 are back

    def requeue():
        api = Api()
        for task in first:
            resp = api.post("/tasks", {"workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"],
                                       "status": "IN_PROGRESS", "callbackAfterSeconds": 0, "workerId": "first"})
            assert resp.status_code == 200

    def poller(worker):
        def run():
            api = Api()
            got = []
            while time.monotonic() < deadline:
                with lock:
                    if len(seen) >= 20:
                        return got
                batch = api.poll(ttype, count=2, worker_id=worker)
                with lock:
                    seen.extend(t["taskId"] for t in batch)
                got.extend((t["taskId"], t["pollCount"]) for t in batch)
            return got
        return run

    results = threads([requeue] + [poller(f"second-{i}") for i in range(3)])
    second = [item for per_thread in results[1:] for item in per_thread]
    assert sorted(tid for tid, _ in second) == sorted(t["taskId"] for t in first)
    assert {count for _, count in second} == {2}
    rows = TaskExecution.objects.filter(task_def_name=ttype)
    assert all(r.status == "IN_PROGRESS" and r.poll_count == 2 and r.worker_id.startswith("second-") for r in rows)
    assert rows.count() == 20
