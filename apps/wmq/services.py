"""The push service of the workflow message queue (Conductor's WorkflowMessageQueueResource).

``push`` checks the workflow, writes the message and decides the workflow in ONE
transaction under the workflow's lock: a PULL_WORKFLOW_MESSAGES task waiting on the
queue takes the message in that same decide (woken at once, as Conductor's resource calls
``decide`` after the push), and a workflow that ends concurrently cannot keep a message
(Conductor re-reads the status after its push and deletes the queue; here the lock makes
that race impossible).
"""
from __future__ import annotations

from apps.core.clock import now_ms
from apps.core.errors import Conflict, ConductorError
from apps.engine import executor
from apps.wmq import queue


class QueueFull(ConductorError):
    """429: the workflow's queue is at ``MAX_QUEUE_SIZE`` (Conductor's IllegalStateException
    from the DAO, answered 429 by its resource)."""

    status = 429


def push(*, workflow_id: str, payload: dict) -> str:
    """Push ``payload`` (a JSON object) to the queue of a RUNNING workflow and decide it;
    returns the message id (UUID v4).

    Errors (Conductor's texts): NotFound ``No such workflow found by id: <id>`` (the API
    answers ``Workflow not found: <id>``); Conflict ``Workflow <id> is not in RUNNING
    state (current: <status>)``; QueueFull ``Workflow message queue for workflowId=<id>
    has reached the maximum size of <n>``.
    Side effects: one ``wmq_workflowmessage`` row; the decide's usual follow-ups after commit."""
    from django.db import transaction

    def run() -> str:
        with transaction.atomic():
            loaded = executor.locked(workflow_id)
            status = loaded.wf.status
            if status != "RUNNING":
                raise Conflict(f"Workflow {workflow_id} is not in RUNNING state (current: {status})")
            now = now_ms()
            try:
                message_id = queue.push(workflow_id, payload, now)
            except queue.QueueFull as exc:
                raise QueueFull(str(exc)) from None
            executor.decide_and_save(loaded, now)
            return message_id

    return executor.with_retries(run)
