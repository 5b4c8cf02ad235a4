"""TaskDef limits under concurrent pollers (real threads, each with its own connection):
``concurrentExecLimit`` never exceeded however many pollers race, and a rate window is
spent exactly once. On PostgreSQL the pollers really run in parallel (the per-definition
advisory lock decides); on SQLite the IMMEDIATE transactions take turns."""
from __future__ import annotations

import threading
import time

import pytest

from apps.engine import executor
from apps.engine.models import TaskExecution
from apps.metadata import services
from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)
DEADLINE_SECONDS = 120  # a bound for the loops, not a timing assertion


def limited_runs(count: int, **limits) -> str:
    name = unique("limits_wf")
    ttype = f"{name}_t"
    services.task_defs_register(task_defs=[task_def(ttype, **limits)])
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(ttype, "t")]))
    for i in range(count):
        executor.workflow_start(name=name, input={"i": i})
    return ttype


def test_racing_pollers_never_exceed_the_concurrency_limit(threads, settings):
    """6 pollers work through 24 tasks with concurrentExecLimit 3: right after each
    delivery the database holds at most 3 IN_PROGRESS tasks of the definition; all 24 end."""
    settings.CONDUCTOR = {**settings.CONDUCTOR, "TASK_LIMIT_POSTPONE_MS": 20}
    ttype = limited_runs(24, concurrentExecLimit=3)
    seen_in_progress: list[int] = []
    lock = threading.Lock()
    done: list[str] = []

    def poller(worker: str):
        def run():
            api = Api()
            deadline = time.monotonic() + DEADLINE_SECONDS
            while time.monotonic() < deadline:
                with lock:
                    if len(done) == 24:
                        return
                for task in api.poll(ttype, count=2, worker_id=worker):
                    running = TaskExecution.objects.filter(task_def_name=ttype, status="IN_PROGRESS").count()
                    with lock:
                        seen_in_progress.append(running)
                    api.complete(task)
                    with lock:
                        done.append(task["taskId"])
                time.sleep(0.005)
        return run

    threads([poller(f"w{i}") for i in range(6)])
    assert len(done) == 24 and len(set(done)) == 24
    assert max(seen_in_progress) <= 3
    assert TaskExecution.objects.filter(task_def_name=ttype, status="COMPLETED").count() == 24


def test_racing_pollers_get_exactly_the_limit_while_nobody_finishes(threads):
    ttype = limited_runs(20, concurrentExecLimit=4)

    def poller(worker: str):
        def run():
            api = Api()
            return [t["taskId"] for _ in range(15) for t in api.poll(ttype, count=3, worker_id=worker)]
        return run

    got = [tid for per in threads([poller(f"w{i}") for i in range(6)]) for tid in per]
    assert len(got) == 4 and len(set(got)) == 4
    rows = TaskExecution.objects.filter(task_def_name=ttype)
    assert rows.filter(status="IN_PROGRESS").count() == 4
    assert rows.filter(status="SCHEDULED", poll_count=0, start_time=0).count() == 16
    assert Api().ok(Api().get("/tasks/queue/sizes", {"taskType": ttype})).json() == {ttype: 16}


def test_racing_pollers_spend_a_rate_window_exactly_once(threads):
    """rateLimitPerFrequency 5 per 600 s: however the 6 pollers race and complete, 5 tasks
    are handed out in the window (the test ends long before it closes)."""
    ttype = limited_runs(20, rateLimitPerFrequency=5, rateLimitFrequencyInSeconds=600)

    def poller(worker: str):
        def run():
            api = Api()
            got = []
            for _ in range(15):
                for task in api.poll(ttype, count=3, worker_id=worker):
                    api.complete(task)
                    got.append(task["taskId"])
            return got
        return run

    got = [tid for per in threads([poller(f"w{i}") for i in range(6)]) for tid in per]
    assert len(got) == 5 and len(set(got)) == 5
    assert TaskExecution.objects.filter(task_def_name=ttype, status="SCHEDULED").count() == 15
