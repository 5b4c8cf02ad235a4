"""``apps.engine.notify`` queue waiters: what wakes a waiting long poll."""
from __future__ import annotations

import asyncio
import threading

from apps.engine import notify


def run_loop(make_coroutine):
    """Run a coroutine to its end on a fresh event loop in its own thread (the test's own
    thread may already run a loop left by another test)."""
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", asyncio.run(make_coroutine())))
    thread.start()
    thread.join(120)
    assert not thread.is_alive()
    return box["value"]


def test_tasks_queued_in_another_thread_wake_the_waiters_on_that_queue_only():
    async def run():
        with notify.queue_waiter("q-one") as waiter, notify.queue_waiter("q-two") as other:
            threading.Thread(target=notify.tasks_queued, args=(["q-one", ""],)).start()
            woke = await waiter.wait(60)  # returns as soon as woken; 60 s is only a bound
            return woke, other.woken

    assert run_loop(run) == (True, False)


def test_tasks_queued_before_the_wait_are_not_missed():
    async def run():
        with notify.queue_waiter("q-early") as waiter:
            notify.tasks_queued(["q-early"])  # between the poll's look at the queue and its wait
            return await waiter.wait(60)

    assert run_loop(run) is True


def test_a_waiter_left_times_out_and_is_forgotten():
    async def run():
        with notify.queue_waiter("q-idle") as waiter:
            woke = await waiter.wait(0.01)
        notify.tasks_queued(["q-idle"])  # nobody waits any more: nothing to wake
        return woke, waiter.woken

    assert run_loop(run) == (False, False)
