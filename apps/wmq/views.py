"""``POST /api/workflow/{workflowId}/messages`` (Conductor's WorkflowMessageQueueResource)."""
from __future__ import annotations

from apps.api.parsers import require_json
from apps.api.views.base import ConductorApi, text
from apps.core.errors import Conflict, InvalidInput, NotFound
from apps.wmq import services


class WorkflowMessagesApi(ConductorApi):
    """Push a JSON object to a running workflow's message queue. Answers as Conductor's
    resource does, in ``text/plain``: 200 with the message id; 404 ``Workflow not found:
    <id>``; 409 ``Workflow <id> is not in RUNNING state (current: <status>)``; 429 the
    queue-full text. A body that is not a JSON object answers 400 (Conductor's
    ``@RequestBody Map``) with the error body. Role: operator (a workflow change)."""

    def post(self, request, workflow_id):
        if not request.body:
            raise InvalidInput("Required request body is missing: a JSON object (the message payload)")
        payload = require_json(request.data)
        if not isinstance(payload, dict):
            raise InvalidInput("The message payload must be a JSON object")
        try:
            message_id = services.push(workflow_id=workflow_id, payload=payload)
        except NotFound:
            return text(f"Workflow not found: {workflow_id}", status=404)
        except (Conflict, services.QueueFull) as exc:
            return text(exc.message, status=exc.status)
        return text(message_id)
