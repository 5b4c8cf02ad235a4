"""``/api/event`` (EventHandler CRUD) and ``/api/queue`` (Conductor's default event-queue
processor: publish a message that completes or fails a waiting task).

Answers as Conductor's EventResource and QueueAdminResource: writes are void (200, empty
body); lists are JSON arrays of EventHandler; ``GET /event/{event}`` returns only active
handlers unless ``activeOnly=false``.
"""
from __future__ import annotations

from rest_framework.response import Response

from apps.api.params import qbool
from apps.api.parsers import require_json
from apps.api.views.base import ConductorApi, empty
from apps.engine import event_queue
from apps.metadata import event_services


class EventHandlersApi(ConductorApi):
    """``GET /event`` (all handlers), ``POST /event`` (add), ``PUT /event`` (update)."""

    def get(self, request):
        return Response(event_services.event_handler_list())

    def post(self, request):
        event_services.event_handler_create(handler=require_json(request.data))
        return empty()

    def put(self, request):
        event_services.event_handler_update(handler=require_json(request.data))
        return empty()


class EventHandlerApi(ConductorApi):
    """``GET /event/{event}?activeOnly=true`` (handlers of one event) and
    ``DELETE /event/{name}`` (remove one handler): one path, as Conductor's."""

    def get(self, request, name_or_event):
        active_only = qbool(request.query_params, "activeOnly", True)
        return Response(event_services.event_handler_list_for_event(event=name_or_event, active_only=active_only))

    def delete(self, request, name_or_event):
        event_services.event_handler_delete(name=name_or_event)
        return empty()


def _output(request) -> dict | None:
    data = require_json(request.data)
    return {} if data is None else data


class QueueUpdateByRefApi(ConductorApi):
    """``POST /queue/update/{workflowId}/{taskRefName}/{status}`` with the task output
    as body: completes (``COMPLETED``) or fails (``FAILED``) the pending task with that
    reference once the message is processed."""

    def post(self, request, workflow_id, task_ref_name, status):
        event_queue.queue_update_publish(workflow_id=workflow_id, task_ref_name=task_ref_name, status=status,
                                            output=_output(request))
        return empty()


class QueueUpdateByTaskIdApi(ConductorApi):
    """``POST /queue/update/{workflowId}/task/{taskId}/{status}``: the same by task id."""

    def post(self, request, workflow_id, task_id, status):
        event_queue.queue_update_publish(workflow_id=workflow_id, task_id=task_id, status=status,
                                            output=_output(request))
        return empty()


class QueueSizeApi(ConductorApi):
    """``GET /queue/size``: ``{queue name: pending messages}`` of the default queues."""

    def get(self, request):
        return Response(event_queue.default_queue_sizes())


class QueueNamesApi(ConductorApi):
    """``GET /queue/``: ``{status: queue name}`` of the default queues."""

    def get(self, request):
        return Response(event_queue.default_queue_names())
