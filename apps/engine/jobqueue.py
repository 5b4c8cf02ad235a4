"""The one door to the django-q2 queue: ``enqueue`` hands the cluster a job by dotted path.

Jobs live in ``apps.engine.jobs`` (and ``apps.engine.event_handlers`` for event
messages); naming them by their dotted path (a string) is what lets the lower layers
(effects, the event queue) enqueue work without importing the modules that run it.
Tests replace ``enqueue`` to run jobs on their own ticks.
"""
from __future__ import annotations

from typing import Any


def enqueue(func: str, *args: Any, **kwargs: Any) -> None:
    """Queue ``func`` (dotted path of a job function) with ``args`` on the django-q2
    cluster. ``kwargs`` are django-q2 options (``task_name``, ``group`` ...) and keyword
    arguments of the job. Call it after commit: the job may run at once, on another
    machine. Errors: whatever the django-q2 broker raises (the ORM broker writes a row)."""
    from django_q.tasks import async_task

    async_task(func, *args, **kwargs)
