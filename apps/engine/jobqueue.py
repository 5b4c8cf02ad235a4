"""The one door to the django-q2 queue: ``enqueue`` hands the cluster a job by dotted path.

Jobs live in ``apps.engine.jobs`` (and ``apps.engine.event_handlers`` for event
messages); naming them by their dotted path (a string) is what lets the lower layers
(effects, the event queue) enqueue work without importing the modules that run it.
Tests replace ``enqueue`` to run jobs on their own ticks. ``drain_under_lease`` is the
loop the outboxes' delivery jobs share (status listeners, broker messages).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


def enqueue(func: str, *args: Any, **kwargs: Any) -> None:
    """Queue ``func`` (dotted path of a job function) with ``args`` on the django-q2
    cluster. ``kwargs`` are django-q2 options (``task_name``, ``group`` ...) and keyword
    arguments of the job. Call it after commit: the job may run at once, on another
    machine. Errors: whatever the django-q2 broker raises (the ORM broker writes a row)."""
    from django_q.tasks import async_task

    async_task(func, *args, **kwargs)


def drain_under_lease(lease: str, lease_ms: int, max_seconds: float, step: Callable[[], int]) -> int:
    """The body of an outbox's delivery job: call ``step() -> int`` (rows handled) again and
    again while this call holds the ``SweeperLease`` named ``lease`` (taken for ``lease_ms``,
    renewed after every step), until a step handles nothing, ``max_seconds`` passed or the
    lease was lost; then release it. One drain per lease across all clusters at a time, so
    the rows of an outbox leave in the order they were written. Returns the sum of the
    steps; 0 at once when another holder has the lease. Errors: whatever ``step`` raises
    (the lease is released first)."""
    import os
    import socket
    import time
    import uuid

    from apps.engine.models import SweeperLease

    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    if not SweeperLease.acquire(lease, holder, lease_ms):
        return 0
    done = 0
    deadline = time.monotonic() + max_seconds
    try:
        while time.monotonic() < deadline:
            n = step()
            done += n
            if n == 0 or not SweeperLease.acquire(lease, holder, lease_ms):
                break
    finally:
        SweeperLease.release(lease, holder)
    return done
