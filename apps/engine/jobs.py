"""What the django-q2 cluster runs: async system tasks, deciding a parent workflow, and
a one-off sweeper loop. Jobs only call engine services and are idempotent (django-q2 may
deliver a job twice).

The sweeper itself runs as a thread in every cluster worker process (``apps.engine.cluster``),
one holder elected by the ``SweeperLease`` row. ``sweep_loop_job`` and the one-minute
``Schedule`` of ``ensure_sweeper_job`` stay as a safety net: they sweep for one loop when
no thread holds the lease (e.g. a cluster whose workers never started their thread).

Async system tasks (HTTP) are run under a lease of their own (``SweeperLease`` named
``task:<taskId>``, ``SYSTEM_TASK_LEASE_MS`` of ``settings.CONDUCTOR``), renewed by the
running job every ``SYSTEM_TASK_LEASE_RENEW_SECONDS``: a duplicate delivery finds the lease held and does
nothing, and a job lost with its cluster (the Redis broker has no acknowledgement) lets
the lease expire within seconds, so the decider's re-dispatch (``task_types.http``) runs
the task again on a survivor.
"""
from __future__ import annotations

import contextvars
import logging
import os
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from django.conf import settings
from django.db import connections, transaction

from apps.core.clock import now_ms
from apps.core.logs import log_context
from apps.engine import event_handlers, executor, jobqueue, store, sweeper
from apps.engine.models import TaskExecution

log = logging.getLogger(__name__)




def system_task_job(task_id: str) -> None:
    """Run one async system task (HTTP, ...) outside any lock, then record its result
    through ``executor.task_update``. The job first takes the task's lease (see
    the module doc): a task whose lease another live job holds, or that is no longer
    SCHEDULED/IN_PROGRESS, is skipped, so a duplicate delivery does nothing."""
    from apps.engine.models import SweeperLease

    lease = f"task:{task_id}"
    token = uuid.uuid4().hex
    with log_context(taskId=task_id, workerId=settings.CONDUCTOR["INSTANCE_ID"]):
        if not SweeperLease.acquire(lease, token, settings.CONDUCTOR["SYSTEM_TASK_LEASE_MS"]):
            return  # another live job is running it
        try:
            _run_system_task(task_id, lease, token)
        finally:
            SweeperLease.objects.filter(name=lease, holder=token).delete()


def _run_system_task(task_id: str, lease: str, token: str) -> None:
    from apps.engine.task_types import get_type

    row = TaskExecution.objects.filter(pk=task_id).values(*store.TASK_FIELDS).first()
    if row is None or row["status"] not in ("SCHEDULED", "IN_PROGRESS"):
        return
    task = store.TaskState(**row)
    task.workflow_task = store.workflow_task_of(task)
    ttype = get_type(task.task_type)
    if not executor.system_task_claim(task_id):
        return
    with log_context(workflowId=task.workflow_id, taskType=task.task_type):
        _run_claimed(task, ttype, lease, token)


def _run_claimed(task, ttype, lease: str, token: str) -> None:
    task_id = task.task_id
    try:
        result = _renewing(lease, token, ttype.run_async, task)
    except Exception as exc:  # noqa: BLE001 - the task fails, the job does not
        log.exception("system task %s failed", task_id)
        result = {"status": "FAILED", "reasonForIncompletion": str(exc), "outputData": {}}
    result = {**result, "workflowInstanceId": task.workflow_id, "taskId": task_id,
              "workerId": settings.CONDUCTOR["INSTANCE_ID"]}
    executor.task_update(task_result=result)


def _renewing(lease: str, token: str, fn, *args):
    """``fn(*args)`` run in a helper thread (which sees committed data only) while this
    thread renews ``lease`` every ``SYSTEM_TASK_LEASE_RENEW_SECONDS``; returns its result or
    raises its exception."""
    from apps.engine.models import SweeperLease

    def call():
        try:
            return fn(*args)
        finally:
            connections.close_all()  # this helper thread's own connections, if it opened any

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="system-task") as pool:
        future = pool.submit(contextvars.copy_context().run, call)  # keeps the log context
        while True:
            try:
                return future.result(timeout=settings.CONDUCTOR["SYSTEM_TASK_LEASE_RENEW_SECONDS"])
            except FutureTimeout:
                SweeperLease.acquire(lease, token, settings.CONDUCTOR["SYSTEM_TASK_LEASE_MS"])


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def sweep_loop_job(loop_seconds: float | None = None) -> int:
    """Sweep for up to ``loop_seconds`` (default SWEEPER_LOOP_SECONDS), ticking every
    SWEEPER_TICK_MS, while holding the sweeper lease; returns the number of decides.
    A loop that finds the lease held by a live holder (normally a worker's sweeper
    thread, ``apps.engine.cluster``) waits for it up to ``loop_seconds`` and gives up;
    it queues no successor (the threads keep the sweeper alive)."""
    from apps.engine.cluster import LEASE_NAME
    from apps.engine.models import SweeperLease

    conf = settings.CONDUCTOR
    loop_seconds = conf["SWEEPER_LOOP_SECONDS"] if loop_seconds is None else loop_seconds
    tick = conf["SWEEPER_TICK_MS"] / 1000
    holder = _holder()
    give_up = time.monotonic() + loop_seconds
    while not SweeperLease.acquire(LEASE_NAME, holder, conf["SWEEPER_LEASE_MS"]):
        if time.monotonic() >= give_up:
            return 0
        time.sleep(tick)
    decided = 0
    deadline = time.monotonic() + loop_seconds
    try:
        while time.monotonic() < deadline:
            n = sweeper.sweep_once() + event_handlers.event_messages_sweep() + sweeper.run_tick_hooks()
            decided += n
            if n == 0:
                time.sleep(tick)
            if not SweeperLease.acquire(LEASE_NAME, holder, conf["SWEEPER_LEASE_MS"]):
                return decided  # lost the lease (we stalled): the new holder carries on
    finally:
        SweeperLease.release(LEASE_NAME, holder)
    return decided


def ensure_sweeper_job() -> None:
    """Safety net run by a one-minute django-q2 Schedule: start a sweeper loop when no
    loop holds a live lease (after a crash or on first start)."""
    from apps.engine.models import SweeperLease

    if not SweeperLease.held("sweeper"):
        jobqueue.enqueue("apps.engine.jobs.sweep_loop_job", task_name=f"sweeper-{now_ms()}")


def install_schedules() -> None:
    """Create (idempotently) the cluster's Schedules: the one-minute
    ``ensure_sweeper_job`` safety net and the retention run
    (``apps.engine.retention.retention_job``, every RETENTION_EVERY_MINUTES; it does
    nothing while no retention is configured). Then queue a sweeper loop now if no
    thread holds the lease yet."""
    from django_q.models import Schedule

    with transaction.atomic():
        Schedule.objects.update_or_create(
            name="conductor-sweeper-guard",
            defaults={"func": "apps.engine.jobs.ensure_sweeper_job", "schedule_type": Schedule.MINUTES,
                      "minutes": 1, "repeats": -1},
        )
        Schedule.objects.update_or_create(
            name="conductor-retention",
            defaults={"func": "apps.engine.retention.retention_job", "schedule_type": Schedule.MINUTES,
                      "minutes": max(1, int(settings.CONDUCTOR.get("RETENTION_EVERY_MINUTES", 10))),
                      "repeats": -1},
        )
    ensure_sweeper_job()
