"""The workflow message queue over rows (Conductor's ``WorkflowMessageQueueDAO``).

Every function runs in the caller's transaction; the callers hold the workflow's lock
(the push service and the PULL_WORKFLOW_MESSAGES inline action both run inside a locked
decide), so one workflow's queue is never changed by two at once.

Limits (``settings.CONDUCTOR_WMQ``, Conductor's ``conductor.workflow-message-queue.*``):
``MAX_QUEUE_SIZE`` messages per workflow (1000), ``MAX_BATCH_SIZE`` per pull (100) and
``TTL_SECONDS`` (86400): as Conductor's Redis key, whose expiry every push renews, a queue
whose newest message is older than that is dropped whole.
"""
from __future__ import annotations

import uuid
from datetime import datetime, timezone

from django.conf import settings
from django.db.models import Max

from apps.engine.status import TERMINAL_WORKFLOW
from apps.engine.store import delete_for_workflow
from apps.wmq.models import MESSAGE_TABLE, WorkflowMessage


class QueueFull(Exception):
    """The workflow's queue holds ``MAX_QUEUE_SIZE`` messages; ``str()`` is Conductor's text."""


def limits() -> dict:
    """``{"MAX_QUEUE_SIZE", "MAX_BATCH_SIZE", "TTL_SECONDS"}`` in force."""
    return settings.CONDUCTOR_WMQ


def received_at(ms: int) -> str:
    """An ISO-8601 UTC instant as Java's ``Instant.toString`` writes it
    (``2025-06-15T10:30:00.123Z``; no fraction when the milliseconds are 0)."""
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}Z" if ms % 1000 else f"{text}Z"


def message_json(row: WorkflowMessage) -> dict:
    """Conductor's WorkflowMessage: ``{id, workflowId, payload, receivedAt}``."""
    return {"id": row.message_id, "workflowId": row.workflow_id, "payload": row.payload,
            "receivedAt": received_at(row.received_ms)}


def _drop_if_expired(workflow_id: str, now: int) -> bool:
    """Drop the workflow's queue when its newest message is older than ``TTL_SECONDS``;
    True when it did."""
    newest = WorkflowMessage.objects.filter(workflow_id=workflow_id).aggregate(m=Max("received_ms"))["m"]
    if newest is not None and now - newest > int(limits()["TTL_SECONDS"]) * 1000:
        delete(workflow_id)
        return True
    return False


def push(workflow_id: str, payload: dict, now: int) -> str:
    """Append ``payload`` to the workflow's queue; returns the new message id (UUID v4).
    Raises QueueFull (``Workflow message queue for workflowId=<id> has reached the maximum
    size of <n>``) when the queue is at ``MAX_QUEUE_SIZE``."""
    _drop_if_expired(workflow_id, now)
    most = int(limits()["MAX_QUEUE_SIZE"])
    if WorkflowMessage.objects.filter(workflow_id=workflow_id).count() >= most:
        raise QueueFull(f"Workflow message queue for workflowId={workflow_id} has reached the maximum size of {most}")
    message_id = str(uuid.uuid4())
    WorkflowMessage.objects.create(message_id=message_id, workflow_id=workflow_id, payload=payload,
                                   received_ms=now)
    return message_id


def pop(workflow_id: str, count: int, now: int) -> list[dict]:
    """Remove and return up to ``count`` (>= 1) messages, oldest first, as Conductor's
    WorkflowMessage JSON; ``[]`` for an empty (or expired) queue. One query when the queue
    is empty (a waiting pull asks on every decide of its workflow)."""
    rows = list(WorkflowMessage.objects.filter(workflow_id=workflow_id).order_by("seq")[:max(1, count)])
    if not rows or _drop_if_expired(workflow_id, now):
        return []
    WorkflowMessage.objects.filter(seq__in=[r.seq for r in rows]).delete()
    return [message_json(r) for r in rows]


def size(workflow_id: str) -> int:
    """How many messages wait in the workflow's queue."""
    return WorkflowMessage.objects.filter(workflow_id=workflow_id).count()


def delete(workflow_id: str) -> None:
    """Drop the workflow's whole queue (nothing when it has none). One plain DELETE
    (``store.delete_for_workflow``; in a fused batch one for all its workflows): every
    workflow's end runs it in its transaction (``drop_on_end``), where the ORM's delete
    (a collector, a query built each time) cost more than the statement; no signal or
    relation hangs on a message."""
    delete_for_workflow(MESSAGE_TABLE, workflow_id)


def drop_on_end(wf, previous_status: str | None, task_changes: list) -> None:
    """Transition recorder (``notify.add_transition_recorder``): a workflow that has just
    ended loses its queue in the same transaction, as Conductor's WorkflowExecutorOps
    deletes it on completion and termination."""
    if wf.status in TERMINAL_WORKFLOW and previous_status is not None and previous_status not in TERMINAL_WORKFLOW:
        delete(wf.workflow_id)
