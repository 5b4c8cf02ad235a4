"""The A2A endpoints under ``/api/a2a`` (Conductor's A2AServerResource).

* ``GET /api/a2a/workflow``: the exposed agents ``[{name, url, agentCard}]`` (not in the spec);
* ``GET /api/a2a/workflow/{name}/.well-known/agent-card.json`` (and ``agent.json``): the
  AgentCard, 404 for a workflow that is not exposed;
* ``POST /api/a2a/workflow/{name}`` (and ``.../rpc``): JSON-RPC 2.0 ``message/send`` (alias
  ``tasks/send``), ``tasks/get``, ``tasks/cancel`` and ``message/stream`` (alias
  ``tasks/sendSubscribe``), which answers ``text/event-stream``: the Task, then a
  ``status-update`` per state change, ``artifact-update`` events and a ``final``
  status-update when the execution ends or waits for input (or after
  ``STREAM_MAX_DURATION_SECONDS``). Errors are JSON-RPC errors with HTTP 200, as Conductor's.

Roles as any /api path: GETs read-only, POSTs operator (API keys on).
"""
from __future__ import annotations

import asyncio
import json
import time

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from rest_framework.response import Response

from apps.a2a import server
from apps.api.views.base import ConductorApi


def _base_url(request) -> str:
    return f"{request.scheme}://{request.get_host()}"


def _rpc_error(rpc_id, code: int, message: str) -> JsonResponse:
    return JsonResponse({"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message}})


def _task_in_thread(name: str, workflow_id: str) -> dict:
    """``server.get_task`` from a stream's worker thread (its own connection, closed after)."""
    close_old_connections()
    try:
        return server.get_task(name, workflow_id)
    finally:
        close_old_connections()


class AgentsApi(ConductorApi):
    """``GET /api/a2a/workflow``."""

    def get(self, request):
        from apps.metadata.services import workflow_def_latest_list

        names = sorted(d["name"] for d in workflow_def_latest_list() if server.exposes(d))
        base = _base_url(request)
        return Response([{"name": n, "url": server.agent_url(n, base),
                          "agentCard": server.agent_url(n, base) + "/.well-known/agent-card.json"}
                         for n in names])


class AgentCardApi(ConductorApi):
    """``GET /api/a2a/workflow/{name}/.well-known/agent-card.json``."""

    def get(self, request, name):
        try:
            return Response(server.agent_card(name, _base_url(request)))
        except server.RpcError:
            return HttpResponse(status=404)


class JsonRpcApi(ConductorApi):
    """``POST /api/a2a/workflow/{name}``: one JSON-RPC 2.0 request."""

    def post(self, request, name):
        try:
            body = json.loads(request.body or b"null")
        except ValueError:
            return _rpc_error(None, -32700, "Parse error")
        rpc_id = body.get("id") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(body.get("method"), str):
            return _rpc_error(rpc_id, -32600, "Invalid Request: missing 'method'")
        method, params = body["method"], body.get("params")
        params = params if isinstance(params, dict) else {}
        try:
            if method in ("message/stream", "tasks/sendSubscribe"):
                server.require_exposed(name)
                if not isinstance(params.get("message"), dict):
                    raise server.RpcError(-32602, "message/send requires params.message")
                return self._stream(name, params["message"], rpc_id)
            if method in ("message/send", "tasks/send"):
                if not isinstance(params.get("message"), dict):
                    server.require_exposed(name)
                    raise server.RpcError(-32602, "message/send requires params.message")
                result = server.send_message(name, params["message"])
            elif method in ("tasks/get", "tasks/cancel"):
                if params.get("id") in (None, ""):
                    server.require_exposed(name)
                    raise server.RpcError(-32602, "requires params.id (the task/workflow id)")
                fn = server.get_task if method == "tasks/get" else server.cancel_task
                result = fn(name, params["id"])
            else:
                return _rpc_error(rpc_id, -32601, f"Method not found: {method}")
        except server.RpcError as exc:
            return _rpc_error(rpc_id, exc.code, exc.message)
        return JsonResponse({"jsonrpc": "2.0", "id": rpc_id, "result": result})

    @staticmethod
    def _stream(name: str, message: dict, rpc_id) -> StreamingHttpResponse:
        task = server.send_message(name, message)  # starts or resumes before the stream opens
        conf = server.conf()

        def frame(result: dict) -> bytes:
            return f"data: {json.dumps({'jsonrpc': '2.0', 'id': rpc_id, 'result': result})}\n\n".encode()

        def status_update(t: dict, final: bool) -> dict:
            return {"kind": "status-update", "taskId": t["id"], "contextId": t["contextId"], "status": t["status"],
                    "final": final}

        # an async generator: under ASGI a synchronous one is read to its end before the
        # first byte is sent (Django's StreamingHttpResponse), so nothing would stream
        read = sync_to_async(_task_in_thread, thread_sensitive=False)

        async def events():
            yield frame(task)
            current, last = task, task["status"]["state"]
            deadline = time.monotonic() + float(conf["STREAM_MAX_DURATION_SECONDS"])
            while not server.is_stream_final(current["status"]["state"]) and time.monotonic() < deadline:
                await asyncio.sleep(int(conf["STREAM_POLL_INTERVAL_MS"]) / 1000)
                current = await read(name, task["id"])
                state = current["status"]["state"]
                if state != last and not server.is_stream_final(state):
                    yield frame(status_update(current, False))
                    last = state
            for artifact in current.get("artifacts") or []:
                yield frame({"kind": "artifact-update", "taskId": current["id"], "contextId": current["contextId"],
                             "artifact": artifact})
            yield frame(status_update(current, True))

        response = StreamingHttpResponse(events(), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        return response


class PushCallbackApi(ConductorApi):
    """``POST /api/a2a/callback/{taskId}``: a remote agent's push notification for an AGENT
    task in push mode (Conductor's A2ACallbackResource). The token (``Authorization: Bearer``,
    else ``X-Conductor-A2A-Token``) must equal the task's ``pushToken`` (compared in constant
    time) and be unexpired, else 403; an unknown task or one of another type 404; a task no
    longer IN_PROGRESS 200 and nothing. Otherwise the task is handed to the cluster at once,
    which reads the remote task (``tasks/get``) as a poll does: the callback itself calls out
    to nothing. No API key: the token is the credential."""

    def post(self, request, task_id):
        import hmac

        from apps.core.clock import now_ms
        from apps.engine import jobqueue
        from apps.engine.models import TaskExecution

        auth = request.headers.get("Authorization") or ""
        token = auth[7:].strip() if auth.startswith("Bearer ") else (request.headers.get("X-Conductor-A2A-Token") or "").strip()
        row = TaskExecution.objects.filter(pk=task_id).values("task_type", "status", "output_data").first()
        if row is None or row["task_type"] != "AGENT":
            return HttpResponse(status=404)
        stored = str((row["output_data"] or {}).get("pushToken") or "")
        if not stored or not token or not hmac.compare_digest(stored.encode(), token.encode()):
            return HttpResponse(status=403)
        expiry = stored.rsplit(":", 1)[-1]
        if expiry.isdigit() and now_ms() > int(expiry):
            return HttpResponse(status=403)
        if row["status"] == "IN_PROGRESS":
            jobqueue.enqueue("apps.engine.jobs.system_task_job", task_id, task_name=f"system-task-{task_id}")
        return HttpResponse(status=200)
