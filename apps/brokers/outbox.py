"""Writing and sending the broker outbox (``BrokerMessage`` rows).

Write: ``write_event`` is the ``QueueType.write`` of every broker event type (an EVENT
task's message, inside the deciding transaction: the row exists if and only if the
task's publication commits); ``write`` is the general form (the Kafka status listener).
After commit a delivery job is enqueued at once; ``kick`` (a sweeper tick hook) enqueues
one too while rows are due, so a lost job or a broker outage only delays.

Send: ``deliver_job`` (a django-q2 job) takes the ``broker-outbox`` lease (one sender at
a time across clusters: messages of one queue leave in the order they were written) and
sends due rows oldest first until none is due. A row is claimed by compare-and-set on
``lease_until``; a send that fails (broker down, refused, timed out) leaves it PENDING
with ``last_error`` and ``next_attempt_at`` pushed back (``BROKER_RETRY_DELAY_MS``
doubled per attempt, at most ``BROKER_MAX_RETRY_DELAY_MS``), and holds back the later
rows of the same event until it is sent (a row goes only when every older row of its
event was sent). Nothing is ever dropped: a row stays PENDING until
a broker accepts it. A crash between the broker's ack and the SENT update sends that row
again with the same idempotency key (the consumers drop the repeat: at least once on
the wire, once per key in handlers). Times are epoch ms.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Min

from apps.brokers import clients, sinks
from apps.brokers.models import BrokerMessage
from apps.core.clock import now_ms
from apps.engine import jobqueue

log = logging.getLogger(__name__)

LEASE = "broker-outbox"
_KICK_INTERVAL_MS = 1_000
_last_check = 0
_clients: dict[str, Any] = {}


def _enqueue() -> None:
    jobqueue.enqueue("apps.brokers.outbox.deliver_job", task_name=f"broker-outbox-{now_ms()}")


def write(*, key: str, event: str, payload: Any, now: int, message_key: str | None = None) -> bool:
    """Record one message for ``event`` (a broker event name) in the current transaction
    and enqueue a delivery job on commit. Idempotent on ``key`` (max 128 chars): False
    when that key is already recorded. A broker switched off since the row was decided
    on only delays it (it is sent once the broker is configured again). Errors:
    ``sinks.SinkInvalid`` for a malformed event name."""
    sink = sinks.parse(event, require_enabled=False)
    if BrokerMessage.objects.filter(key=key).exists():
        return False
    try:
        with transaction.atomic():
            BrokerMessage.objects.create(key=key, event=event, broker=sink.broker, payload=payload,
                                         message_key=message_key, created_time=now, next_attempt_at=now)
    except IntegrityError:
        return False
    transaction.on_commit(_enqueue, robust=True)
    return True


def write_event(*, message_id: str, event: str, payload: Any, now: int) -> bool:
    """``QueueType.write`` of the broker event types: the EVENT task's message (payload
    = the task's output, Conductor's message) keyed by its ``message_id`` (the task id)."""
    return write(key=message_id, event=event, payload=payload, now=now)


def due_exists(now: int | None = None) -> bool:
    """Whether a PENDING row is due at ``now`` (epoch ms)."""
    now = now_ms() if now is None else now
    return BrokerMessage.objects.filter(state="PENDING", next_attempt_at__lte=now).exists()


def kick() -> int:
    """Sweeper tick hook: enqueue ``deliver_job`` when rows are due and no sender holds
    the lease; looks at most once a second per process. Returns 0."""
    global _last_check
    from apps.engine.models import SweeperLease

    now = now_ms()
    if 0 <= now - _last_check < _KICK_INTERVAL_MS:
        return 0
    _last_check = now
    if due_exists(now) and not SweeperLease.held(LEASE):
        _enqueue()
    return 0


def deliver_job(max_seconds: float | None = None) -> int:
    """The cluster job: hold the lease and send until nothing more is sent (or
    ``BROKER_DELIVERY_JOB_SECONDS`` passed; ``jobqueue.drain_under_lease``). Returns the
    rows sent."""
    conf = settings.CONDUCTOR
    max_seconds = conf["BROKER_DELIVERY_JOB_SECONDS"] if max_seconds is None else max_seconds
    return jobqueue.drain_under_lease(LEASE, conf["BROKER_DELIVERY_LEASE_MS"], max_seconds,
                                      lambda: deliver_due()[0])


def _client(broker: str):
    if broker not in _clients:
        _clients[broker] = clients.CLIENTS[broker]()
    return _clients[broker]


def close_clients() -> None:
    """Close this process's publishing connections (tests; a broker switched)."""
    for client in _clients.values():
        client.close()
    _clients.clear()


def body_of(payload: Any) -> bytes:
    """The wire form of a payload: compact JSON, UTF-8 (Conductor's message payload)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def send_one(row: BrokerMessage) -> str | None:
    """Publish one row; None when the broker has it, else the reason."""
    try:
        sink = sinks.parse(row.event)
        _client(sink.broker).publish(sink, body_of(row.payload), row.key, key=row.message_key)
    except (clients.BrokerUnavailable, sinks.SinkInvalid, ImportError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def deliver_due(now: int | None = None, limit: int = 100) -> tuple[int, int]:
    """Send up to ``limit`` due rows, oldest first: ``(sent, attempted)``. Safe on several
    machines at once (claims by compare-and-set)."""
    conf = settings.CONDUCTOR
    now = now_ms() if now is None else now
    rows = list(BrokerMessage.objects.filter(state="PENDING", next_attempt_at__lte=now, lease_until__lt=now)
                .order_by("id")[:limit])
    # the oldest PENDING row of each event goes first, due or not (order per queue)
    heads = dict(BrokerMessage.objects.filter(state="PENDING", event__in={r.event for r in rows})
                 .values("event").annotate(first=Min("id")).values_list("event", "first"))
    held_back: set[str] = set()
    advanced: set[str] = set()
    sent = attempted = 0
    for row in rows:
        if row.event in held_back or (heads.get(row.event, row.id) != row.id and row.event not in advanced):
            held_back.add(row.event)
            continue
        claimed = BrokerMessage.objects.filter(pk=row.pk, state="PENDING", lease_until=row.lease_until).update(
            lease_until=now_ms() + conf["BROKER_DELIVERY_LEASE_MS"], attempts=F("attempts") + 1)
        if claimed != 1:
            held_back.add(row.event)
            continue
        attempted += 1
        reason = send_one(row)
        finished = now_ms()
        if reason is None:
            BrokerMessage.objects.filter(pk=row.pk).update(state="SENT", sent_time=finished, lease_until=0,
                                                           last_error=None)
            sent += 1
            advanced.add(row.event)
            continue
        attempts = row.attempts + 1
        delay = min(conf["BROKER_MAX_RETRY_DELAY_MS"], conf["BROKER_RETRY_DELAY_MS"] * 2 ** min(attempts - 1, 20))
        log.warning("broker outbox: %s to %s not sent (attempt %d, next in %d ms): %s",
                    row.key, row.event, attempts, delay, reason)
        BrokerMessage.objects.filter(pk=row.pk).update(lease_until=0, last_error=reason,
                                                       next_attempt_at=finished + delay)
        held_back.add(row.event)
    return sent, attempted


def backlog() -> list[dict]:
    """PENDING rows per event: ``[{event, broker, pending, oldest (epoch ms)}]`` (the
    ``/metrics`` gauges and the UI)."""
    return list(BrokerMessage.objects.filter(state="PENDING").values("event", "broker")
                .annotate(pending=Count("id"), oldest=Min("created_time")).order_by("event"))
