"""How often a long poll reads its queue (apps.engine.queue.poll): once before it waits;
woken by a commit that queued a task it claims at once, without another look; a wait that
lasts to the timeout answers [] without another look."""
from __future__ import annotations

import threading

import pytest

from apps.engine import executor, queue
from tests.factories import simple_task, unique, workflow_def


@pytest.fixture
def looks(monkeypatch):
    calls = []
    real = queue.next_visible

    def counted(queue_name):
        calls.append(queue_name)
        return real(queue_name)

    monkeypatch.setattr(queue, "next_visible", counted)
    return calls


@pytest.mark.django_db
def test_a_long_poll_that_times_out_looks_once(looks, settings, monkeypatch):
    monkeypatch.setitem(settings.CONDUCTOR, "LONG_POLL_RECHECK_MS", 60_000)  # no periodic re-check
    task_type = unique("lp_idle")
    assert queue.task_poll(task_type=task_type, worker_id="w", timeout_ms=200) == []
    assert looks == [task_type]


@pytest.mark.django_db(transaction=True)  # the poll's thread sees the start's commit
def test_a_woken_long_poll_claims_without_looking_again(looks, settings, monkeypatch):
    monkeypatch.setitem(settings.CONDUCTOR, "LONG_POLL_RECHECK_MS", 60_000)
    task_type, name = unique("lp_woken"), unique("lp_wf")
    got, waiting = [], threading.Event()

    def poll():
        from django.db import connection

        waiting.set()
        try:
            got.extend(queue.task_poll(task_type=task_type, worker_id="w", timeout_ms=5000))
        finally:
            connection.close()

    poller = threading.Thread(target=poll)
    poller.start()
    waiting.wait(10)
    for _ in range(1000):  # bounded: until the poll has looked once and waits
        if looks:
            break
        threading.Event().wait(0.01)
    wf_id = executor.workflow_start(name=name, input={}, workflow_def=workflow_def(name, [simple_task(task_type)]))
    poller.join(30)
    assert [t.workflow_id for t in got] == [wf_id]
    assert looks == [task_type]
