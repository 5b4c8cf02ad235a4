"""HTTP: an async system task run by the django-q2 cluster (never inside a web request).

Input: ``http_request`` map or the same keys at top level: ``uri``, ``method``,
``headers``, ``body``, ``accept``, ``contentType``, ``connectionTimeOut`` and
``readTimeOut`` (ms). Output ``response: {body, headers, statusCode, reasonPhrase}``
(body parsed as JSON when it is JSON). 2xx -> COMPLETED (IN_PROGRESS with
``asyncComplete``); other statuses or a connection error -> FAILED with a reason naming
the status. ``${workflow.secrets.NAME}`` anywhere in the input is resolved only for the
call, and masked in what is stored (docs/secrets.md). Source: Conductor HttpTask
(docs/conductor-notes.md §5; case 29).
"""
from __future__ import annotations

import functools
import json
import ssl

import certifi
import httpx

from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType, async_complete
from apps.metadata import secrets

DEFAULT_TIMEOUT_MS = 3000  # connectionTimeOut / readTimeOut when the request gives none

@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The TLS context of every HTTP task (certifi's CA bundle, as httpx's default),
    built once per process: building it takes ~150 ms, more than most calls."""
    return ssl.create_default_context(cafile=certifi.where())


@register
class Http(TaskType):
    type_name = "HTTP"
    is_async = True

    def start(self, d, task: TaskState) -> None:
        d.act("run_system_task", task)

    def execute(self, d, task: TaskState) -> bool:
        # A job lost to a crash: hand the task to the cluster again.
        if task.status in ("SCHEDULED", "IN_PROGRESS") and not async_complete(task, d.workflow_task_of(task)) \
                and d.now >= self._deadline(d, task):
            task.update_time = d.now
            d.act("run_system_task", task)
            return True
        return False

    def due_at(self, d, task: TaskState) -> int | None:
        if async_complete(task, d.workflow_task_of(task)) and task.status == "IN_PROGRESS":
            return None
        return self._deadline(d, task)

    @staticmethod
    def _deadline(d, task: TaskState) -> int:
        """When a task not finished is handed to the cluster again: ``HTTP_REDISPATCH_MS``
        (of the decider's ``config``) after its dispatch. The running job holds the task's
        lease (``jobs.system_task_job``), so while it is alive the new job does nothing; a
        job lost with its cluster is replaced within about this time plus
        ``SYSTEM_TASK_LEASE_MS``. The interval grows with the task's age (half of it, up to
        ``HTTP_REDISPATCH_MAX_MS``), so a backlog in the broker is not multiplied by
        re-dispatches of tasks that are only waiting their turn."""
        last = max(task.update_time, task.scheduled_time)
        at_least = int(d.config.get("HTTP_REDISPATCH_MS", 5_000))
        at_most = int(d.config.get("HTTP_REDISPATCH_MAX_MS", 60_000))
        return last + min(at_most, max(at_least, (last - task.scheduled_time) // 2))

    def run_async(self, task: TaskState) -> dict:
        """Send the request outside any lock. ``${workflow.secrets.NAME}`` in the request
        (uri, headers, body...) is put in only here; the result (response, reason) has
        those values masked (``***``) before it is stored."""
        try:
            request_input, given = secrets.resolve(task.input_data,
                                                   allowed=secrets.template_names(task.workflow_task),
                                                   template=(task.workflow_task or {}).get("inputParameters"))
        except (secrets.MissingSecret, secrets.SecretUnreadable) as exc:
            return {"status": "FAILED", "reasonForIncompletion": str(exc)}
        result = self._call(task, request_input)
        return secrets.mask_result(result, given) if given else result

    def _call(self, task: TaskState, input_data: dict) -> dict:
        request = input_data.get("http_request")
        if not isinstance(request, dict):
            request = input_data
        uri = request.get("uri")
        method = request.get("method")
        if not uri:
            return {"status": "FAILED", "reasonForIncompletion":
                    "Missing HTTP URI.  See documentation for HttpTask for required input parameters"}
        if not method:
            return {"status": "FAILED", "reasonForIncompletion": "No HTTP method specified"}
        headers = {}
        for key, value in (request.get("headers") or {}).items():
            headers[key] = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        accept = request.get("accept") or "application/json"
        headers.setdefault("Accept", ", ".join(accept) if isinstance(accept, list) else str(accept))
        content_type = request.get("contentType") or "application/json"
        body = request.get("body")
        content = None
        if body is not None and str(method).upper() not in ("GET", "HEAD"):
            content = body if isinstance(body, str) and "json" not in content_type else json.dumps(body)
            headers.setdefault("Content-Type", content_type)
        timeout = httpx.Timeout(connect=int(request.get("connectionTimeOut") or DEFAULT_TIMEOUT_MS) / 1000,
                                read=int(request.get("readTimeOut") or DEFAULT_TIMEOUT_MS) / 1000,
                                write=10.0, pool=10.0)
        try:
            with httpx.Client(timeout=timeout, follow_redirects=True, verify=_tls_context()) as client:
                response = client.request(str(method).upper(), uri, headers=headers, content=content)
        except Exception as exc:  # noqa: BLE001 - any transport error fails the task
            return {"status": "FAILED", "reasonForIncompletion": f"Failed to invoke HTTP task due to: {exc!r}",
                    "outputData": {"response": str(exc)}}
        try:
            parsed = response.json() if response.content else None
        except ValueError:
            parsed = response.text
        output = {"response": {"body": parsed, "headers": response_headers(response),
                               "statusCode": response.status_code, "reasonPhrase": response.reason_phrase}}
        if 200 <= response.status_code < 300:
            return {"status": "IN_PROGRESS" if async_complete(task, task.workflow_task) else "COMPLETED",
                    "outputData": output}
        detail = response.text if response.content else "No response from the remote service"
        return {"status": "FAILED", "outputData": output,
                "reasonForIncompletion": f"HTTP {response.status_code} {response.reason_phrase}: {detail}"}


def response_headers(response) -> dict[str, list[str]]:
    """The ``response.headers`` of the task output: each header under its name as the
    server sent it (``Content-Type``, not ``content-type``: Conductor's HttpTask keeps the
    case, so ``${t.output.response.headers.Content-Type}`` works), with its values in order."""
    out: dict[str, list[str]] = {}
    for name, value in response.headers.raw:
        out.setdefault(name.decode("latin-1"), []).append(value.decode("latin-1"))
    return out
