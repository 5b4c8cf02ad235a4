"""``/api/admin``: Conductor's AdminResource (every route needs the admin role, see
``apps.api.auth.required_role``)."""
from __future__ import annotations

from django.conf import settings
from rest_framework.response import Response

from apps.api.params import qbool, qint
from apps.api.views.base import ConductorApi, text
from apps.api.views.health import server_version
from apps.core.errors import InvalidInput
from apps.engine import event_queue, queue, sweeper
from apps.engine.representation import task_json

MAX_INT = 2**31 - 1  # start/count are Java ints


class ConfigApi(ConductorApi):
    """``GET /admin/config`` -> ``{name: value}``: the engine's numeric and boolean settings
    (``settings.CONDUCTOR``) with ``version`` and ``buildDate``, as Conductor's
    ``getAllConfig``. Strings are left out: URLs, headers and names there may hold secrets."""

    def get(self, request):
        out = {k: v for k, v in sorted(settings.CONDUCTOR.items()) if isinstance(v, (bool, int, float))}
        out["version"] = server_version()
        out["buildDate"] = "UNKNOWN"  # as Conductor's AdminServiceImpl answers
        return Response(out)


def _bounded(request, name: str, default: int) -> int:
    value = qint(request.query_params, name, default)
    if not 0 <= value <= MAX_INT:
        raise InvalidInput(f"{name} must be between 0 and {MAX_INT}, got {value}")
    return value


class PendingTasksApi(ConductorApi):
    """``GET /admin/task/{tasktype}?start=0&count=100`` -> ``[Task]``: the SCHEDULED and
    IN_PROGRESS tasks of that type (``queue.pending_tasks``). 400 naming ``start`` or
    ``count`` when negative or beyond a Java int (Conductor: a 500)."""

    def get(self, request, task_type):
        start, count = _bounded(request, "start", 0), _bounded(request, "count", 100)
        return Response([task_json(t) for t in queue.pending_tasks(task_type, start, count)])


class RequeueSweepApi(ConductorApi):
    """``POST /admin/sweep/requeue/{workflowId}`` -> text ``<pushed>.<id>``, Conductor's
    ``pushIfNotExists`` answer (``sweeper.requeue_sweep``): ``false`` only when the
    execution's decide was already due, ``true`` otherwise, for an unknown or finished id
    too."""

    def post(self, request, workflow_id):
        pushed = sweeper.requeue_sweep(workflow_id)
        return text(f"{'true' if pushed else 'false'}.{workflow_id}")


class EventQueuesApi(ConductorApi):
    """``GET /admin/queues?verbose=false`` -> the event handlers' queues
    (``event_queue.event_queues``)."""

    def get(self, request):
        return Response(event_queue.event_queues(qbool(request.query_params, "verbose", False)))


class VerifyAndRepairApi(ConductorApi):
    """``POST /admin/consistency/verifyAndRepair/{workflowId}`` -> text ``true`` when
    something was repaired, ``false`` otherwise (``sweeper.verify_and_repair``); 404 for an
    unknown workflow."""

    def post(self, request, workflow_id):
        return text("true" if sweeper.verify_and_repair(workflow_id) else "false")
