"""``/api/agent/*``: Conductor's AgentController paths, bodies and statuses.

Roles (``apps.api.auth.required_role``): GETs (status, execution, stream, agent
definitions) are read-only; ``deploy`` is the admin's (it registers definitions, as
``/api/metadata``); ``events/{id}`` is a worker's; every other POST (compile, start,
respond, signal, stop) an operator's.
"""
from __future__ import annotations

from django.http import StreamingHttpResponse
from rest_framework.response import Response

from apps.agents import services, stream
from apps.api.auth import Forbidden, require_role
from apps.api.models import ROLE_ADMIN
from apps.api.params import qint, qstr
from apps.api.views.base import ConductorApi, empty
from apps.core.errors import InvalidInput
from apps.engine import selectors


def _body(request) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object")
    return data


class CompileApi(ConductorApi):
    """``POST /agent/compile``: CompileResponse ``{workflowDef, requiredWorkers}``."""

    def post(self, request):
        return Response(services.compile_request(_body(request)))


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
    """``GET /agent/{name}?version``: a deployed agent's configuration and WorkflowDef."""

    def get(self, request, name):
        return Response(services.agent_def(name, qint(request.query_params, "version", None)))


class ExecutionsApi(ConductorApi):
    """``GET /agent/executions?start&size&sort&freeText&status&agentName&sessionId&classifier``."""

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
