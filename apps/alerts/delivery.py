"""Sending alert notifications (``AlertNotification`` rows) from the django-q2 cluster.

``kick`` (on the sweeper tick) enqueues ``deliver_job`` when rows are due, at most once
a second per process. ``deliver_due`` claims each due row by compare-and-set on
``next_attempt_at`` (a lease of ``ALERTS_DELIVERY_LEASE_MS``), sends it and marks it
SENT, or retries after a delay doubled per attempt (from ``ALERTS_RETRY_DELAY_MS``)
up to ``ALERTS_MAX_ATTEMPTS``, then FAILED with the reason.

* webhook: a JSON POST of the payload (``event`` OPENED or RESOLVED, ``alert``,
  ``ruleId``, ``condition``, ``workflowName``, ``incidentId``, ``subject``, ``summary``,
  ``details``, ``openedAt``, ``resolvedAt``) with ``X-Conductor-Alert-Event`` and
  ``X-Conductor-Notification-Id`` headers; any 2xx answer delivers it;
  ``ALERTS_WEBHOOK_TIMEOUT_SECONDS`` bounds it.
* email: ``django.core.mail.send_mail`` through Django's mail settings (``EMAIL_*``,
  ``DEFAULT_FROM_EMAIL``), subject ``[conductor-web] <OPENED|RESOLVED>: <summary>``.

At-least-once: a crash between the send and the update sends that row again (the
notification id header makes a repeat recognisable).
"""
from __future__ import annotations

import json
import logging
import time

from django.conf import settings

from apps.alerts.models import AlertNotification
from apps.core.clock import now_ms

log = logging.getLogger(__name__)

_last_kick = 0


def _conf(key: str, default):
    return settings.CONDUCTOR.get(key, default)


def kick(now: int | None = None) -> None:
    """Enqueue ``deliver_job`` when a PENDING row is due (one indexed query, at most once
    a second per process)."""
    global _last_kick
    now = now_ms() if now is None else now
    if 0 <= now - _last_kick < 1000:
        return
    if not AlertNotification.objects.filter(state="PENDING", next_attempt_at__lte=now).exists():
        return
    _last_kick = now
    from apps.engine import jobqueue

    jobqueue.enqueue("apps.alerts.delivery.deliver_job", task_name=f"alerts-delivery-{now}")


def deliver_job(max_seconds: float = 30) -> int:
    """The cluster job: deliver until nothing is due or ``max_seconds`` passed."""
    deadline = time.monotonic() + max_seconds
    sent = 0
    while time.monotonic() < deadline:
        n = deliver_due()
        sent += n
        if n == 0:
            break
    return sent


def deliver_due(now: int | None = None, limit: int = 50) -> int:
    """Send the due rows (at most ``limit``); returns how many were handled."""
    now = now_ms() if now is None else now
    lease = int(_conf("ALERTS_DELIVERY_LEASE_MS", 60_000))
    rows = list(AlertNotification.objects.filter(state="PENDING", next_attempt_at__lte=now)
                .order_by("next_attempt_at", "pk").values_list("pk", "next_attempt_at")[:limit])
    handled = 0
    for pk, due in rows:
        if not AlertNotification.objects.filter(pk=pk, state="PENDING", next_attempt_at=due).update(
                next_attempt_at=now + lease):
            continue
        row = AlertNotification.objects.get(pk=pk)
        error = _send(row)
        row.attempts += 1
        if error is None:
            row.state, row.sent_at, row.last_error = "SENT", now_ms(), ""
        elif row.attempts >= int(_conf("ALERTS_MAX_ATTEMPTS", 5)):
            row.state, row.last_error = "FAILED", error[:1000]
        else:
            delay = int(_conf("ALERTS_RETRY_DELAY_MS", 5000)) * 2 ** (row.attempts - 1)
            row.next_attempt_at, row.last_error = now_ms() + delay, error[:1000]
        row.save(update_fields=["state", "sent_at", "last_error", "attempts", "next_attempt_at"])
        handled += 1
    return handled


def _send(row: AlertNotification) -> str | None:
    """Send one row; None when sent, else the reason."""
    try:
        if row.channel == "webhook":
            return _post(row)
        return _mail(row)
    except Exception as exc:  # noqa: BLE001 - a failed send is retried, never raised
        log.warning("alert notification %s to %s failed: %s", row.pk, row.target, exc)
        return f"{type(exc).__name__}: {exc}"


def _post(row: AlertNotification) -> str | None:
    import httpx

    headers = {"X-Conductor-Alert-Event": row.event, "X-Conductor-Notification-Id": str(row.pk)}
    resp = httpx.post(row.target, json=row.payload, headers=headers,
                      timeout=float(_conf("ALERTS_WEBHOOK_TIMEOUT_SECONDS", 5)))
    return None if 200 <= resp.status_code < 300 else f"Unexpected response status: {resp.status_code}"


def _mail(row: AlertNotification) -> str | None:
    from django.core.mail import send_mail

    p = row.payload
    body = (f"{p.get('summary')}\n\nalert: {p.get('alert')} ({p.get('condition')})\nsubject: {p.get('subject')}\n"
            f"event: {row.event}\n\n{json.dumps(p, indent=2)}\n")
    send_mail(f"[conductor-web] {row.event}: {p.get('summary')}"[:200], body, None, [row.target], fail_silently=False)
    return None
