"""Delivering the outbox (``Notification`` rows) from the django-q2 cluster.

``kick`` runs on every sweeper tick (``apps.engine.sweeper.add_tick_hook``): when
deliveries are due and no deliverer holds the ``status-listener`` lease, it enqueues
``deliver_job``, which takes that lease (one deliverer at a time across clusters, so
the deliveries of a workflow go out in the order they were recorded) and delivers until
nothing is due. Nothing slow runs in the sweeper loop itself or in any engine
transaction.

One delivery (``deliver_due``): claimed by compare-and-set on ``lease_until``; a
WORKFLOW or TASK row is POSTed as JSON to its URL (headers ``Content-Type`` and
``Accept: application/json``, Conductor's optional ``Prefer`` header, and
``X-Conductor-Event`` / ``X-Conductor-Notification-Id`` so a receiver can tell events
apart and drop a repeat); any 2xx answer delivers it. Otherwise (an error answer, a
refused connection, a timeout) it is tried again after the retry delay, doubled per
attempt, until ``STATUS_NOTIFIER_MAX_ATTEMPTS``, then marked FAILED with the reason. A
row waits while an earlier row of the same workflow is pending. An ARCHIVE row removes
the execution (``executor.workflow_remove``) once it is terminal and its parent, if any,
is too; a workflow that was reopened (retry, rerun) is left alone. Rows survive restarts:
a crash between the POST and the update means that one POST is made again
(at-least-once, the id header makes it recognisable).
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.db.models import F

from apps.core.clock import now_ms
from apps.listeners import config
from apps.listeners.models import Notification

log = logging.getLogger(__name__)

LEASE = "status-listener"
_KICK_INTERVAL_MS = 1_000
_last_kick = 0
_last_check = 0


def due_exists(now: int | None = None) -> bool:
    """Whether a PENDING row is due at ``now`` (epoch ms; default the engine clock)."""
    now = now_ms() if now is None else now
    return Notification.objects.filter(state="PENDING", next_attempt_at__lte=now).exists()


def kick() -> int:
    """Enqueue ``deliver_job`` when deliveries are due and no deliverer runs. Looks at
    most every ``_KICK_INTERVAL_MS`` per process (one indexed query), so an idle server
    stays idle; a delivery therefore starts within about a second of being recorded.
    Returns 0 (it does no delivery itself)."""
    global _last_kick, _last_check
    from apps.engine.models import SweeperLease

    now = now_ms()
    if now - _last_check < _KICK_INTERVAL_MS and now >= _last_check:
        return 0
    _last_check = now
    if now - _last_kick < _KICK_INTERVAL_MS or not due_exists(now) or SweeperLease.held(LEASE):
        return 0
    from django_q.tasks import async_task

    _last_kick = now
    async_task("apps.listeners.delivery.deliver_job", task_name=f"status-listener-{now}")
    return 0


def deliver_job(max_seconds: float | None = None) -> int:
    """The cluster job: hold the lease (``LISTENER_DELIVERY_LEASE_MS``) and deliver until
    nothing is due (or ``max_seconds`` passed, by default
    ``LISTENER_DELIVERY_JOB_SECONDS``; ``jobqueue.drain_under_lease``). Returns the rows
    handled."""
    from apps.engine import jobqueue

    if max_seconds is None:
        max_seconds = settings.CONDUCTOR["LISTENER_DELIVERY_JOB_SECONDS"]
    return jobqueue.drain_under_lease(LEASE, settings.CONDUCTOR["LISTENER_DELIVERY_LEASE_MS"], max_seconds,
                                      deliver_due)


def _post(row: Notification, conf: config.ListenerConfig) -> str | None:
    """POST one row; None when delivered, else the reason."""
    import httpx

    headers = {"Accept": "application/json", "X-Conductor-Event": row.event,
               "X-Conductor-Notification-Id": str(row.pk)}
    if conf.prefer_header and conf.prefer_value:
        headers[conf.prefer_header] = conf.prefer_value
    try:
        resp = httpx.post(row.url, json=row.payload, headers=headers, timeout=conf.timeout_ms / 1000)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    if 200 <= resp.status_code < 300:
        return None
    return f"Unexpected response status: {resp.status_code}"


def _archive(row: Notification) -> tuple[bool, str | None]:
    """(done, reason): remove the execution if it and its parent are finished."""
    from apps.core.errors import ConductorError
    from apps.engine import executor
    from apps.engine.models import WorkflowExecution
    from apps.engine.status import TERMINAL_WORKFLOW

    wf = WorkflowExecution.objects.filter(pk=row.workflow_id).values("status", "parent_workflow_id").first()
    if wf is None or wf["status"] not in TERMINAL_WORKFLOW:
        return True, None  # already gone, or running again
    parent = wf["parent_workflow_id"]
    if parent and WorkflowExecution.objects.filter(pk=parent).exclude(status__in=TERMINAL_WORKFLOW).exists():
        return False, "parent workflow still running"
    try:
        executor.workflow_remove(workflow_id=row.workflow_id, archive=True)
    except ConductorError as exc:
        return False, exc.message
    return True, None


def _blocked(row: Notification) -> bool:
    """An earlier WORKFLOW/TASK row of the same workflow is still pending."""
    return Notification.objects.filter(workflow_id=row.workflow_id, state="PENDING", id__lt=row.id,
                                       kind__in=("WORKFLOW", "TASK")).exists()


def deliver_due(now: int | None = None, limit: int = 50) -> int:
    """Deliver (or retry) up to ``limit`` due rows, oldest first; returns how many were
    attempted. Safe on several machines at once."""
    now = now_ms() if now is None else now
    conf = config.current()
    rows = list(Notification.objects.filter(state="PENDING", next_attempt_at__lte=now, lease_until__lt=now)
                .order_by("id")[:limit])
    handled = 0
    for row in rows:
        if row.kind != "ARCHIVE" and _blocked(row):
            continue
        claimed = Notification.objects.filter(pk=row.pk, state="PENDING", lease_until=row.lease_until).update(
            lease_until=now + settings.CONDUCTOR["LISTENER_DELIVERY_LEASE_MS"], attempts=F("attempts") + 1)
        if claimed != 1:
            continue
        handled += 1
        attempts = row.attempts + 1
        if row.kind == "ARCHIVE":
            done, reason = _archive(row)
            if not done:  # waits for its parent: not counted as a failed attempt
                Notification.objects.filter(pk=row.pk).update(
                    attempts=row.attempts, lease_until=0, last_error=reason,
                    next_attempt_at=now_ms() + max(conf.archive_delay_ms, 1000))
                continue
        else:
            reason = _post(row, conf)
        finished = now_ms()
        if reason is None:
            Notification.objects.filter(pk=row.pk).update(state="DELIVERED", delivered_time=finished, lease_until=0,
                                                           last_error=None)
        elif attempts >= conf.max_attempts:
            log.warning("status listener: giving up %s %s of %s after %d attempts: %s",
                        row.kind, row.event, row.workflow_id, attempts, reason)
            Notification.objects.filter(pk=row.pk).update(state="FAILED", lease_until=0, last_error=reason)
        else:
            Notification.objects.filter(pk=row.pk).update(
                lease_until=0, last_error=reason, next_attempt_at=finished + config.retry_delay_ms(conf, attempts))
    return handled
