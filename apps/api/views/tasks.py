"""``/api/tasks``: poll, update, logs, queue sizes and poll data.

The worker hot paths (batch poll, ``POST /tasks``, ``POST /tasks/update-v2``) are plain
Django views: they parse one JSON body, call one engine service and write one JSON
answer, skipping DRF's content negotiation and request wrapping (measured in
``bench/``). They answer with the same Conductor error body as the DRF views.
"""
from __future__ import annotations

import json
import uuid
from functools import wraps

from asgiref.sync import async_to_sync
from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.response import Response

from apps.api import fastpath
from apps.api.exceptions import error_body, error_response
from apps.api.params import qint, qstr
from apps.api.parsers import check_text, require_json
from apps.api.views.base import ConductorApi, empty, text
from apps.core.errors import InvalidInput, NotFound, PayloadTooLarge
from apps.engine import executor, queue, selectors, signals
from apps.engine.blueprint import Blueprint
from apps.engine.representation import task_json


def _json(data, status: int = 200) -> HttpResponse:
    return HttpResponse(json.dumps(data, separators=(",", ":")), content_type="application/json", status=status)


def hot_path(methods: tuple[str, ...]):
    """Decorator for the plain views: method check, CSRF exemption, Conductor errors."""
    def decorate(view):
        @csrf_exempt
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method not in methods:
                return _json(error_body(405, f"Request method '{request.method}' is not supported"), status=405)
            try:
                return view(request, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - rendered as Conductor's ErrorResponse
                return error_response(exc)
        return wrapper
    return decorate


def _poll(request, task_type: str, single: bool) -> HttpResponse:
    """The fast path's poll answer (``fastpath.poll_answer``, hence ``queue.poll``),
    its database work in this request's thread."""
    return _as_response(async_to_sync(fastpath.poll_answer)(task_type, dict(request.GET.lists()), single,
                                                            in_caller_thread=True))


@hot_path(("GET",))
def batch_poll(request, task_type: str):
    """``GET /tasks/poll/batch/{taskType}?workerid&domain&count=1&timeout=100`` -> ``[Task]``
    (200 ``[]`` when nothing is available; ``timeout`` is a long poll in ms, max 5000)."""
    return _poll(request, task_type, single=False)


@hot_path(("GET",))
def single_poll(request, task_type: str):
    """``GET /tasks/poll/{taskType}?workerid&domain`` -> Task, or 204 when none (100 ms long poll)."""
    return _poll(request, task_type, single=True)


@hot_path(("POST",))
def update_task(request):
    """``POST /tasks`` with a TaskResult -> the task id as text."""
    return _as_response(fastpath.update_call(request.body, v2=False))


@hot_path(("POST",))
def update_task_v2(request):
    """``POST /tasks/update-v2``: update, then hand the same worker its next task of the
    same type and domain (already IN_PROGRESS) or 204 when there is none. Never the task
    just updated. Source: TaskResource.updateTaskV2."""
    return _as_response(fastpath.update_call(request.body, v2=True))


def _as_response(answer: tuple[int, str, bytes]) -> HttpResponse:
    status, content_type, body = answer
    return HttpResponse(body, status=status, content_type=content_type)


class UpdateByRefApi(ConductorApi):
    """``POST /tasks/{workflowId}/{taskRefName}/{status}?workerid`` with the output map;
    answers the updated task id as text, or an empty 200 when no pending task matches."""

    def post(self, request, workflow_id, task_ref_name, status):
        return text(_update_by_ref(request, workflow_id, task_ref_name, status))


def _update_by_ref(request, workflow_id: str, task_ref_name: str, status: str) -> str | None:
    """Apply the output-map body to the pending task with that reference; its id or None."""
    return executor.task_update_by_ref(workflow_id=workflow_id, task_ref_name=task_ref_name, status=status,
                                       output=_output_body(request), worker_id=qstr(request.query_params, "workerid"))


def _output_body(request) -> dict:
    """The task output a by-reference update or a signal carries (empty body: ``{}``).
    Raises InvalidInput when the body is not a JSON object."""
    output = require_json(request.data)
    if output is None:
        return {}
    if not isinstance(output, dict):
        raise InvalidInput("The request body must be the task output (a JSON object)")
    return output


class TaskApi(ConductorApi):
    """``GET /tasks/{taskId}``."""

    def get(self, request, task_id):
        task, wf = selectors.task_get(task_id=task_id)
        blueprint = Blueprint(wf.definition) if wf else None
        return Response(task_json(task, wf, blueprint))


def _log_line(text: str) -> str:
    """``text``, or the string it encodes when it is one JSON string literal."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == '"':
        try:
            decoded = json.loads(stripped)
        except ValueError:
            return text
        if isinstance(decoded, str):
            return decoded
    return text


class TaskLogApi(ConductorApi):
    """``GET /tasks/{taskId}/log`` (204 when none) and ``POST`` of one log line
    (413 above ``CONDUCTOR["MAX_TASK_LOG_BYTES"]``).

    The Python SDK sends the line as raw text; the TypeScript SDK sends it JSON-encoded
    (``"text"``, quotes included). A body that is exactly one JSON string literal is
    stored decoded, anything else as is, so both store the line their caller wrote."""

    def get(self, request, task_id):
        logs = selectors.task_logs(task_id=task_id)
        if not logs:
            return empty(204)
        return Response(logs)

    def post(self, request, task_id):
        limit = settings.CONDUCTOR["MAX_TASK_LOG_BYTES"]
        if len(request.body) > limit:
            raise PayloadTooLarge(f"Task log line of {len(request.body)} bytes is larger than the limit of {limit} bytes")
        line = check_text(_log_line(request.body.decode("utf-8", errors="replace")), "The task log line")
        selectors.task_get(task_id=task_id)
        executor.task_log_add(task_id=task_id, log_line=line)
        return empty()


class QueueSizesApi(ConductorApi):
    """``GET /tasks/queue/sizes?taskType=a&taskType=b`` -> ``{taskType: n}``."""

    def get(self, request):
        types = request.query_params.getlist("taskType")
        if not types:
            raise InvalidInput("taskType is required")
        return Response(queue.queue_sizes(types))


class QueueSizeApi(ConductorApi):
    """``GET /tasks/queue/size?taskType&domain`` -> a number."""

    def get(self, request):
        q = request.query_params
        task_type = qstr(q, "taskType")
        if not task_type:
            raise InvalidInput("taskType is required")
        name = queue.queue_name_for(task_type, qstr(q, "domain"))
        return Response(queue.queue_sizes([name])[name])


class QueueAllApi(ConductorApi):
    def get(self, request):
        return Response(queue.all_queue_sizes())


class QueueAllVerboseApi(ConductorApi):
    """``GET /tasks/queue/all/verbose`` -> ``{queueName: {"a": {"size": n, "uacked": m}}}``
    (``queue.all_queue_details_verbose``)."""

    def get(self, request):
        return Response(queue.all_queue_details_verbose())


class PollDataApi(ConductorApi):
    def get(self, request):
        task_type = qstr(request.query_params, "taskType")
        if not task_type:
            raise InvalidInput("taskType is required")
        return Response(queue.poll_data(task_type))


class PollDataAllApi(ConductorApi):
    def get(self, request):
        return Response(queue.poll_data())




class UpdateByRefSyncApi(ConductorApi):
    """``POST /tasks/{workflowId}/{taskRefName}/{status}/sync`` -> the Workflow after the
    update; 404 ``Found no running task %s of workflow %s to update`` when none is pending."""

    def post(self, request, workflow_id, task_ref_name, status):
        from apps.engine.representation import workflow_json

        task_id = _update_by_ref(request, workflow_id, task_ref_name, status)
        if task_id is None:
            raise NotFound(f"Found no running task {task_ref_name} of workflow {workflow_id} to update")
        return Response(workflow_json(selectors.workflow_get(workflow_id=workflow_id)))


class SignalApi(ConductorApi):
    """``POST /tasks/{workflowId}/{status}/signal`` with the output map: give the
    workflow's blocked task (first non-terminal WAIT, also inside running sub-workflows)
    that status and output; empty 200 whether or not a task was blocked (Conductor's
    fire-and-forget ``signalWorkflowTaskAsync``). 400 for a status that is not a
    TaskResult status, 404 for an unknown workflow."""

    def post(self, request, workflow_id, status):
        signals.signal_task(workflow_id=workflow_id, status=status, output=_output_body(request))
        return empty()


class SignalSyncApi(ConductorApi):
    """``POST /tasks/{workflowId}/{status}/signal/sync?returnStrategy&timeoutMillis``:
    signal as above, then wait (``timeoutMillis``, default 5000 ms) until the workflow
    ends or blocks again and answer the SignalResponse of ``returnStrategy`` (default
    TARGET_WORKFLOW). 404 ``Found no blocked task in workflow %s to signal`` when nothing
    was blocked. Source: TaskResource.signalWorkflowTaskSync."""

    def post(self, request, workflow_id, status):
        from apps.api.views.workflow import await_signal_response

        q = request.query_params
        strategy = signals.return_strategy(qstr(q, "returnStrategy"))
        timeout_ms = qint(q, "timeoutMillis", 5000)
        if timeout_ms is None or timeout_ms < 0:
            raise InvalidInput("timeoutMillis must be a number of milliseconds >= 0")
        if signals.signal_task(workflow_id=workflow_id, status=status, output=_output_body(request)) is None:
            raise NotFound(f"Found no blocked task in workflow {workflow_id} to signal")
        return Response(await_signal_response(workflow_id, task_refs=set(), strategy=strategy,
                                              request_id=str(uuid.uuid4()), timeout_s=timeout_ms / 1000))


class RequeuePendingApi(ConductorApi):
    """``POST /tasks/queue/requeue/{taskType}``: make every waiting SCHEDULED task of that
    type pollable now; answers the count as text."""

    def post(self, request, task_type):
        return text(str(queue.requeue_pending(task_type)))
