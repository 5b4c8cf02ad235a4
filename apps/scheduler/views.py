"""``/api/scheduler``: Conductor's SchedulerResource and SchedulerBulkResource.

Per-schedule pause/resume answer both PUT (Conductor OSS) and GET (Orkes; the Python SDK
tries PUT, then GET on 405). Void operations answer an empty 200.
"""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
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

    @extend_schema(operation_id="saveSchedule", tags=["scheduler-resource"])
    def post(self, request):
        return Response(services.schedule_save(require_json(request.data, "WorkflowSchedule")))

    @extend_schema(operation_id="getAllSchedules", tags=["scheduler-resource"])
    def get(self, request):
        return Response(services.schedule_list(qstr(request.query_params, "workflowName")))


class ScheduleSearchApi(ConductorApi):
    """``GET /schedules/search?workflowName&scheduleName&paused&freeText&start&size&sort``."""

    @extend_schema(operation_id="searchSchedules", tags=["scheduler-resource"])
    def get(self, request):
        q = request.query_params
        paused = None if qstr(q, "paused") is None else qbool(q, "paused", False)
        return Response(services.schedule_search(
            workflow_name=qstr(q, "workflowName"), schedule_name=qstr(q, "scheduleName"), paused=paused,
            free_text=qstr(q, "freeText", "*"), start=qint(q, "start", 0), size=qint(q, "size", 100),
            sort=_sort(q)))


class ScheduleApi(ConductorApi):
    """``GET /schedules/{name}`` (404 when absent) and ``DELETE /schedules/{name}``."""

    @extend_schema(operation_id="getSchedule", tags=["scheduler-resource"])
    def get(self, request, name):
        return Response(services.schedule_get(name))

    @extend_schema(operation_id="deleteSchedule", tags=["scheduler-resource"])
    def delete(self, request, name):
        services.schedule_delete(name)
        return empty()


class PauseScheduleApi(ConductorApi):
    """``PUT|GET /schedules/{name}/pause?reason``."""

    @extend_schema(operation_id="pauseSchedule", tags=["scheduler-resource"])
    def put(self, request, name):
        services.schedule_pause(name, qstr(request.query_params, "reason"))
        return empty()

    @extend_schema(operation_id="pauseScheduleByGet", tags=["scheduler-resource"])
    def get(self, request, name):
        return self.put(request, name)


class ResumeScheduleApi(ConductorApi):
    """``PUT|GET /schedules/{name}/resume``."""

    @extend_schema(operation_id="resumeSchedule", tags=["scheduler-resource"])
    def put(self, request, name):
        services.schedule_resume(name)
        return empty()

    @extend_schema(operation_id="resumeScheduleByGet", tags=["scheduler-resource"])
    def get(self, request, name):
        return self.put(request, name)


class ScheduleTagsApi(ConductorApi):
    """``GET|PUT|DELETE /schedules/{name}/tags`` (the SDK's tag calls)."""

    @extend_schema(operation_id="getTagsForSchedule", tags=["scheduler-resource"])
    def get(self, request, name):
        return Response(services.get_tags(name))

    @extend_schema(operation_id="putTagForSchedule", tags=["scheduler-resource"])
    def put(self, request, name):
        services.set_tags(name, require_json(request.data, "tags"))
        return empty()

    @extend_schema(operation_id="deleteTagForSchedule", tags=["scheduler-resource"])
    def delete(self, request, name):
        services.delete_tags(name, require_json(request.data, "tags"))
        return empty()


class BackfillApi(ConductorApi):
    """``POST /schedules/{name}/backfill`` with ``{"startTime", "endTime", "dryRun"}``
    (ours; ``apps.scheduler.backfill``): the missed slots of a past range, listed or
    started once each. Operator role."""

    http_method_names = ["post"]

    @extend_schema(operation_id="backfillSchedule", tags=["scheduler-resource"])
    def post(self, request, name):
        from apps.scheduler import backfill

        return Response(backfill.backfill(name, require_json(request.data, "backfill request")))


class ScheduleRunsApi(ConductorApi):
    """``GET /schedules/{name}/runs?size`` (ours): the schedule's past runs, newest
    first, each with the status of the workflow it started, and its next firings."""

    @extend_schema(operation_id="getScheduleRuns", tags=["scheduler-resource"])
    def get(self, request, name):
        return Response(services.schedule_runs(name, size=qint(request.query_params, "size", 20)))


class BulkScheduleApi(ConductorApi):
    """``PUT /bulk/pause`` and ``PUT /bulk/resume`` with a JSON list of names."""

    action = ""
    http_method_names = ["put"]

    def put(self, request):
        return Response(services.bulk(self.action, require_json(request.data, "schedule names")))


class NextFewApi(ConductorApi):
    """``GET /nextFewSchedules?cronExpression&scheduleStartTime&scheduleEndTime&limit``."""

    @extend_schema(operation_id="getNextFewSchedules", tags=["scheduler-resource"])
    def get(self, request):
        q = request.query_params
        return Response(services.next_few(qstr(q, "cronExpression"), qint(q, "scheduleStartTime", None),
                                          qint(q, "scheduleEndTime", None), qint(q, "limit", 5)))


class ExecutionSearchApi(ConductorApi):
    """``GET /search/executions?query&freeText&start&size&sort``."""

    @extend_schema(operation_id="searchScheduleExecutions", tags=["scheduler-resource"])
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
