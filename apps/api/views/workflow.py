"""``/api/workflow``: start, execute (sync), get, status, pause/resume, terminate, remove,
decide, correlation look-ups and running lists, with Conductor's answers (text ids,
empty 200s, 204 for restart/retry)."""
from __future__ import annotations

import threading
import time
import uuid

from rest_framework.response import Response

from apps.api.auth import require_role
from apps.api.models import ROLE_ADMIN
from apps.api.params import qbool, qint, qstr
from apps.api.parsers import require_json
from apps.api.shapes import check_start_request
from apps.api.views.base import ConductorApi, empty, text
from apps.core import lifecycle
from apps.core.errors import InvalidInput
from apps.engine import executor, history, notify, payloads, recovery, selectors, signals
from apps.engine.representation import workflow_json, workflow_status_json
from apps.metadata import secrets


def _start_request(data) -> dict:
    data = require_json(data)
    if data is None:
        raise InvalidInput("StartWorkflowRequest body is required")
    if not isinstance(data, dict):
        raise InvalidInput("StartWorkflowRequest must be a JSON object")
    return data


def start_from_request(req: dict, *, principal, name: str | None = None, version: int | None = None) -> str:
    """Start a workflow from a StartWorkflowRequest dict (camelCase) for ``principal`` (the
    caller's access key; None when auth is off): ``executor.start_planned`` of
    ``plan_from_request``; its id."""
    return executor.start_planned(plan_from_request(req, principal=principal, name=name, version=version))


def plan_from_request(req: dict, *, principal, name: str | None = None,
                      version: int | None = None) -> executor.StartPlan:
    """The ``executor.StartPlan`` of a StartWorkflowRequest dict (camelCase) for
    ``principal``, nothing written. An inline ``workflowDef`` that names a
    secret (``${workflow.secrets.X}``) needs the admin role, as reading a secret's value
    does: its tasks would hand the caller the value (stricter than Conductor, which lets
    any caller start one). Raises Forbidden for that, InvalidInput for a bad request."""
    workflow_def = req.get("workflowDef")
    if workflow_def is not None and not isinstance(workflow_def, dict):
        raise InvalidInput("workflowDef must be a WorkflowDef object")
    if workflow_def is not None and secrets.references(workflow_def):
        require_role(principal, ROLE_ADMIN, "start an inline workflowDef that names secrets")
    return executor.plan_start(
        name=name or req.get("name"),
        version=version if version is not None else req.get("version"),
        # externalInputPayloadStoragePath: the input uploaded to external payload storage
        input=payloads.internalize_workflow_input(req),
        correlation_id=req.get("correlationId"),
        priority=req.get("priority"),
        task_to_domain=req.get("taskToDomain"),
        workflow_def=workflow_def,
        created_by=req.get("createdBy"),
        # an empty key is no key (Conductor checks StringUtils.isNotBlank)
        idempotency_key=req.get("idempotencyKey") or None,
        idempotency_strategy=req.get("idempotencyStrategy"),
    )


def validate_start_request(req: dict) -> None:
    """Conductor's checks of a StartWorkflowRequest before the start itself (field types
    first: ``shapes.check_start_request``)."""
    check_start_request(req)
    if not req.get("name") and not (req.get("workflowDef") or {}).get("name"):
        raise InvalidInput("Validation failed, check below errors for detail.", validation_errors=[
            {"path": "startWorkflow.arg0.name", "message": "Workflow name cannot be null or empty"}])
    if req.get("input") is None and "input" in req and not req.get("externalInputPayloadStoragePath"):
        raise InvalidInput("NULL input passed when starting workflow")


class StartWorkflowApi(ConductorApi):
    """``POST /workflow`` with a StartWorkflowRequest; answers the id as text."""

    def post(self, request):
        req = _start_request(request.data)
        validate_start_request(req)
        return text(start_from_request(req, principal=getattr(request, "api_principal", None)))


class StartWorkflowByNameApi(ConductorApi):
    """``POST /workflow/{name}?version&correlationId&priority`` with the input as body."""

    def post(self, request, name):
        data = require_json(request.data)
        if data is None:
            raise InvalidInput("Workflow input is required")
        q = request.query_params
        return text(executor.workflow_start(
            name=name, version=qint(q, "version", None), input=data, correlation_id=qstr(q, "correlationId"),
            priority=qint(q, "priority", 0), not_found="name"))


_changed = threading.Condition()


def _on_change(_workflow_id: str) -> None:
    with _changed:
        _changed.notify_all()


notify.add_listener(_on_change)


def await_signal_response(workflow_id: str, *, task_refs: set[str], strategy: str, request_id: str,
                          timeout_s: float) -> dict:
    """WorkflowSignalResponder.awaitSignalResponse: re-read ``workflow_id`` until it has
    ended or blocks (see ``signals.settled``), at most ``timeout_s`` seconds, then render
    the SignalResponse of ``strategy``; ``signalTimeout`` is true when time ran out first.
    Nothing is locked while waiting. The wait is capped at
    ``CONDUCTOR["MAX_SYNC_WAIT_SECONDS"]`` (30 s by default): a request cannot hold a server
    thread, or a stopping server, longer than that whatever ``waitForSeconds`` says, and
    a server asked to stop (``apps.core.lifecycle.stopping``) answers at once with
    ``signalTimeout`` true."""
    from django.conf import settings

    timeout_s = min(timeout_s, float(settings.CONDUCTOR.get("MAX_SYNC_WAIT_SECONDS", 30)))
    deadline = time.monotonic() + timeout_s
    while True:
        wf = selectors.workflow_get(workflow_id=workflow_id)
        blocking = signals.settled(wf, task_refs)
        if blocking is not None:
            return signals.signal_response(wf, blocking, strategy=strategy, request_id=request_id,
                                           signal_timeout=False)
        remaining = deadline - time.monotonic()
        if remaining <= 0 or lifecycle.stopping.is_set():
            return signals.signal_response(wf, None, strategy=strategy, request_id=request_id,
                                           signal_timeout=True)
        with _changed:
            # re-read for changes made by the cluster or another server process
            _changed.wait(timeout=min(remaining, settings.CONDUCTOR["SYNC_WAIT_RECHECK_SECONDS"]))


class ExecuteWorkflowApi(ConductorApi):
    """``POST /workflow/execute/{name}/{version}?requestId&waitUntilTaskRef&waitForSeconds
    &returnStrategy``: start, then wait until the workflow has ended or blocks (a WAIT
    without timer, or an ended task named in the comma-separated ``waitUntilTaskRef``),
    or ``waitForSeconds`` (default 10; 0 means 10) pass. Answers the SignalResponse of
    ``returnStrategy`` (default TARGET_WORKFLOW: a WorkflowRun) with ``signalTimeout``
    false when it ended or blocked, true when the time ran out. A missing ``requestId``
    becomes a random UUID. Source: WorkflowResource.executeWorkflow."""

    def post(self, request, name, version):
        req = _start_request(request.data)
        check_start_request(req)
        q = request.query_params
        strategy = signals.return_strategy(qstr(q, "returnStrategy"))
        wait_s = qint(q, "waitForSeconds", 10) or 10
        wait_refs = {r.strip() for r in (qstr(q, "waitUntilTaskRef") or "").split(",") if r.strip()}
        request_id = qstr(q, "requestId") or str(uuid.uuid4())
        workflow_id = start_from_request(req, principal=getattr(request, "api_principal", None),
                                         name=name, version=(version or None))
        return Response(await_signal_response(workflow_id, task_refs=wait_refs, strategy=strategy,
                                              request_id=request_id, timeout_s=wait_s))


class WorkflowApi(ConductorApi):
    """``GET /workflow/{id}?includeTasks`` and ``DELETE /workflow/{id}?reason`` (terminate)."""

    def get(self, request, workflow_id):
        include = qbool(request.query_params, "includeTasks", True)
        return Response(workflow_json(selectors.workflow_get(workflow_id=workflow_id, include_tasks=include),
                                      include_tasks=include))

    def delete(self, request, workflow_id):
        q = request.query_params
        executor.workflow_terminate(workflow_id=workflow_id, reason=qstr(q, "reason"),
                                    trigger_failure_workflow=qbool(q, "triggerFailureWorkflow", False))
        return empty()


class WorkflowStatusApi(ConductorApi):
    """``GET /workflow/{id}/status?includeOutput&includeVariables``."""

    def get(self, request, workflow_id):
        wf = selectors.workflow_get(workflow_id=workflow_id, include_tasks=False)
        return Response(workflow_status_json(
            wf, include_output=qbool(request.query_params, "includeOutput", False),
            include_variables=qbool(request.query_params, "includeVariables", False)))


class WorkflowHistoryApi(ConductorApi):
    """``GET /workflow/{id}/history?after=<seq>&limit=<n>``: the execution's history
    (``apps.engine.history``), oldest first: ``{"workflowId", "events": [{"seq", "time"
    (epoch ms), "kind", "taskId"?, "data"}], "next": <seq to pass as after, or null>}``.
    ``limit`` is 1..1000 (default 500). The kinds and their ``data`` are listed in
    ``apps.engine.history``'s module doc (``workflow.updated`` carries the earlier value
    of each workflow field a change replaced). Errors: 404 ``No such workflow found by id: %s``
    (Conductor's error body); 400 for a negative ``after`` or a ``limit`` out of range.
    An extension of Conductor's API (Conductor keeps no such history)."""

    def get(self, request, workflow_id):
        q = request.query_params
        after = qint(q, "after", 0)
        limit = qint(q, "limit", 500)
        if after < 0:
            raise InvalidInput("after must be a seq (0 or more)",
                               validation_errors=[{"path": "after", "message": "must be 0 or more", "invalidValue": after}])
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit must be between 1 and 1000",
                               validation_errors=[{"path": "limit", "message": "must be between 1 and 1000",
                                                   "invalidValue": limit}])
        selectors.workflow_get(workflow_id=workflow_id, include_tasks=False)  # 404 for an unknown id
        rows = history.events(workflow_id, after=after, limit=limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        return Response({"workflowId": workflow_id, "events": [history.event_json(r) for r in rows],
                         "next": rows[-1].id if more else None})


class PauseWorkflowApi(ConductorApi):
    def put(self, request, workflow_id):
        executor.workflow_pause(workflow_id=workflow_id)
        return empty()


class ResumeWorkflowApi(ConductorApi):
    def put(self, request, workflow_id):
        executor.workflow_resume(workflow_id=workflow_id)
        return empty()


class RemoveWorkflowApi(ConductorApi):
    def delete(self, request, workflow_id):
        executor.workflow_remove(workflow_id=workflow_id,
                                 archive=qbool(request.query_params, "archiveWorkflow", True))
        return empty()


class DecideWorkflowApi(ConductorApi):
    def put(self, request, workflow_id):
        executor.workflow_decide(workflow_id)
        return empty()


class CorrelatedApi(ConductorApi):
    """``GET /workflow/{name}/correlated/{correlationId}?includeClosed&includeTasks``."""

    def get(self, request, name, correlation_id):
        q = request.query_params
        include_tasks = qbool(q, "includeTasks", False)
        wfs = selectors.workflows_by_correlation_id(name=name, correlation_id=correlation_id,
                                                    include_closed=qbool(q, "includeClosed", False),
                                                    include_tasks=include_tasks)
        return Response([workflow_json(w, include_tasks=include_tasks) for w in wfs])


def _correlated(request, names: list[str], ids: list[str]) -> dict:
    """``{correlationId: [Workflow]}`` over the workflow ``names``, by the query's
    ``includeClosed``/``includeTasks`` (both default false)."""
    q = request.query_params
    include_tasks = qbool(q, "includeTasks", False)
    include_closed = qbool(q, "includeClosed", False)
    return {cid: [workflow_json(w, include_tasks=include_tasks)
                  for name in names for w in selectors.workflows_by_correlation_id(
                      name=name, correlation_id=cid, include_closed=include_closed, include_tasks=include_tasks)]
            for cid in ids}


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(i, str) for i in value)


class CorrelatedBatchApi(ConductorApi):
    """``POST /workflow/{name}/correlated`` with a list of correlation ids."""

    def post(self, request, name):
        ids = require_json(request.data)
        if not _strings(ids):
            raise InvalidInput("Request body must be a list of correlation ids (strings)")
        return Response(_correlated(request, [name], ids))


class CorrelatedSearchApi(ConductorApi):
    """``POST /workflow/correlated/batch?includeClosed&includeTasks`` with a
    CorrelationIdsSearchRequest ``{"workflowNames": [...], "correlationIds": [...]}``
    (Orkes' endpoint, what the TypeScript SDK's ``getByCorrelationIds`` calls) ->
    ``{correlationId: [Workflow of any of those names]}``."""

    def post(self, request):
        req = require_json(request.data)
        if not isinstance(req, dict):
            raise InvalidInput("CorrelationIdsSearchRequest must be a JSON object")
        for key in ("workflowNames", "correlationIds"):
            if not _strings(req.get(key)):
                raise InvalidInput(f"{key} must be a list of strings", validation_errors=[
                    {"path": key, "message": f"{key} must be a list of strings"}])
        return Response(_correlated(request, req["workflowNames"], req["correlationIds"]))


class RunningWorkflowsApi(ConductorApi):
    """``GET /workflow/running/{name}?version&startTime&endTime`` (version defaults to 1)."""

    def get(self, request, name):
        q = request.query_params
        return Response(selectors.running_workflow_ids(name=name, version=qint(q, "version", 1) or 1,
                                                       start_time=qint(q, "startTime", None),
                                                       end_time=qint(q, "endTime", None)))


class WorkflowOrStartApi(ConductorApi):
    """``/workflow/{x}``: POST starts workflow ``x`` by name; GET reads and DELETE
    terminates execution ``x`` (Conductor maps both on the same path)."""

    def post(self, request, name_or_id):
        return StartWorkflowByNameApi().post(request, name_or_id)

    def get(self, request, name_or_id):
        return WorkflowApi().get(request, name_or_id)

    def delete(self, request, name_or_id):
        return WorkflowApi().delete(request, name_or_id)


class RestartWorkflowApi(ConductorApi):
    """``POST /workflow/{id}/restart?useLatestDefinitions`` -> 204."""

    def post(self, request, workflow_id):
        recovery.workflow_restart(workflow_id=workflow_id,
                                  use_latest_definitions=qbool(request.query_params, "useLatestDefinitions", False))
        return empty(204)


class RetryWorkflowApi(ConductorApi):
    """``POST /workflow/{id}/retry?resumeSubworkflowTasks`` -> 204."""

    def post(self, request, workflow_id):
        recovery.workflow_retry(workflow_id=workflow_id,
                                resume_subworkflow_tasks=qbool(request.query_params, "resumeSubworkflowTasks", False))
        return empty(204)


class RerunWorkflowApi(ConductorApi):
    """``POST /workflow/{id}/rerun`` with a RerunWorkflowRequest -> the id as text."""

    def post(self, request, workflow_id):
        # Conductor's @RequestBody is required: no body (or null) is no request
        req = require_json(request.data) if request.body.strip() else None
        if req is None:
            raise InvalidInput("RerunWorkflowRequest is required: the request body is missing")
        if not isinstance(req, dict):
            raise InvalidInput("RerunWorkflowRequest must be a JSON object")
        # the fields' types are checked by recovery.workflow_rerun, for every caller
        return text(recovery.workflow_rerun(
            workflow_id=workflow_id, rerun_from_task_id=req.get("reRunFromTaskId") or None,
            task_input=req.get("taskInput"), workflow_input=req.get("workflowInput"),
            correlation_id=req.get("correlationId")))


def _skip_request(request) -> dict:
    """SkipTaskRequest arrives as query parameters (``taskInput``/``taskOutput`` as JSON) or,
    from the Python SDK, as a Python repr in ``skipTaskRequest``; a JSON body is accepted too."""
    import ast
    import json

    q = request.query_params
    out: dict = {}
    raw = qstr(q, "skipTaskRequest")
    if raw:
        for parse in (json.loads, ast.literal_eval):
            try:
                value = parse(raw)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, dict):
                out.update(value)
                break
    for key in ("taskInput", "taskOutput"):
        if qstr(q, key):
            try:
                out[key] = json.loads(q[key])
            except ValueError:
                raise InvalidInput(f"{key} must be a JSON object") from None
    body = request.data
    if isinstance(body, dict):
        out.setdefault("taskInput", body.get("taskInput"))
        out.setdefault("taskOutput", body.get("taskOutput"))
    return out


class SkipTaskApi(ConductorApi):
    """``PUT /workflow/{id}/skiptask/{taskReferenceName}`` -> 200."""

    def put(self, request, workflow_id, task_ref_name):
        req = _skip_request(request)
        recovery.task_skip(workflow_id=workflow_id, task_reference_name=task_ref_name,
                           task_input=req.get("taskInput") if isinstance(req.get("taskInput"), dict) else None,
                           task_output=req.get("taskOutput") if isinstance(req.get("taskOutput"), dict) else None)
        return empty()


class ResetCallbacksApi(ConductorApi):
    """``POST /workflow/{id}/resetcallbacks`` -> 204."""

    def post(self, request, workflow_id):
        recovery.workflow_reset_callbacks(workflow_id=workflow_id)
        return empty(204)


class WorkflowTestApi(ConductorApi):
    """``POST /workflow/test`` with a WorkflowTestRequest: run the definition through the
    decider in memory with mocked task outputs; nothing is stored. Answers a Workflow."""

    def post(self, request):
        from apps.engine.simulator import workflow_test

        req = _start_request(request.data)
        return Response(workflow_test(req))


class WorkflowTasksApi(ConductorApi):
    """``GET /workflow/{id}/tasks?start=0&count=15&status=...`` -> SearchResult<Task>,
    paged in memory as Conductor does; ``status`` may repeat (case-insensitive)."""

    def get(self, request, workflow_id):
        q = request.query_params
        wf = selectors.workflow_get(workflow_id=workflow_id)
        statuses = {s.upper() for v in q.getlist("status") for s in v.split(",") if s.strip()}
        tasks = [t for t in workflow_json(wf)["tasks"] if not statuses or t["status"] in statuses]
        start = max(qint(q, "start", 0) or 0, 0)
        count = max(qint(q, "count", 15) or 15, 0)
        return Response({"totalHits": len(tasks), "results": tasks[start:start + count]})


class WorkflowVariablesApi(ConductorApi):
    """``POST /workflow/{id}/variables`` with a JSON object: merge into the workflow's
    variables and decide; answers the Workflow."""

    def post(self, request, workflow_id):
        variables = require_json(request.data)
        if not isinstance(variables, dict):
            raise InvalidInput("The request body must be a JSON object of variables")
        executor.workflow_variables_update(workflow_id=workflow_id, variables=variables)
        return Response(workflow_json(selectors.workflow_get(workflow_id=workflow_id)))


class TerminateRemoveApi(ConductorApi):
    """``DELETE /workflow/{id}/terminate-remove?reason&archiveWorkflow``."""

    def delete(self, request, workflow_id):
        q = request.query_params
        wf = selectors.workflow_get(workflow_id=workflow_id, include_tasks=False)
        if not wf.terminal:
            executor.workflow_terminate(workflow_id=workflow_id, reason=qstr(q, "reason"))
        executor.workflow_remove(workflow_id=workflow_id, archive=qbool(q, "archiveWorkflow", True))
        return empty()
