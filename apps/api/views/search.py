"""Search endpoints: ``GET /workflow/search``, ``/workflow/search-v2``,
``/workflow/search-by-tasks(-v2)``, ``/tasks/search`` and ``/tasks/search-v2``.

Each parses Conductor's query parameters (``start``=0, ``size``=100 (max 5000),
``sort``, ``freeText``=``*``, ``query``; workflow search also ``classifier`` and
``topLevelOnly``; ``queryId`` is echoed back for the SDK's scrollable result; ``skipCache``
is ignored), calls one selector of ``apps.engine.search`` and answers
``SearchResult`` = ``{"totalHits": n, "results": [...]}`` with WorkflowSummary,
Workflow (without tasks), TaskSummary or Task items.
"""
from __future__ import annotations

from rest_framework.response import Response

from apps.api.params import qbool, qint, qstr
from apps.api.views.base import ConductorApi
from apps.core.clock import now_ms
from apps.engine import search
from apps.engine.blueprint import Blueprint
from apps.engine.models import WorkflowExecution
from apps.engine.representation import task_json, task_summary_json, workflow_json, workflow_summary_json


def _common(request, path: str, what: str = "workflows") -> dict:
    """Conductor's search parameters; ``size`` above 5000 is the bean-validation 400 at
    ``path`` (the Java service method's size argument)."""
    q = request.query_params
    start, size = search.check_paging(qint(q, "start", 0), qint(q, "size", search.DEFAULT_SEARCH_SIZE),
                                      path=path, what=what)
    return {
        "query": qstr(q, "query"),
        "free_text": qstr(q, "freeText", "*"),
        "sort": [s for s in q.getlist("sort") if s and s.strip()] or None,
        "start": start,
        "size": size,
    }


def _workflow_params(request, path: str) -> dict:
    params = _common(request, path)
    q = request.query_params
    params["classifier"] = qstr(q, "classifier")
    if qbool(q, "topLevelOnly", False):
        params["topLevelOnly"] = True
    return params


def _result(request, total: int, results: list) -> Response:
    body = {"totalHits": total, "results": results}
    query_id = qstr(request.query_params, "queryId")
    if query_id:
        body["queryId"] = query_id
    return Response(body)


class WorkflowSearchApi(ConductorApi):
    """``GET /workflow/search`` -> SearchResult<WorkflowSummary>."""

    def get(self, request):
        total, rows = search.workflow_search(**_workflow_params(request, "searchWorkflows.arg1"))
        return _result(request, total, [workflow_summary_json(w) for w in rows])


class WorkflowSearchV2Api(ConductorApi):
    """``GET /workflow/search-v2`` -> SearchResult<Workflow> (no tasks)."""

    def get(self, request):
        params = _workflow_params(request, "searchWorkflowsV2.arg1")
        total, rows = search.workflow_search(with_definition=True, **params)
        return _result(request, total, [workflow_json(w, include_tasks=False) for w in rows])


class WorkflowSearchByTasksApi(ConductorApi):
    """``GET /workflow/search-by-tasks``: workflows with a task matching the task query
    -> SearchResult<WorkflowSummary>."""

    def get(self, request):
        total, rows = search.workflow_search_by_tasks(**_common(request, "searchWorkflowsByTasks.arg1"))
        return _result(request, total, [workflow_summary_json(w) for w in rows])


class WorkflowSearchByTasksV2Api(ConductorApi):
    """``GET /workflow/search-by-tasks-v2`` -> SearchResult<Workflow> (no tasks)."""

    def get(self, request):
        total, rows = search.workflow_search_by_tasks(with_definition=True,
                                                      **_common(request, "searchWorkflowsByTasksV2.arg1"))
        return _result(request, total, [workflow_json(w, include_tasks=False) for w in rows])


class TaskSearchApi(ConductorApi):
    """``GET /tasks/search`` -> SearchResult<TaskSummary>."""

    def get(self, request):
        total, hits = search.task_search(**_common(request, "search.arg1", "tasks"))
        now = now_ms()
        return _result(request, total, [task_summary_json(h.task, h.correlation_id, now=now) for h in hits])


class TaskSearchV2Api(ConductorApi):
    """``GET /tasks/search-v2`` -> SearchResult<Task> (with ``workflowTask`` from each
    task's workflow definition)."""

    def get(self, request):
        total, hits = search.task_search(**_common(request, "searchV2.arg1", "tasks"))
        wf_ids = {h.task.workflow_id for h in hits if not h.task.workflow_task}
        blueprints = {r["workflow_id"]: Blueprint(r["definition"]) for r in
                      WorkflowExecution.objects.filter(workflow_id__in=wf_ids).values("workflow_id", "definition")} \
            if wf_ids else {}
        return _result(request, total, [
            task_json(h.task, blueprint=blueprints.get(h.task.workflow_id), correlation_id=h.correlation_id)
            for h in hits])

