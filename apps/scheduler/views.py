"""``/api/scheduler``: Conductor's SchedulerResource and SchedulerBulkResource.

Per-schedule pause/resume answer both PUT (Conductor OSS) and GET (Orkes; the Python SDK
tries PUT, then GET on 405). Void operations answer an empty 200.
"""
from __future__ import annotations

from rest_framework.response import Response

from apps.api.params import qbool, qint, qstr
from apps.api.parsers import require_json
from apps.api.views.base import ConductorApi, empty
from apps.scheduler import services


def _sort(params) -> list[str]:
    raw = qstr(params, "sort") or ""
    return [s.strip() for s in raw.split(",") if s.strip()]


class SchedulesApi(ConductorApi):
    """``POST /schedules`` (create or update by name) and ``GET /schedules?workflowName``."""

    def post(self, request):
        return Response(services.schedule_save(require_json(request.data, "WorkflowSchedule")))

    def get(self, request):
        return Response(services.schedule_list(qstr(request.query_params, "workflowName")))


class ScheduleSearchApi(ConductorApi):
    """``GET /schedules/search?workflowName&scheduleName&paused&freeText&start&size&sort``."""

    def get(self, request):
        q = request.query_params
        paused = None if qstr(q, "paused") is None else qbool(q, "paused", False)
        return Response(services.schedule_search(
            workflow_name=qstr(q, "workflowName"), schedule_name=qstr(q, "scheduleName"), paused=paused,
            free_text=qstr(q, "freeText", "*"), start=qint(q, "start", 0), size=qint(q, "size", 100),
            sort=_sort(q)))


class ScheduleApi(ConductorApi):
    """``GET /schedules/{name}`` (404 when absent) and ``DELETE /schedules/{name}``."""

    def get(self, request, name):
        return Response(services.schedule_get(name))

    def delete(self, request, name):
        services.schedule_delete(name)
        return empty()


class PauseScheduleApi(ConductorApi):
    """``PUT|GET /schedules/{name}/pause?reason``."""

    def put(self, request, name):
        services.schedule_pause(name, qstr(request.query_params, "reason"))
        return empty()

    get = put


class ResumeScheduleApi(ConductorApi):
    """``PUT|GET /schedules/{name}/resume``."""

    def put(self, request, name):
        services.schedule_resume(name)
        return empty()

    get = put


class ScheduleTagsApi(ConductorApi):
    """``GET|PUT|DELETE /schedules/{name}/tags`` (the SDK's tag calls)."""

    def get(self, request, name):
        return Response(services.get_tags(name))

    def put(self, request, name):
        services.set_tags(name, require_json(request.data, "tags"))
        return empty()

    def delete(self, request, name):
        services.delete_tags(name, require_json(request.data, "tags"))
        return empty()


class BulkScheduleApi(ConductorApi):
    """``PUT /bulk/pause`` and ``PUT /bulk/resume`` with a JSON list of names."""

    action = ""
    http_method_names = ["put"]

    def put(self, request):
        return Response(services.bulk(self.action, require_json(request.data, "schedule names")))


class NextFewApi(ConductorApi):
    """``GET /nextFewSchedules?cronExpression&scheduleStartTime&scheduleEndTime&limit``."""

    def get(self, request):
        q = request.query_params
        return Response(services.next_few(qstr(q, "cronExpression"), qint(q, "scheduleStartTime", None),
                                          qint(q, "scheduleEndTime", None), qint(q, "limit", 5)))


class ExecutionSearchApi(ConductorApi):
    """``GET /search/executions?query&freeText&start&size&sort``."""

    def get(self, request):
        q = request.query_params
        return Response(services.execution_search(
            query=qstr(q, "query"), free_text=qstr(q, "freeText", "*"), start=qint(q, "start", 0),
            size=qint(q, "size", 100), sort=_sort(q)))


class AdminApi(ConductorApi):
    """``GET /admin/pause``, ``/admin/resume`` (all firing, every cluster) and
    ``/admin/requeue``."""

    action = ""

    def get(self, request):
        if self.action == "requeue":
            return Response(services.requeue_all())
        return Response(services.set_scheduler_paused(self.action == "pause"))
