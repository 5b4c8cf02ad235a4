"""After-commit notifications inside this process: wake long polls waiting on a queue
(``queue_waiter``), and tell listeners (live UI, execute-and-wait answers) that an
execution changed. Also the one
in-transaction hook: status transitions handed to recorders (``add_transition_recorder``)
while the change is being saved, so what they write commits with it.

Cross-process delivery is the listeners' business (the UI consumer watches
``WorkflowExecution.update_time``; long polls re-check the database every few tens of
milliseconds), so nothing here needs a broker.
"""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable

_listeners: list[Callable[[str], None]] = []
_transition_recorders: list[Callable] = []
_waiters: dict[str, set[QueueWaiter]] = {}
_waiters_lock = threading.Lock()


class QueueWaiter:
    """A long poll waiting on one queue, on the event loop it was made in. Made before the
    poll looks at the queue, so tasks queued between that look and ``wait`` wake it at once."""

    def __init__(self, queue_name: str):
        self.queue_name = queue_name
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()

    def __enter__(self) -> QueueWaiter:
        with _waiters_lock:
            _waiters.setdefault(self.queue_name, set()).add(self)
        return self

    def __exit__(self, *exc) -> None:
        with _waiters_lock:
            waiting = _waiters.get(self.queue_name)
            if waiting is not None:
                waiting.discard(self)
                if not waiting:
                    del _waiters[self.queue_name]

    async def wait(self, timeout_s: float) -> bool:
        """Up to ``timeout_s`` seconds until tasks are queued on the queue in this process;
        True when woken, False on timeout."""
        try:
            await asyncio.wait_for(self.event.wait(), timeout=timeout_s)
            return True
        except asyncio.TimeoutError:
            return False

    def wake(self) -> None:
        """Set the event from any thread (nothing when its loop has closed)."""
        try:
            self.loop.call_soon_threadsafe(self.event.set)
        except RuntimeError:
            pass


def queue_waiter(queue_name: str) -> QueueWaiter:
    """``with queue_waiter(name) as waiter: ... await waiter.wait(s)`` inside a coroutine."""
    return QueueWaiter(queue_name)


def tasks_queued(queue_names: Iterable[str]) -> None:
    """Tasks became pollable on these queues (called after commit, in any thread): wake
    the long polls of this process waiting on them."""
    for name in {q for q in queue_names if q}:
        with _waiters_lock:
            waiting = list(_waiters.get(name, ()))
        for waiter in waiting:
            waiter.wake()


def add_listener(fn: Callable[[str], None]) -> None:
    """Register ``fn(workflow_id)`` to be called after each committed change."""
    _listeners.append(fn)


def workflow_changed(workflow_id: str) -> None:
    """An execution changed (called after commit)."""
    for fn in list(_listeners):
        try:
            fn(workflow_id)
        except Exception:  # noqa: BLE001 - a listener must never break the engine
            import logging

            logging.getLogger(__name__).exception("workflow_changed listener failed")


def add_transition_recorder(fn: Callable) -> None:
    """Register ``fn(wf, previous_status, task_changes)``, called by ``store`` inside the
    transaction that saves a change: ``wf`` the WorkflowState as saved, ``previous_status``
    its status as loaded (None for a new execution), ``task_changes`` a list of
    ``(TaskState, previous_status_or_None)`` for tasks inserted or whose status changed.
    Whatever ``fn`` writes commits or rolls back with the change; it must be quick (no I/O
    other than the database) and raise only to abort the change. Used by the status
    listeners (``apps.listeners``)."""
    if fn not in _transition_recorders:
        _transition_recorders.append(fn)


def transitions(wf, previous_status: str | None, task_changes: list) -> None:
    """Hand one saved change to the transition recorders (called by ``store``)."""
    for fn in _transition_recorders:
        fn(wf, previous_status, task_changes)
