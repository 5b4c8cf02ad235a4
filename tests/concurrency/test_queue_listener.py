"""Long polls woken across processes on PostgreSQL (LISTEN/NOTIFY, ``notify.start_queue_listener``).

Another process is stood in for by a second connection that sends what another
process's commit sends (``pg_notify`` with another pid); the listener must wake exactly
the long polls of that queue, and a rolled-back transaction must wake nobody.
"""
from __future__ import annotations

import asyncio
import threading
import time

import psycopg
import pytest
from django.db import connection, transaction

from apps.engine import notify

pytestmark = [pytest.mark.django_db(transaction=True)]

LISTEN_SECONDS = 60  # bound on waiting for a notification; ends when it arrives


def _other_process_notifies(payload_queue: str, *, commit: bool = True) -> None:
    """Send a NOTIFY as another server process would (pid 1 is never ours), from its own
    connection, committing or rolling back."""
    settings = connection.settings_dict
    params = {k: v for k, v in {"dbname": settings["NAME"], "user": settings.get("USER"),
                                 "password": settings.get("PASSWORD"), "host": settings.get("HOST"),
                                 "port": settings.get("PORT")}.items() if v}
    with psycopg.connect(**params) as other:
        other.execute("SELECT pg_notify(%s, %s)", [notify.QUEUE_CHANNEL, f"1:{payload_queue}"])
        if commit:
            other.commit()
        else:
            other.rollback()


def _wait_listening(deadline_s: float = 30) -> None:
    end = time.monotonic() + deadline_s
    while not notify.start_queue_listener():
        assert time.monotonic() < end, "the queue listener never connected"
        time.sleep(0.05)


async def _waits(queue_name: str, timeout_s: float, ready: threading.Event) -> bool:
    with notify.queue_waiter(queue_name) as waiter:
        ready.set()
        return await waiter.wait(timeout_s)


def _wait_in_thread(queue_name: str, timeout_s: float) -> tuple[threading.Thread, dict, threading.Event]:
    ready = threading.Event()
    out: dict = {}

    def body() -> None:
        out["woken"] = asyncio.run(_waits(queue_name, timeout_s, ready))

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    assert ready.wait(LISTEN_SECONDS)
    return thread, out, ready


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("LISTEN/NOTIFY needs PostgreSQL: run `make test-pg` (or set DATABASE_URL=postgres://...)")


def test_notify_from_another_process_wakes_the_waiting_poll_of_that_queue_only(postgres_only):
    _wait_listening()
    woken_thread, woken, _ = _wait_in_thread("listener_q", LISTEN_SECONDS)
    other_thread, other, _ = _wait_in_thread("listener_other_q", 1.5)
    _other_process_notifies("listener_q")
    woken_thread.join(LISTEN_SECONDS + 10)
    other_thread.join(LISTEN_SECONDS + 10)
    assert woken == {"woken": True}
    assert other == {"woken": False}  # a notification names one queue: the others sleep on


def test_rolled_back_change_wakes_nobody(postgres_only):
    _wait_listening()
    thread, out, _ = _wait_in_thread("listener_rollback_q", 1.5)
    _other_process_notifies("listener_rollback_q", commit=False)
    thread.join(25)
    assert out == {"woken": False}


def test_publish_queued_is_delivered_at_commit_only(postgres_only):
    """What a server process sends when its transaction queues tasks: seen by a listener
    on another connection once committed, not before and not after a rollback."""
    settings = connection.settings_dict
    params = {k: v for k, v in {"dbname": settings["NAME"], "user": settings.get("USER"),
                                 "password": settings.get("PASSWORD"), "host": settings.get("HOST"),
                                 "port": settings.get("PORT")}.items() if v}
    with psycopg.connect(**params, autocommit=True) as listener:
        listener.execute(f"LISTEN {notify.QUEUE_CHANNEL}")
        try:
            with transaction.atomic():
                notify.publish_queued(["rolled_back_q"])
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        with transaction.atomic():
            notify.publish_queued(["committed_q", "committed_q", ""])
        # a last commit marks the end: notifications arrive in commit order, so everything
        # sent before it has arrived once it has (no fixed 2 s window, issue #14)
        with transaction.atomic():
            notify.publish_queued(["end_q"])
        queues = []
        for n in listener.notifies(timeout=LISTEN_SECONDS):
            queues.append(n.payload.split(":", 1)[1])
            if queues[-1] == "end_q":
                break
    assert queues == ["committed_q", "end_q"]
