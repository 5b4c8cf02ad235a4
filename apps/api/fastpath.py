"""The worker protocol served straight from ASGI: batch/single poll, ``POST /api/tasks``,
``POST /api/tasks/update-v2`` and ``POST /api/workflow`` (start).

Why: these are the calls every worker makes several times a second, and they carry no
session, cookie or CSRF. Django 5.2 does run concurrent synchronous views in parallel
under ASGI (each request gets its own thread-sensitive context), so correctness does not
need this path; cost does. Measured in process (``bench/fastpath_vs_django.py``: Django's
``ASGIHandler`` against this path, SQLite, the 2-core machine at load average 12-14): an
empty poll costs 14-17 ms (10-11 ms of CPU) through Django's middleware and DRF and
1.0-1.6 ms (0.7-0.8 ms of CPU) here; 64 concurrent 1 s long polls hold 64 threads through
Django (peak 68 threads, 2.0-2.9 s wall) and none here (peak 8 in all, 1.1-1.3 s),
because here a long poll waits on the event loop and only the engine call runs in a
thread pool (``thread_sensitive=False``, one database connection per thread). Every other path goes to Django.
The answers are the same as the Django views in ``apps.api.views`` give (those serve the
test client and WSGI deployments and call the same functions: ``poll_answer``, which
polls through ``queue.poll``, ``update_call`` and ``start_call``; with group commit on,
updates and starts go to its committers instead: ``update_grouped``, ``start_grouped``). Each fast-path request
passes ``auth.authorize`` first, as ``ApiAuthMiddleware`` does for Django.
"""
from __future__ import annotations

import asyncio
import json
import re
from contextlib import nullcontext
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from django.db import close_old_connections

from apps.api import audit, auth
from apps.api.exceptions import logged_body_for_exception
from apps.api.parsers import check_body_size, check_text, check_urlencoded, parse_json
from apps.api.shapes import check_task_result
from apps.core import lifecycle
from apps.core.errors import InvalidInput, PayloadTooLarge
from apps.core.fields import check_length
from apps.engine import executor, groupcommit, history, payloads, queue
from apps.engine.representation import task_json
from apps.metadata import secrets

MAX_INT = 2**31 - 1  # count and timeout are Java ints
_ABSENT = ("", "none", "null", "undefined")

_BATCH = re.compile(r"^/api/tasks/poll/batch/([^/]+)$")
_SINGLE = re.compile(r"^/api/tasks/poll/([^/]+)$")

JSON = "application/json"
TEXT = "text/plain"


def _q(query: dict, name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    value = values[0]
    return None if value.strip().lower() in _ABSENT else value


def _qint(query: dict, name: str, default: int) -> int:
    value = _q(query, name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise InvalidInput(f"Invalid integer value for query parameter '{name}': {value}") from None
    if not -MAX_INT - 1 <= number <= MAX_INT:
        raise InvalidInput(f"Invalid integer value for query parameter '{name}': {value} (out of range)")
    return number


def _dumps(data) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def _json_object(body: bytes, what: str) -> dict:
    """The body as a JSON object through ``parsers.parse_json`` (the one request-parsing
    gate); InvalidInput (400) when empty, not JSON or not an object; 413 when too big."""
    data = parse_json(body)
    if data is None:
        raise InvalidInput(f"{what} body is required")
    if not isinstance(data, dict):
        raise InvalidInput(f"{what} must be a JSON object")
    return data


# --- the calls (synchronous; one transaction each) ---------------------------------------------

def poll_params(query: dict, single: bool) -> tuple[str | None, str | None, int, int]:
    """``(workerid, domain, count, timeout ms)`` of a poll (``query`` maps each parameter
    to its values); InvalidInput for a parameter holding a NUL character, a workerid or
    domain longer than its column, an integer that is not one, or a ``count`` below 1
    (``queue.poll`` refuses a timeout past ``MAX_LONG_POLL_MS``)."""
    for name, values in query.items():
        for value in values:
            check_text(value, f"Query parameter '{name}'")
    count = 1 if single else _qint(query, "count", 1)
    if count < 1:
        raise InvalidInput(f"Invalid value for query parameter 'count': {count} (must be at least 1)")
    timeout_ms = 100 if single else max(0, _qint(query, "timeout", 100))
    worker_id, domain = _q(query, "workerid"), _q(query, "domain")
    # both are stored (PollData, the claimed task): longer than their columns is a 400
    check_length(worker_id, "engine.PollData.worker_id", "workerid")
    check_length(domain, "engine.PollData.domain", "domain")
    return worker_id, domain, count, timeout_ms


async def poll_answer(task_type: str, query: dict, single: bool, *,
                      in_caller_thread: bool = False) -> tuple[int, str, bytes]:
    """``GET /api/tasks/poll/batch/{taskType}`` (``[Task]``) or ``/api/tasks/poll/{taskType}``
    (a Task or 204) through ``queue.poll``, the one poll; ``query`` maps each query
    parameter to its list of values; each ``${workflow.secrets.NAME}`` of a task's
    inputData is replaced by its value (``executor.tasks_for_worker``). Conductor's error
    body on failure. Both entry points
    answer with it: the fast path below and, with ``in_caller_thread``, the Django views."""
    try:
        check_text(task_type, "The task type")
        check_length(task_type, "engine.PollData.queue_name", "taskType")
        worker_id, domain, count, timeout_ms = poll_params(query, single)
        tasks = await queue.poll(task_type=task_type, worker_id=worker_id, domain=domain, count=count,
                                      timeout_ms=timeout_ms, in_caller_thread=in_caller_thread)
        if any(secrets.references(t.input_data) for t in tasks):
            hand_out = _for_worker_in_caller if in_caller_thread else _for_worker_in_pool
            tasks = await hand_out(tasks)
    except Exception as exc:  # noqa: BLE001 - rendered as Conductor's ErrorResponse
        status, body = logged_body_for_exception(exc)
        return status, JSON, _dumps(body)
    if single:
        return (200, JSON, _dumps(task_json(tasks[0]))) if tasks else (204, TEXT, b"")
    return 200, JSON, _dumps([task_json(t) for t in tasks])


def update_call(body: bytes, v2: bool) -> tuple[int, str, bytes]:
    """``POST /api/tasks`` (the task id as text) or ``/update-v2`` (the same worker's next
    task of that type and domain, already IN_PROGRESS, its secrets put in as a poll puts
    them, or 204)."""
    result = _task_result(body)
    if _external(result, body):
        result = payloads.internalize_task_result(result)
    return update_answer(result, v2)


def _task_result(body: bytes) -> dict:
    """The TaskResult of an update's body, checked (InvalidInput naming the field)."""
    result = _json_object(body, "TaskResult")
    check_task_result(result)
    return result


def _external(result: dict, body: bytes) -> bool:
    """Whether the output must be read back from external payload storage (an
    externalized output; a body this small cannot pass the max threshold)."""
    return bool(result.get("externalOutputPayloadStoragePath")) or len(body) > payloads.max_payload_bytes("TASK_OUTPUT")


def update_answer(result: dict, v2: bool) -> tuple[int, str, bytes]:
    """``update_call`` once the TaskResult is parsed, checked and internalized: one
    engine service (its own transaction, or a savepoint of a group commit's)."""
    if not v2:
        executor.task_update(task_result=result)
        return 200, TEXT, (result.get("taskId") or "").encode()
    _task, nxt = executor.task_update_and_claim(task_result=result)  # one transaction
    return _next_task_answer(nxt)


def _next_task_answer(nxt) -> tuple[int, str, bytes]:
    """update-v2's answer: the worker's next task (its secrets put in) or 204."""
    given = executor.tasks_for_worker([nxt]) if nxt is not None else []
    if not given:
        return 204, TEXT, b""
    return 200, JSON, _dumps(task_json(given[0]))


def _grouped_update(result: dict, v2: bool, by: str):
    """``update_answer`` in a committer thread (``apps.engine.groupcommit``), attributed
    to ``by``, with the evaluations its decides asked for, which the caller runs after
    the batch's COMMIT (``executor.run_handed_back``): ``(answer, evaluations)``. In a
    fused batch, update-v2's claim of the next task waits for the batch's writes: a
    ``groupcommit.Later`` that makes the same answer."""
    with history.acting(by), executor.evaluations_handed_back() as handed:
        if v2 and groupcommit.fusing():
            # data: [updated task, TaskResult, next task (set by _claim_together)]
            data = [executor.task_update(task_result=result), result, None]
            return groupcommit.Later(lambda: (_next_task_answer(data[2]), handed), _claim_together, data)
        answer = update_answer(result, v2)
    return answer, handed


def _claim_together(laters: list) -> None:
    """The next tasks of a fused batch's update-v2 calls, claimed together (one claim per
    queue: ``executor.claim_after_updates``), each put in its Later's data."""
    claimed = executor.claim_after_updates([(later.data[0], later.data[1]) for later in laters])
    for later, nxt in zip(laters, claimed):
        later.data[2] = nxt


def _run_handed_back(requests: list) -> None:
    try:
        executor.run_handed_back(requests)
    finally:
        close_old_connections()


_handed_back_in_pool = sync_to_async(_run_handed_back, thread_sensitive=False)


async def update_grouped(body: bytes, path: str, principal=None) -> tuple[int, str, bytes]:
    """``POST /api/tasks`` or ``/update-v2`` through a group commit: the body parsed on
    the event loop, the update executed by the committer of its workflow in the batch's
    transaction and answered once that COMMIT returned (``apps.engine.groupcommit``);
    the scripts it asked for then run in a pool thread before the answer, as
    ``update_call`` runs them. An output to read back from external storage goes through
    ``update_call`` in a pool thread instead. Conductor's error body on failure."""
    v2 = path.endswith("update-v2")
    try:
        result = _task_result(body)
        if _external(result, body):
            return await _run(_acting(principal, path, update_call), body, v2)
        key = result.get("workflowInstanceId")
        answer, handed = await groupcommit.submit(_grouped_update, result, v2, _actor(principal),
                                                  key=key if isinstance(key, str) else None)
        if handed:
            await _handed_back_in_pool(handed)
        return answer
    except Exception as exc:  # noqa: BLE001 - rendered as Conductor's ErrorResponse
        status, body = logged_body_for_exception(exc)
        return status, JSON, _dumps(body)


def _tasks_for_worker_in_pool(tasks: list) -> list:
    """``executor.tasks_for_worker`` in a pool thread, its connection closed afterwards."""
    try:
        return executor.tasks_for_worker(tasks)
    finally:
        close_old_connections()


# the secrets of polled tasks put in (only when a task references one): apps.metadata.secrets
_for_worker_in_pool = sync_to_async(_tasks_for_worker_in_pool, thread_sensitive=False)
_for_worker_in_caller = sync_to_async(executor.tasks_for_worker, thread_sensitive=True)


def start_call(body: bytes, principal=None) -> tuple[int, str, bytes]:
    """``POST /api/workflow`` with a StartWorkflowRequest for ``principal`` (None: auth is
    off): the workflow id as text."""
    from apps.api.views.workflow import start_from_request, validate_start_request

    req = _json_object(body, "StartWorkflowRequest")
    validate_start_request(req)
    return 200, TEXT, start_from_request(req, principal=principal).encode()


_START = "/api/workflow"


def _plan(body: bytes, principal):
    """The ``executor.StartPlan`` of a ``POST /api/workflow`` body (a pool thread: the
    definition's look-up, the input schema, external payloads); its connection closed
    afterwards."""
    from apps.api.views.workflow import plan_from_request, validate_start_request

    try:
        req = _json_object(body, "StartWorkflowRequest")
        validate_start_request(req)
        return plan_from_request(req, principal=principal)
    finally:
        close_old_connections()


_plan_in_pool = sync_to_async(_plan, thread_sensitive=False)


def _grouped_start(plan, principal, audited: bool):
    """``executor.start_planned`` in a committer thread (``apps.engine.groupcommit``),
    attributed to ``principal``, with its audit row written in the same transaction
    (``audit.record_with_change``): ``(workflow id, evaluations)``, the evaluations its
    decide asked for, which the caller runs after the batch's COMMIT."""
    with history.acting(_actor(principal)), executor.evaluations_handed_back() as handed:
        if audited:
            audit.record_with_change(principal, "POST", _START)
        workflow_id = executor.start_planned(plan)
    return workflow_id, handed


def _record_refusal(principal, path: str, status: int, message: str) -> None:
    try:
        audit.record_api_write(audit.AuditedCall(principal, "POST", path, {}, route=lambda: path), status, message)
    finally:
        close_old_connections()


_refusal_in_pool = sync_to_async(_record_refusal, thread_sensitive=False)


async def start_grouped(body: bytes, principal=None) -> tuple[int, str, bytes]:
    """``POST /api/workflow`` through a group commit: the request checked and planned in a
    pool thread (``_plan``), then inserted and decided by a committer in a batch's
    transaction with other starts and task updates (``apps.engine.groupcommit``),
    answered with the workflow id once that COMMIT returned; the scripts its decide asked
    for run in a pool thread before the answer, as ``start_call`` runs them. A refused
    start is audited as ``_acting`` audits it. Conductor's error body on failure."""
    audited = audit.is_audited("POST", _START)
    try:
        plan = await _plan_in_pool(body, principal)
        workflow_id, handed = await groupcommit.submit(_grouped_start, plan, principal, audited,
                                                       key=plan.workflow_id, fresh=True)
        if handed:
            await _handed_back_in_pool(handed)
        return 200, TEXT, workflow_id.encode()
    except Exception as exc:  # noqa: BLE001 - rendered as Conductor's ErrorResponse
        status, error = logged_body_for_exception(exc)
        if audited:
            await _refusal_in_pool(principal, _START, status, str(error.get("message") or ""))
        return status, JSON, _dumps(error)


def _guarded(fn, *args):
    """Run a call in a pool thread: Conductor's error body on failure; the thread's
    database connection is closed or returned to its pool afterwards, as Django does at
    the end of a request."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - rendered as Conductor's ErrorResponse
        status, body = logged_body_for_exception(exc)
        return status, JSON, _dumps(body)
    finally:
        close_old_connections()


_run = sync_to_async(_guarded, thread_sensitive=False)


# --- OpenAPI description (merged into /api-docs by apps.api.openapi) -----------------------------

def _op(operation_id: str, summary: str, *, tag: str = "task-resource", parameters=(), body: str | None = None,
        responses: dict) -> dict:
    """One OpenAPI operation (``x-fast-path`` keeps apps.api.openapi from redescribing it)."""
    op = {"operationId": operation_id, "summary": summary, "tags": [tag],
          "parameters": list(parameters), "responses": responses, "x-fast-path": True}
    if body:
        op["requestBody"] = {"required": True, "content": {JSON: {"schema": {"$ref": f"#/components/schemas/{body}"}}}}
    return op


def _query(name: str, schema: dict, description: str) -> dict:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


_TASK_TYPE = {"name": "tasktype", "in": "path", "required": True, "schema": {"type": "string"},
              "description": "The task definition name (a SIMPLE task's taskType)."}
_WORKER = [_query("workerid", {"type": "string"}, "The polling worker's id, recorded as the task's workerId."),
           _query("domain", {"type": "string"}, "The task domain to poll (taskToDomain).")]
_TASK = {"$ref": "#/components/schemas/Task"}
_TEXT_ID = {"content": {TEXT: {"schema": {"type": "string"}}}}

# The operations ``worker_fast_path`` answers, in OpenAPI 3 terms (paths with /api).
OPENAPI_OPERATIONS = {
    "/api/tasks/poll/batch/{tasktype}": {"get": _op(
        "batchPoll", "Claim up to count tasks of a type, waiting up to timeout ms (at most 5000) for one",
        parameters=[_TASK_TYPE, *_WORKER,
                    _query("count", {"type": "integer", "format": "int32", "default": 1}, "Most tasks to claim."),
                    _query("timeout", {"type": "integer", "format": "int32", "default": 100},
                           "Long-poll wait in milliseconds (at most 5000).")],
        responses={"200": {"description": "The claimed tasks, IN_PROGRESS (possibly none)",
                           "content": {JSON: {"schema": {"type": "array", "items": _TASK}}}}})},
    "/api/tasks/poll/{tasktype}": {"get": _op(
        "poll", "Claim one task of a type (waits up to 100 ms)", parameters=[_TASK_TYPE, *_WORKER],
        responses={"200": {"description": "The claimed task, IN_PROGRESS", "content": {JSON: {"schema": _TASK}}},
                   "204": {"description": "No task to claim"}})},
    "/api/tasks": {"post": _op(
        "updateTask", "Report a task's result (status, output, logs, callbackAfterSeconds)", body="TaskResult",
        responses={"200": {"description": "The task id", **_TEXT_ID}})},
    "/api/tasks/update-v2": {"post": _op(
        "updateTaskV2", "Report a task's result and claim the same worker's next task of that type and domain",
        body="TaskResult",
        responses={"200": {"description": "The next task, IN_PROGRESS", "content": {JSON: {"schema": _TASK}}},
                   "204": {"description": "No next task"}})},
    "/api/workflow": {"post": _op(
        "startWorkflow", "Start a workflow from a StartWorkflowRequest", tag="workflow-resource", body="StartWorkflowRequest",
        responses={"200": {"description": "The new workflow id", **_TEXT_ID}})},
}


# --- ASGI ------------------------------------------------------------------------------------------

async def _read_body(receive) -> bytes:
    """The whole request body; PayloadTooLarge (413) as soon as it passes the limit."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        check_body_size(size)
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _respond(send, status: int, content_type: str, body: bytes) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if status != 204:
        headers.append((b"content-type", content_type.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body if status != 204 else b""})


def _authorize_guarded(method: str, path: str, token: str | None):
    """``auth.authorize`` in a pool thread: ``(None, principal)`` when allowed (None
    when auth is off), else ``(error answer, None)``."""
    try:
        return None, auth.authorize(method, path, token)
    except Exception as exc:  # noqa: BLE001 - rendered as Conductor's ErrorResponse
        status, body = logged_body_for_exception(exc)
        return (status, JSON, _dumps(body)), None
    finally:
        close_old_connections()


def _actor(principal) -> str:
    """Who a change is attributed to in the history: ``app:<application>``, or ``api``
    when auth is off."""
    return f"app:{principal.name}" if principal else "api"


def _acting(principal, path: str, fn):
    """``fn`` (a POST call answering ``(status, type, body)``) run with its changes
    attributed to the caller in the execution history (``app:<application>``, or ``api``
    when auth is off), and audited as Django's writes are (``apps.api.audit``)."""
    def call(*args):
        message = ""
        audited = audit.is_audited("POST", path)
        recording = audit.AuditedCall(principal, "POST", path, {}, route=lambda: path) if audited else nullcontext()
        try:
            with history.acting(_actor(principal)), recording:
                answer = fn(*args)
        except Exception as exc:  # noqa: BLE001 - rendered as Conductor's ErrorResponse
            status, body = logged_body_for_exception(exc)
            answer, message = (status, JSON, _dumps(body)), str(body.get("message") or "")
        if audited:
            audit.record_api_write(recording, answer[0], message)
        return answer
    return call


_authorize_in_pool = sync_to_async(_authorize_guarded, thread_sensitive=False)


async def _run_authorize(method: str, path: str, token: str | None):
    """``_authorize_guarded``; in a pool thread only when API auth is on (it may read the
    database), answered at once when it is off."""
    if not auth.enabled():
        return None, None
    return await _authorize_in_pool(method, path, token)


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def _django(django_app, scope, receive, send) -> None:
    """Django's ASGI handler, never cancelled in the middle of its own wait. Its
    ``ASGIHandler.handle`` waits on two tasks of its own: the view, and a listener that
    raises RequestAborted once ``http.disconnect`` arrives. Cancelled there (uvicorn cancels
    the applications still running when its graceful-shutdown time is up; daphne, before
    it, also one that outlived its gone client), it leaves both behind; the connection's disconnect then
    reaches the orphaned listener, and its RequestAborted was logged as "Task exception was
    never retrieved". So on a cancel Django is left to end by itself for up to
    ``lifecycle.STOP_GRACE_SECONDS`` (a stopping server answers waiting requests at once,
    and the answer still reaches the client); past that it is handed an
    ``http.disconnect``, which it handles as a client going away (cancels its view,
    retrieves its listener's RequestAborted). Another cancel meanwhile cancels Django's
    handler for real. The cancel is raised once Django has ended."""
    gone = asyncio.Event()

    async def receive_until_gone():
        if gone.is_set():
            return {"type": "http.disconnect"}
        message = asyncio.ensure_future(receive())
        stop = asyncio.ensure_future(gone.wait())
        try:
            await asyncio.wait((message, stop), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            message.cancel()
            raise
        finally:
            stop.cancel()
        if message.done():
            return message.result()
        message.cancel()
        return {"type": "http.disconnect"}

    handler = asyncio.ensure_future(django_app(scope, receive_until_gone, send))
    try:
        await asyncio.shield(handler)
    except asyncio.CancelledError:
        if not handler.done():
            await _wind_down(handler, gone)
        raise


async def _wind_down(handler: asyncio.Future, gone: asyncio.Event) -> None:
    """Wait for Django's handler to end after a cancel (see ``_django``)."""
    try:
        done, _ = await asyncio.wait((handler,), timeout=lifecycle.STOP_GRACE_SECONDS)
        if not done:
            gone.set()
            await asyncio.wait((handler,))
    except asyncio.CancelledError:
        handler.cancel()


def worker_fast_path(django_app):
    """Wrap the Django ASGI app: the worker protocol and workflow start are answered
    here; everything else goes to ``django_app``."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return await django_app(scope, receive, send)
        path, method = scope["path"], scope["method"]
        if method == "GET":
            m = _BATCH.match(path) or _SINGLE.match(path)
            if m:
                refused, _by = await _run_authorize(method, path, _header(scope, b"x-authorization"))
                if refused:
                    await _respond(send, *refused)
                    return
                raw_query = scope.get("query_string", b"")
                try:
                    check_urlencoded(raw_query, "Query parameter")  # as TextGateMiddleware does
                except InvalidInput as exc:
                    status, error = logged_body_for_exception(exc)
                    await _respond(send, status, JSON, _dumps(error))
                    return
                query = parse_qs(raw_query.decode(), keep_blank_values=True)
                await _respond(send, *await poll_answer(m.group(1), query, single=m.re is _SINGLE))
                return
        elif method == "POST" and path in ("/api/tasks", "/api/tasks/update-v2", "/api/workflow"):
            refused, principal = await _run_authorize(method, path, _header(scope, b"x-authorization"))
            if refused:
                await _respond(send, *refused)
                return
            try:
                body = await _read_body(receive)
            except PayloadTooLarge as exc:
                status, error = logged_body_for_exception(exc)
                await _respond(send, status, JSON, _dumps(error))
                return
            if path == _START:
                if groupcommit.enabled():
                    await _respond(send, *await start_grouped(body, principal))
                else:
                    await _respond(send, *await _run(_acting(principal, path, start_call), body, principal))
            elif groupcommit.enabled() and not audit.is_audited(method, path):
                await _respond(send, *await update_grouped(body, path, principal))
            else:
                await _respond(send, *await _run(_acting(principal, path, update_call), body, path.endswith("update-v2")))
            return
        return await _django(django_app, scope, receive, send)

    return app
