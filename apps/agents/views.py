"""``/api/agent/*``: Conductor's AgentController paths, bodies and statuses.

Roles (``apps.api.auth.required_role``): GETs (status, execution, stream, agent
definitions, lists) are read-only; ``deploy`` and ``DELETE /agent/{name}`` are the
admin's (they change definitions, as ``/api/metadata``); ``events/{id}`` is a worker's;
every other write (compile, start, respond, signal, stop, pause, resume, cancel, restart,
retry, rerun, the bulk operations, removing a record) an operator's.
"""
from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.agents import services, stream
from apps.api.auth import Forbidden, require_role
from apps.api.models import ROLE_ADMIN
from apps.api.params import qbool, qint, qstr
from apps.api.views.base import ConductorApi, empty
from apps.api.views.workflow import PauseWorkflowApi, RerunWorkflowApi, ResumeWorkflowApi
from apps.core.errors import InvalidInput
from apps.engine import executor, recovery, search, selectors
from apps.engine.representation import workflow_json, workflow_summary_json


def _body(request) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object")
    return data


class CompileApi(ConductorApi):
    """``POST /agent/compile``: CompileResponse ``{workflowDef, requiredWorkers}``."""

    def post(self, request):
        return Response(services.compile_request(_body(request)))


class InspectPlanApi(ConductorApi):
    """``POST /agent/inspect-plan`` ``{agentConfig, plan}``: ``{workflowDef, error,
    warnings, stats}``, the plan compiled against a plan_execute harness, nothing run."""

    def post(self, request):
        return Response(services.inspect_plan(_body(request)))


class DeployApi(ConductorApi):
    """``POST /agent/deploy``: AgentStartResponse ``{agentName, requiredWorkers}``."""

    def post(self, request):
        return Response(services.deploy(_body(request)))


class StartApi(ConductorApi):
    """``POST /agent/start``: AgentStartResponse ``{executionId, agentName, requiredWorkers}``."""

    def post(self, request):
        try:
            require_role(getattr(request, "api_principal", None), ROLE_ADMIN, "start an agent naming secrets")
            may = True
        except Forbidden:
            may = False
        return Response(services.start(_body(request), may_use_secrets=may))


class StatusApi(ConductorApi):
    """``GET /agent/{executionId}/status``: AgentStatusResponse."""

    def get(self, request, execution_id):
        return Response(services.status(execution_id))


class ExecutionApi(ConductorApi):
    """``GET /agent/execution/{executionId}``: AgentRun with tasks and token usage."""

    def get(self, request, execution_id):
        return Response(services.execution(execution_id))


class RespondApi(ConductorApi):
    """``POST /agent/{executionId}/respond``: completes the pending HUMAN task (409 when none)."""

    def post(self, request, execution_id):
        services.respond(execution_id, request.data)
        return empty()


class StopApi(ConductorApi):
    """``POST /agent/{executionId}/stop``: the loop ends after its current turn."""

    def post(self, request, execution_id):
        services.stop(execution_id)
        return empty()


class SignalApi(ConductorApi):
    """``POST /agent/{executionId}/signal`` ``{message}``: a persistent signal for the next turns."""

    def post(self, request, execution_id):
        body = request.data if isinstance(request.data, dict) else {}
        services.signal(execution_id, body.get("message", ""))
        return empty()


class FrameworkEventApi(ConductorApi):
    """``POST /agent/events/{executionId}``: events pushed by framework workers; always 200
    and dropped (framework agents are not compiled by this server), as Conductor drops
    events of executions nobody streams."""

    def post(self, request, execution_id):
        return empty()


class StreamApi(ConductorApi):
    """``GET /agent/stream/{executionId}`` (``Last-Event-ID`` to resume): server-sent
    events, see ``apps.agents.stream``. 404 (JSON) for an unknown execution."""

    def get(self, request, execution_id):
        selectors.workflow_get(workflow_id=execution_id, include_tasks=False)  # 404 first
        after = stream.parse_last_event_id(request.headers.get("Last-Event-ID"))
        response = StreamingHttpResponse(stream.frames(execution_id, after), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


class AgentDefApi(ConductorApi):
    """``GET /agent/{name}?version``: a deployed agent's configuration and WorkflowDef;
    ``DELETE /agent/{name}?version``: remove that version (the latest when none), 404 for
    an unknown agent."""

    def get(self, request, name):
        return Response(services.agent_def(name, qint(request.query_params, "version", None)))

    def delete(self, request, name):
        services.agent_delete(name, qint(request.query_params, "version", None))
        return empty()


class AgentListApi(ConductorApi):
    """``GET /agent/list``: ``[AgentSummary]`` of the deployed agents."""

    def get(self, request):
        return Response(services.agents_list())


class AgentDefinitionApi(ConductorApi):
    """``GET /agent/definitions/{name}?version``: the deployed agent's WorkflowDef."""

    def get(self, request, name):
        return Response(services.agent_definition(name, qint(request.query_params, "version", None)))


class ExecutionDetailApi(ConductorApi):
    """``GET /agent/executions/{id}``: AgentExecutionDetail; ``DELETE`` (``?reason``):
    terminates it, as ``DELETE /agent/{id}/cancel``."""

    @extend_schema(operation_id="getAgentExecutionDetail")  # apart from the listing's generated id
    def get(self, request, execution_id):
        return Response(services.execution_detail(execution_id))

    def delete(self, request, execution_id):
        services.cancel(execution_id, qstr(request.query_params, "reason"))
        return empty()


class FullExecutionApi(ConductorApi):
    """``GET /agent/executions/{id}/full``: Conductor's ``Workflow`` with its tasks."""

    def get(self, request, execution_id):
        return Response(workflow_json(selectors.workflow_get(workflow_id=execution_id, include_tasks=True)))


class ExecutionTasksApi(ConductorApi):
    """``GET /agent/executions/{id}/tasks?status&count=15&start=0``: TaskListResponse."""

    def get(self, request, execution_id):
        q = request.query_params
        return Response(services.execution_tasks(execution_id, status=qstr(q, "status"),
                                                 count=qint(q, "count", 15), start=qint(q, "start", 0)))


class ExecutionsSearchApi(ConductorApi):
    """``GET /agent/executions/search?start=0&size=20&sort=startTime:DESC&freeText&query
    &classifier&topLevelOnly``: SearchResult<WorkflowSummary> over every execution, as
    ``GET /workflow/search`` (classifier and topLevelOnly as there)."""

    def get(self, request):
        q = request.query_params
        start, size = search.check_paging(qint(q, "start", 0), qint(q, "size", 20), path="size")
        extra = {"topLevelOnly": True} if qbool(q, "topLevelOnly", False) else {}
        total, rows = search.workflow_search(query=qstr(q, "query"), free_text=qstr(q, "freeText") or "*",
                                             sort=qstr(q, "sort") or "startTime:DESC", start=start, size=size,
                                             classifier=qstr(q, "classifier"), **extra)
        return Response({"totalHits": total, "results": [workflow_summary_json(w) for w in rows]})


class TaskLogsApi(ConductorApi):
    """``GET /agent/tasks/{taskId}/log``: ``[TaskExecLog]``; 404 for an unknown task."""

    def get(self, request, task_id):
        selectors.task_get(task_id=task_id)  # Task not found for taskId: %s
        return Response(selectors.task_logs(task_id=task_id))


class PauseApi(PauseWorkflowApi):
    """``PUT /agent/{workflow_id}/pause``: exactly ``PUT /workflow/{id}/pause``."""


class ResumeApi(ResumeWorkflowApi):
    """``PUT /agent/{workflow_id}/resume``: exactly ``PUT /workflow/{id}/resume`` (409 when
    not PAUSED)."""


class CancelApi(ConductorApi):
    """``DELETE /agent/{id}/cancel?reason``: terminate (reason ``Cancelled by user``)."""

    def delete(self, request, execution_id):
        services.cancel(execution_id, qstr(request.query_params, "reason"))
        return empty()


class RestartApi(ConductorApi):
    """``POST /agent/executions/{id}/restart?useLatestDefinitions``: 200 (Conductor's
    AgentController answers void, where ``/workflow/{id}/restart`` answers 204)."""

    def post(self, request, execution_id):
        recovery.workflow_restart(workflow_id=execution_id, use_latest_definitions=qbool(
            request.query_params, "useLatestDefinitions", False))
        return empty()


class RetryApi(ConductorApi):
    """``POST /agent/executions/{id}/retry?resumeSubworkflowTasks``: 200, as restart."""

    def post(self, request, execution_id):
        recovery.workflow_retry(workflow_id=execution_id, resume_subworkflow_tasks=qbool(
            request.query_params, "resumeSubworkflowTasks", False))
        return empty()


class RerunApi(RerunWorkflowApi):
    """``POST /agent/executions/{workflow_id}/rerun`` with a RerunWorkflowRequest: the id as
    text, exactly as ``POST /workflow/{id}/rerun``."""


class RecordApi(ConductorApi):
    """``DELETE /agent/executions/{id}/record?archiveTasks=false``: remove the execution
    and its tasks (``archiveTasks=true`` only for an ended execution, as
    ``DELETE /workflow/{id}/remove?archiveWorkflow``)."""

    def delete(self, request, execution_id):
        executor.workflow_remove(workflow_id=execution_id,
                                 archive=qbool(request.query_params, "archiveTasks", False))
        return empty()


class PruneApi(ConductorApi):
    """``POST /agent/executions/prune?olderThanDays=30&archiveTasks``: ``{"deleted": n}``
    (``archiveTasks`` is accepted; this server keeps no archive, removed is removed)."""

    def post(self, request):
        return Response({"deleted": services.prune(qint(request.query_params, "olderThanDays", 30))})


def _ids(request) -> list[str]:
    data = request.data
    if not isinstance(data, list) or not all(isinstance(i, str) and i for i in data):
        raise InvalidInput("The request body must be a JSON array of execution ids",
                           validation_errors=[{"path": "body", "message": "must be an array of execution ids"}])
    return data


class BulkApi(ConductorApi):
    """``PUT /agent/executions/bulk/{pause,resume}`` and ``POST
    /agent/executions/bulk/{restart,retry,terminate}`` with ``["id", ...]``: each id in turn,
    as Conductor's AgentController does (the first failing id answers its error; the ones
    before it stay done). ``restart`` reads ``useLatestDefinitions``, ``terminate``
    ``reason``."""

    def _run(self, request, action: str):
        ids, q = _ids(request), request.query_params
        for execution_id in ids:
            if action == "pause":
                executor.workflow_pause(workflow_id=execution_id)
            elif action == "resume":
                executor.workflow_resume(workflow_id=execution_id)
            elif action == "restart":
                recovery.workflow_restart(workflow_id=execution_id,
                                          use_latest_definitions=qbool(q, "useLatestDefinitions", False))
            elif action == "retry":
                recovery.workflow_retry(workflow_id=execution_id)
            else:
                services.cancel(execution_id, qstr(q, "reason"))
        return empty()

    def put(self, request, action):
        if action not in ("pause", "resume"):
            return self.http_method_not_allowed(request)
        return self._run(request, action)

    def post(self, request, action):
        if action not in ("restart", "retry", "terminate"):
            return self.http_method_not_allowed(request)
        return self._run(request, action)


class ExecutionsApi(ConductorApi):
    """``GET /agent/executions?start&size&sort&freeText&status&agentName&sessionId&classifier``."""

    @extend_schema(operation_id="listAgentExecutions")
    def get(self, request):
        q = request.query_params
        return Response(services.executions(
            start=qint(q, "start", 0), size=qint(q, "size", 20), sort=qstr(q, "sort") or "startTime:DESC",
            free_text=qstr(q, "freeText"), status=qstr(q, "status"), agent_name=qstr(q, "agentName"),
            session_id=qstr(q, "sessionId"), classifier=qstr(q, "classifier")))


class TaskStatusApi(ConductorApi):
    """``POST /agent/tasks/{executionId}/{refTaskName}/{status}`` with the output as body."""

    def post(self, request, execution_id, ref, status):
        services.update_task(execution_id, ref, status, request.data if request.data != {} else None)
        return empty()
