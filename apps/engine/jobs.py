"""What the django-q2 cluster runs: async system tasks, deciding a parent workflow, and
the sweeper loop. Jobs only call engine services and are idempotent (django-q2 may
deliver a job twice).

Timer resolution: django-q2's scheduler runs only about every 30 s, so the sweeper is a
job that loops for ``SWEEPER_LOOP_SECONDS`` ticking every ``SWEEPER_TICK_MS`` and enqueues
its successor before it returns. A lease row (``SweeperLease``) keeps one loop alive per
cluster name; a one-minute ``Schedule`` (``ensure_sweeper_job``) restarts the chain after
a crash.
"""
from __future__ import annotations

import logging
import os
import socket
import time

from django.conf import settings
from django.db import transaction

from apps.core.clock import now_ms
from apps.engine import cluster, event_handlers, executor, store, sweeper
from apps.engine.models import TaskExecution

log = logging.getLogger(__name__)


def system_task_job(task_id: str) -> None:
    """Run one async system task (HTTP, ...) outside any lock, then record its result
    through ``executor.task_update``. A task no longer SCHEDULED/IN_PROGRESS is
    skipped, so a duplicate delivery does nothing."""
    from apps.engine.task_types import get_type

    row = TaskExecution.objects.filter(pk=task_id).values(*store.TASK_FIELDS).first()
    if row is None or row["status"] not in ("SCHEDULED", "IN_PROGRESS"):
        return
    task = store.task_from_values(row)
    if not task.workflow_task:
        task.workflow_task = _workflow_task_of(task)
    ttype = get_type(task.task_type)
    if not executor.system_task_claim(task_id):
        return
    try:
        result = ttype.run_async(task)
    except Exception as exc:  # noqa: BLE001 - the task fails, the job does not
        log.exception("system task %s failed", task_id)
        result = {"status": "FAILED", "reasonForIncompletion": str(exc), "outputData": {}}
    result = {**result, "workflowInstanceId": task.workflow_id, "taskId": task_id,
              "workerId": settings.CONDUCTOR["INSTANCE_ID"]}
    executor.task_update(task_result=result)


def _workflow_task_of(task) -> dict:
    """The WorkflowTask a task was made from, read from its execution's definition
    snapshot (``run_async`` reads settings such as ``asyncComplete`` from it)."""
    from apps.engine import params
    from apps.engine.blueprint import Blueprint
    from apps.engine.models import WorkflowExecution

    definition = (WorkflowExecution.objects.filter(pk=task.workflow_id)
                  .values_list("definition", flat=True).first())
    if not isinstance(definition, dict):
        return {}
    return Blueprint(definition).get(params.definition_ref(task)) or {}


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"



def sweep_loop_job(loop_seconds: float | None = None) -> int:
    """Sweep for up to ``loop_seconds`` (default SWEEPER_LOOP_SECONDS), ticking every
    SWEEPER_TICK_MS, then enqueue the next loop. Returns the number of decides.

    One loop holds the sweeper lease at a time: a short lease (``CONDUCTOR["SWEEPER_LOOP_LEASE_MS"]``) renewed on
    every tick, so the loop of a killed cluster is replaced within seconds. A loop that
    finds the lease held waits for it (up to ``loop_seconds``) and gives up if the holder
    stays alive; a loop that loses its lease stops without a successor."""
    from apps.engine.models import SweeperLease

    conf = settings.CONDUCTOR
    loop_seconds = conf["SWEEPER_LOOP_SECONDS"] if loop_seconds is None else loop_seconds
    tick = conf["SWEEPER_TICK_MS"] / 1000
    holder = _holder()
    give_up = time.monotonic() + loop_seconds
    while not SweeperLease.acquire("sweeper", holder, conf["SWEEPER_LOOP_LEASE_MS"]):
        if time.monotonic() >= give_up:
            return 0  # another live loop keeps the chain going
        time.sleep(tick)
    decided = 0
    deadline = time.monotonic() + loop_seconds
    try:
        while time.monotonic() < deadline:
            n = sweeper.sweep_once() + event_handlers.event_messages_sweep() + sweeper.run_tick_hooks()
            decided += n
            if n == 0:
                time.sleep(tick)
            if not SweeperLease.acquire("sweeper", holder, conf["SWEEPER_LOOP_LEASE_MS"]):
                return decided  # lost the lease (we stalled): the new holder carries on
    except BaseException:
        SweeperLease.release("sweeper", holder)
        raise
    SweeperLease.release("sweeper", holder)
    cluster.enqueue("apps.engine.jobs.sweep_loop_job", task_name=f"sweeper-{now_ms()}")
    return decided


def start_sweeper_on_cluster_start() -> None:
    """Queue a sweeper loop when a cluster process starts (``manage.py qcluster``), so
    timers resume within seconds of a restart instead of waiting for the one-minute
    schedule. Database connections are closed afterwards: the cluster forks its workers
    next and they must not share this process's connection."""
    from django.db import connections

    try:
        cluster.enqueue("apps.engine.jobs.sweep_loop_job", task_name=f"sweeper-start-{now_ms()}")
    except Exception:  # noqa: BLE001 - e.g. not migrated yet; the schedule will start it
        log.warning("could not queue the sweeper at cluster start", exc_info=True)
    finally:
        connections.close_all()


def ensure_sweeper_job() -> None:
    """Safety net run by a one-minute django-q2 Schedule: start a sweeper loop when no
    loop holds a live lease (after a crash or on first start)."""
    from apps.engine.models import SweeperLease

    if not SweeperLease.held("sweeper"):
        cluster.enqueue("apps.engine.jobs.sweep_loop_job", task_name=f"sweeper-{now_ms()}")


def install_schedules() -> None:
    """Create (idempotently) the one-minute Schedule of ``ensure_sweeper_job`` and queue a
    sweeper loop now, so timers work from the cluster's first second (the scheduler's
    first run may be up to a minute away)."""
    from django_q.models import Schedule

    with transaction.atomic():
        Schedule.objects.update_or_create(
            name="conductor-sweeper-guard",
            defaults={"func": "apps.engine.jobs.ensure_sweeper_job", "schedule_type": Schedule.MINUTES,
                      "minutes": 1, "repeats": -1},
        )
    ensure_sweeper_job()
