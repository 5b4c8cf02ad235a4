"""The internal event queue, publishing side: ``EventMessage`` rows and the job that
processes each one.

Messages come from EVENT tasks (sink ``conductor``, written inside the deciding
transaction through ``event_message_insert``), from ``event_message_publish`` and from
``POST /api/queue/update/...`` (``queue_update_publish``, Conductor's default queues).
After commit each new message is handed to the django-q2 cluster by dotted path
(``apps.engine.event_handlers.process_event_message_job``); what processing does is in
``apps.engine.event_handlers``. Times are epoch ms.
"""
from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from apps.core.clock import now_ms
from apps.core.errors import InvalidInput
from apps.core.ids import new_id
from apps.engine import jobqueue
from apps.engine.models import EventMessage
from apps.engine.task_types.event import external_queue_type

# Conductor's default event queues (one per status) behind POST /api/queue/update/...
DEFAULT_QUEUE_PREFIX = "_default_queue:"
DEFAULT_QUEUE_STATUSES = ("COMPLETED", "FAILED")


# --- publishing -------------------------------------------------------------------------

def enqueue_event_message(message_id: str) -> None:
    """Hand one message to the django-q2 cluster (called after commit): the job is
    ``apps.engine.event_handlers.process_event_message_job``, named by dotted path."""
    jobqueue.enqueue("apps.engine.event_handlers.process_event_message_job", message_id,
                    task_name=f"event-message-{message_id}")


def event_message_insert(*, message_id: str, event: str, payload: Any, now: int) -> bool:
    """Write one message in the current transaction and enqueue its processing on commit.

    Must run inside ``transaction.atomic()`` (the EVENT task calls it from the deciding
    transaction, so the message exists if and only if the task's publication commits).
    ``now`` is epoch ms. Idempotent on ``message_id``: returns False (and writes nothing)
    if that message already exists. An event on a registered external queue type
    (``amqp:...``, ``kafka:...``: ``task_types.event.register_queue_type``) is handed to
    that type's ``write`` instead (its outbox, in this same transaction).
    """
    external = external_queue_type(event)
    if external is not None:
        return external.write(message_id=message_id, event=event, payload=payload, now=now)
    if EventMessage.objects.filter(pk=message_id).exists():
        return False
    EventMessage.objects.create(message_id=message_id, event=event, payload=payload, created_time=now)
    transaction.on_commit(lambda: enqueue_event_message(message_id), robust=True)
    return True


def event_message_publish(*, event: str, payload: Any, message_id: str | None = None) -> str:
    """Publish a message on the internal queue for ``event`` and return its id.

    ``payload`` is any JSON value (handlers see it as ``$`` and resolve ``${...}`` against
    it). ``message_id`` defaults to a new UUID; publishing an existing id again does
    nothing. Errors: InvalidInput for an empty event.
    Side effects: one ``EventMessage`` row; on commit its processing job is enqueued.
    """
    if not isinstance(event, str) or not event:
        raise InvalidInput("Missing event location")
    message_id = message_id or new_id()
    with transaction.atomic():
        event_message_insert(message_id=message_id, event=event, payload=payload, now=now_ms())
    return message_id


def default_queue_event(status: str) -> str:
    """The event name of Conductor's default queue for a task status (``COMPLETED`` or
    ``FAILED``): ``_default_queue:<STATUS>``."""
    return f"{DEFAULT_QUEUE_PREFIX}{status}"


def queue_update_publish(*, workflow_id: str, status: str, output: dict | None = None,
                         task_ref_name: str | None = None, task_id: str | None = None) -> str:
    """``POST /api/queue/update/{workflowId}/{taskRefName}/{status}`` (or ``.../task/
    {taskId}/{status}``): publish a message on the default queue of ``status`` that, when
    processed, completes (or fails) the pending task it names, as Conductor's
    DefaultEventQueueProcessor. The payload is ``{"externalId": "<JSON of {workflowId,
    taskRefName|taskId}>", **output}``. Returns the message id.
    Errors: InvalidInput ``There is no queue for handling %s status`` for a status other
    than COMPLETED/FAILED; InvalidInput when ``output`` is not a JSON object.
    """
    if status not in DEFAULT_QUEUE_STATUSES:
        raise InvalidInput(f"There is no queue for handling {status} status")
    if output is None:
        output = {}
    if not isinstance(output, dict):
        raise InvalidInput("The request body must be a JSON object")
    external = {"workflowId": workflow_id}
    if task_id is not None:
        external["taskId"] = task_id
    else:
        external["taskRefName"] = task_ref_name
    payload = {"externalId": json.dumps(external)}
    payload.update(output)
    return event_message_publish(event=default_queue_event(status), payload=payload)


def default_queue_sizes() -> dict[str, int]:
    """``GET /api/queue/size``: pending messages of each default queue, ``{name: count}``."""
    return {default_queue_event(s): EventMessage.objects.filter(
        event=default_queue_event(s), processed_time__isnull=True).count() for s in DEFAULT_QUEUE_STATUSES}


def default_queue_names() -> dict[str, str]:
    """``GET /api/queue/``: ``{status: queue name}`` of the default queues."""
    return {s: default_queue_event(s) for s in DEFAULT_QUEUE_STATUSES}


def event_queues(verbose: bool = False) -> dict:
    """``GET /api/admin/queues``: the queues the active event handlers listen on, as
    Conductor's ``EventQueueManager``: ``{event: queue name}``, or with ``verbose``
    ``{event: {queue name: pending messages}}``. Here a handler's queue is the internal
    one named by its ``event`` (pending = ``EventMessage`` rows not yet processed)."""
    from django.db.models import Count

    from apps.metadata.models import EventHandler

    events = sorted(set(EventHandler.objects.filter(active=True).values_list("event", flat=True)))
    if not verbose:
        return {e: e for e in events}
    pending = dict(EventMessage.objects.filter(event__in=events, processed_time__isnull=True)
                   .values("event").annotate(n=Count("message_id")).values_list("event", "n"))
    return {e: {e: pending.get(e, 0)} for e in events}
