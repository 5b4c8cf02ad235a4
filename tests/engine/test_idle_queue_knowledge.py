"""Empty queues answered from what the process knows (apps.engine.queue.known_idle): a poll
of a queue that an earlier read found empty does not read it again until a task may have
been queued on it: by a commit of this process, or by another connection (a commit to the
SQLite file, which changes its WAL index; a NOTIFY on PostgreSQL, which the process's
queue listener hears). Polls here run as the ASGI fast path runs them (each attempt in a
pool thread, outside any transaction), on SQLite and PostgreSQL."""
from __future__ import annotations

import os
import threading

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, connections

from apps.engine import executor, notify, queue
from apps.engine.models import TaskExecution
from tests.factories import simple_task, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)  # the polls' threads see the commits


@pytest.fixture
def looks(monkeypatch, settings):
    """The queue names ``queue.next_visible`` read, in order; poll data never due again
    within a test (a poll that must write it also reads its queue)."""
    monkeypatch.setitem(settings.CONDUCTOR, "POLL_DATA_RESOLUTION_MS", 600_000)
    monkeypatch.setitem(settings.CONDUCTOR, "IDLE_QUEUE_KNOWLEDGE_MS", 600_000)
    calls: list[str] = []
    real = queue.next_visible

    def counted(queue_name):
        calls.append(queue_name)
        return real(queue_name)

    monkeypatch.setattr(queue, "next_visible", counted)
    if connection.vendor == "postgresql":
        for _ in range(500):  # bounded: the listener connects (without it nothing is known)
            if notify.start_queue_listener():
                break
            threading.Event().wait(0.02)
        assert notify.start_queue_listener(), "the queue listener did not connect"
    return calls


def poll(task_type: str, timeout_ms: int = 0, worker_id: str = "w-idle"):
    """One poll as the fast path makes it (not in the caller's thread)."""
    return async_to_sync(queue.poll)(task_type=task_type, worker_id=worker_id, count=1, timeout_ms=timeout_ms)


def delayed_task(task_type: str) -> str:
    """Start a workflow whose one SIMPLE task waits 600 s (startDelay) before it can be polled."""
    name = unique("idle_wf")
    return executor.workflow_start(name=name, input={}, workflow_def=workflow_def(
        name, [simple_task(task_type, startDelay=600)]))


def test_an_empty_queue_is_read_once_then_known_empty(looks):
    task_type = unique("idle_empty")
    assert poll(task_type) == []
    assert poll(task_type) == []
    assert poll(task_type, timeout_ms=150) == []
    assert looks == [task_type]


def test_poll_data_is_still_recorded_for_a_queue_known_empty(looks):
    task_type = unique("idle_polldata")
    assert poll(task_type, worker_id="w-first") == []
    assert poll(task_type, worker_id="w-second") == []  # its poll data is due: written, no read
    assert looks == [task_type]
    assert sorted(p["workerId"] for p in queue.poll_data(task_type)) == ["w-first", "w-second"]


def test_a_commit_of_this_process_that_queues_a_task_ends_the_knowledge(looks):
    task_type, name = unique("idle_local"), unique("idle_wf")
    assert poll(task_type) == [] and looks == [task_type]
    wf_id = executor.workflow_start(name=name, input={}, workflow_def=workflow_def(name, [simple_task(task_type)]))
    assert [t.workflow_id for t in poll(task_type)] == [wf_id]


def test_no_knowledge_when_turned_off(looks, settings, monkeypatch):
    monkeypatch.setitem(settings.CONDUCTOR, "IDLE_QUEUE_KNOWLEDGE_MS", 0)
    task_type = unique("idle_off")
    assert poll(task_type) == [] and poll(task_type) == []
    assert looks == [task_type, task_type]


def test_a_task_made_pollable_by_another_connection_is_claimed(looks):
    """Another process's commit, played by a second database connection that this
    process's engine knows nothing of: it makes the delayed task pollable (and, on
    PostgreSQL, sends the NOTIFY the engine sends in such a transaction)."""
    task_type = unique("idle_remote")
    wf_id = delayed_task(task_type)
    assert poll(task_type) == [] and poll(task_type) == []
    assert looks == [task_type]  # the delayed task is due in 600 s: known not pollable before
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:  # autocommit: each statement commits
            cursor.execute("UPDATE engine_task_execution SET visible_at = 0 WHERE workflow_id = %s", [wf_id])
            if other.vendor == "postgresql":
                cursor.execute("SELECT pg_notify(%s, %s)", [notify.QUEUE_CHANNEL, f"{os.getpid() + 1}:{task_type}"])
    finally:
        other.close()
    got = []
    for _ in range(200):  # bounded: the listener hears the NOTIFY (PostgreSQL), the poll then claims
        got = poll(task_type, timeout_ms=100)
        if got:
            break
    assert [t.workflow_id for t in got] == [wf_id]
    assert TaskExecution.objects.get(workflow_id=wf_id).status == "IN_PROGRESS"


def test_a_long_poll_woken_by_another_connection_claims(looks):
    """A waiting long poll of a queue known empty is woken by the other connection's
    NOTIFY (PostgreSQL) or finds the task at its next re-check (SQLite: the WAL index
    changed, so the re-check reads)."""
    task_type = unique("idle_wait")
    wf_id = delayed_task(task_type)
    assert poll(task_type) == []
    got: list = []
    poller = threading.Thread(target=lambda: (got.extend(poll(task_type, timeout_ms=5000)),
                                              connections.close_all()))
    poller.start()
    threading.Event().wait(0.3)  # the poll waits
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("UPDATE engine_task_execution SET visible_at = 0 WHERE workflow_id = %s", [wf_id])
            if other.vendor == "postgresql":
                cursor.execute("SELECT pg_notify(%s, %s)", [notify.QUEUE_CHANNEL, f"{os.getpid() + 1}:{task_type}"])
    finally:
        other.close()
    poller.join(30)
    assert [t.workflow_id for t in got] == [wf_id]


def _posix_locks_on(inode: int) -> int:
    """How many POSIX locks this process holds on the file with ``inode`` (/proc/locks)."""
    pid, count = str(os.getpid()), 0
    with open("/proc/locks") as locks:
        for line in locks:
            fields = line.split()
            if "POSIX" in fields and pid in fields and any(f.endswith(f":{inode}") for f in fields):
                count += 1
    return count


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="reads Linux's /proc/locks")
def test_reading_the_sqlite_wal_index_keeps_sqlites_locks(looks):
    """The mark reads the -shm file SQLite holds POSIX locks on; closing any descriptor of
    it would release them all (and corrupt the database), so the process's locks on it are
    the same before and after many marks."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's WAL index")
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM engine_task_execution")  # a read: the WAL index is in use
    shm = str(connection.settings_dict["NAME"]) + "-shm"
    inode = os.stat(shm).st_ino
    before = _posix_locks_on(inode)
    assert before > 0, "SQLite holds no lock on its -shm file"
    for _ in range(5):
        assert notify.queue_mark(unique("idle_mark")) is not None
    assert _posix_locks_on(inode) == before
