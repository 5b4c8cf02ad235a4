"""After-commit notifications inside this process: wake long polls waiting on a queue,
and tell listeners (live UI, metrics) that an execution changed. Also the one
in-transaction hook: status transitions handed to recorders (``add_transition_recorder``)
while the change is being saved, so what they write commits with it.

Cross-process delivery is the listeners' business (the UI consumer watches
``WorkflowExecution.update_time``; long polls re-check the database every few tens of
milliseconds), so nothing here needs a broker.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

_queue_cond = threading.Condition()
_queue_versions: dict[str, int] = {}
_listeners: list[Callable[[str], None]] = []
_queue_listeners: list[Callable[[list[str]], None]] = []
_transition_recorders: list[Callable] = []


def queue_version(queue_name: str) -> int:
    """A counter bumped whenever tasks are queued on ``queue_name`` in this process."""
    return _queue_versions.get(queue_name, 0)


def wait_for_queue(queue_name: str, version: int, timeout_s: float) -> bool:
    """Block up to ``timeout_s`` seconds until ``queue_name`` moves past ``version``."""
    with _queue_cond:
        if _queue_versions.get(queue_name, 0) != version:
            return True
        return _queue_cond.wait_for(lambda: _queue_versions.get(queue_name, 0) != version, timeout=timeout_s)


def tasks_queued(queue_names: Iterable[str]) -> None:
    """Tasks became pollable on these queues (called after commit)."""
    names = [q for q in queue_names if q]
    if not names:
        return
    with _queue_cond:
        for name in names:
            _queue_versions[name] = _queue_versions.get(name, 0) + 1
        _queue_cond.notify_all()
    for fn in list(_queue_listeners):
        fn(names)


def add_queue_listener(fn: Callable[[list[str]], None]) -> None:
    """Register ``fn(queue_names)``, called (in the committing thread) when tasks became
    pollable on those queues in this process."""
    _queue_listeners.append(fn)


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
