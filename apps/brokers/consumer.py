"""Event handlers on broker queues: the consumer thread of the cluster.

Every worker process of every cluster starts one ``ConsumerThread`` (django-q2's
``post_spawn``, as the sweeper thread). The threads elect one consumer through the
``SweeperLease`` named ``broker-consumer``, so across all clusters one process consumes,
one message at a time per queue (ordering per queue, as the broker delivers it), and a
survivor takes over within the lease (``BROKER_CONSUMER_LEASE_MS``) when it dies. The
brokers see one consumer group (``EVENT_CONSUMER_GROUP``): the holder resumes where the
last acknowledged message left off.

What is consumed: the events of the active EventHandlers that name a configured broker
(``amqp:``, ``amqp_exchange:``, ``nats:``, ``nats_stream:``, ``kafka:`` ...; re-read every
``BROKER_HANDLER_REFRESH_SECONDS``). One message (``handle``):

1. ``ingest``: an ``EventMessage`` row (the internal queue's inbox) keyed by the broker
   message id (the publisher's idempotency key; see ``apps.brokers.clients``), committed;
   a message already ingested (a redelivery) is not written again;
2. ``event_handlers.process_event_message_job``: every matching handler's actions run
   and are recorded, each in its own transaction (``EventExecution``: an action runs at
   most once per message and handler);
3. only then the message is acknowledged to the broker.

A crash before 3 means the broker delivers the message again and steps 1-2 find it done
(at least once on the wire, once in handlers). A database or broker error closes that
broker's client (its unacknowledged messages return to the queue) and is retried after
``SWEEPER_STANDBY_SECONDS``. Payloads that are not JSON reach handlers as a string.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any

from django.conf import settings
from django.db import connections, transaction

from apps.brokers import clients, sinks
from apps.core.clock import now_ms
from apps.engine import event_handlers
from apps.engine.models import EventMessage

log = logging.getLogger(__name__)

LEASE = "broker-consumer"
_thread: "ConsumerThread | None" = None


def message_row_id(event: str, message_id: str) -> str:
    """The ``EventMessage`` id of a broker message: its id when it fits (64 chars) and is
    not already used by a message of another event, else a digest of event and id."""
    if message_id and len(message_id) <= 64:
        other = EventMessage.objects.filter(pk=message_id).values_list("event", flat=True).first()
        if other is None or other == event:
            return message_id
    return hashlib.sha256(f"{event}\n{message_id}".encode()).hexdigest()[:64]


def decode(body: bytes) -> Any:
    """A message body as handlers see it: parsed JSON, else the text."""
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def ingest(event: str, message_id: str, body: bytes) -> str:
    """Write the message's ``EventMessage`` row (committed; nothing when it exists) and
    return its id. Errors: database errors (the caller leaves the message unacknowledged)."""
    row_id = message_row_id(event, message_id or uuid.uuid4().hex)
    with transaction.atomic():
        if not EventMessage.objects.filter(pk=row_id).exists():
            EventMessage.objects.create(message_id=row_id, event=event, payload=decode(body), created_time=now_ms())
    return row_id


def handle(received: clients.Received) -> str:
    """Ingest, run the handlers, then acknowledge (module docstring). Returns the
    ``EventMessage`` id."""
    row_id = ingest(received.event, received.message_id, received.body)
    event_handlers.process_event_message_job(row_id)
    received.ack()
    return row_id


def wanted_sinks() -> dict[str, list[sinks.Sink]]:
    """The broker queues of the active EventHandlers, per broker (configured ones only;
    an event that does not parse is logged and skipped)."""
    from apps.metadata.models import EventHandler

    out: dict[str, list[sinks.Sink]] = {}
    for event in sorted(set(EventHandler.objects.filter(active=True).values_list("event", flat=True))):
        if not sinks.is_broker_event(event):
            continue
        try:
            sink = sinks.parse(event)
        except sinks.SinkInvalid as exc:
            log.warning("event handler queue %s skipped: %s", event, exc)
            continue
        out.setdefault(sink.broker, []).append(sink)
    return out


class Consumer:
    """The consuming side without the thread: ``poll_once`` fetches and handles what the
    brokers have now (the thread's loop body; tests call it directly)."""

    def __init__(self):
        self.clients: dict[str, Any] = {}
        self.sinks: dict[str, list[sinks.Sink]] = {}
        self.errors: dict[str, str] = {}

    def refresh(self) -> None:
        self.sinks = wanted_sinks()
        for broker in list(self.clients):
            if broker not in self.sinks:
                self.clients.pop(broker).close()

    def poll_once(self, timeout: float = 0.2) -> int:
        """Fetch up to ``BROKER_FETCH_MAX`` messages per broker (waiting at most about
        ``timeout`` s on each) and handle them; returns how many were handled. A broker
        that fails is recorded in ``errors`` and skipped until the next call."""
        handled = 0
        for broker, wanted in self.sinks.items():
            client = self.clients.get(broker)
            if client is None:
                client = self.clients[broker] = clients.CLIENTS[broker]()
            try:
                for received in client.fetch(wanted, settings.CONDUCTOR["BROKER_FETCH_MAX"], timeout):
                    handle(received)
                    handled += 1
                self.errors.pop(broker, None)
            except clients.BrokerUnavailable as exc:
                self.errors[broker] = str(exc)
                log.warning("event consumer: %s unavailable: %s", broker, exc)
            except Exception as exc:  # noqa: BLE001 - e.g. the database: the messages come back
                self.errors[broker] = str(exc)
                log.exception("event consumer: %s message not handled", broker)
                client.close()
                connections.close_all()
        return handled

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        self.clients.clear()


class ConsumerThread(threading.Thread):
    """The cluster's candidate consumer (a daemon thread; module docstring)."""

    def __init__(self, holder: str | None = None):
        super().__init__(name="conductor-broker-consumer", daemon=True)
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.stopping = threading.Event()
        self.handled = 0

    def run(self) -> None:
        from apps.engine.models import SweeperLease

        conf = settings.CONDUCTOR
        consumer = Consumer()
        refreshed = renewed = 0.0
        renew_every = conf["BROKER_CONSUMER_LEASE_MS"] / 3000  # seconds: renewed well before it lapses
        try:
            while not self.stopping.is_set():
                try:
                    if time.monotonic() - renewed > renew_every:
                        if not SweeperLease.acquire(LEASE, self.holder, conf["BROKER_CONSUMER_LEASE_MS"]):
                            consumer.close()
                            renewed = 0.0
                            self.stopping.wait(conf["SWEEPER_STANDBY_SECONDS"])
                            continue
                        renewed = time.monotonic()
                    if time.monotonic() - refreshed > conf["BROKER_HANDLER_REFRESH_SECONDS"]:
                        consumer.refresh()
                        refreshed = time.monotonic()
                    if not consumer.sinks:
                        self.stopping.wait(conf["BROKER_HANDLER_REFRESH_SECONDS"])
                        continue
                    self.handled += consumer.poll_once()
                    if consumer.errors:
                        self.stopping.wait(conf["SWEEPER_STANDBY_SECONDS"])
                except Exception:  # noqa: BLE001 - e.g. the database restarting: try again
                    log.exception("event consumer loop failed")
                    connections.close_all()
                    self.stopping.wait(conf["SWEEPER_STANDBY_SECONDS"])
        finally:
            consumer.close()
            try:
                SweeperLease.release(LEASE, self.holder)
            except Exception:  # noqa: BLE001 - the lease then simply expires
                pass
            connections.close_all()

    def stop(self, timeout: float = 5) -> None:
        self.stopping.set()
        if self.is_alive():
            self.join(timeout)


def start_consumer_thread(**_signal_kwargs) -> ConsumerThread | None:
    """Start this process's consumer thread (once) when a broker is configured.
    Receiver of django-q2's ``post_spawn``."""
    global _thread
    if not any(sinks.enabled(b) for b in sinks.BROKER_SETTINGS):
        return None
    if _thread is not None and _thread.is_alive():
        return _thread
    _thread = ConsumerThread()
    _thread.start()
    return _thread
