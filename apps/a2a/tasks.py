"""What the AGENT, GET_AGENT_CARD and CANCEL_AGENT system tasks do (Conductor's
``A2AWorkers``), run by the cluster outside any lock (``apps.engine.task_types.agent``).

Each runner takes the task's input (and, for AGENT, the output of its earlier runs) and
returns a TaskResult-like dict ``{status, outputData, reasonForIncompletion?,
callbackAfterSeconds?}``.

* ``GET_AGENT_CARD``: ``agentUrl`` (a base URL or a card URL), ``headers`` -> ``agentCard``.
* ``AGENT``: ``agentUrl`` (the JSON-RPC endpoint, or a card URL resolved to the endpoint it
  advertises), the message as ``message`` (a whole A2A Message), ``parts``, or ``text`` /
  ``prompt``; ``contextId``, ``taskId`` (continue a remote task), ``headers``,
  ``historyLength``, ``metadata``; ``pollIntervalSeconds`` (5), ``maxDurationSeconds``
  (86400), ``maxPollFailures`` (30); ``pushNotification`` with ``pushBackstopPollSeconds``
  (300). The first run sends ``message/send`` (messageId ``a2a-<workflowId>:<ref>:<iteration>``,
  so a re-sent message is the same message); a reply Message completes the task (``state:
  message``); a Task in a terminal state completes (``completed``), cancels (``canceled``)
  or fails it; ``input-required``/``auth-required`` complete it with the task so the workflow
  can answer; any other state keeps it IN_PROGRESS and later runs call ``tasks/get`` every
  ``pollIntervalSeconds`` (in push mode, with ``CONDUCTOR_A2A_CALLBACK_URL`` set, the agent is
  given ``<callback>/api/a2a/callback/<taskId>`` and a token, and the poll is only a backstop).
  Output: ``state``, ``taskId``, ``contextId``, ``artifacts``, ``text``, ``agentMessage``,
  ``task``, ``pushToken``, ``a2aStartedAt``, ``a2aPollFailures``.
* ``CANCEL_AGENT``: ``agentUrl``, ``taskId``, ``headers`` -> ``task`` (``tasks/cancel``).

Only ``agentType: a2a`` (the default) is served; ``conductor`` (agents run on the embedded
agent runtime) fails terminally here.
"""
from __future__ import annotations

import time
import uuid

from django.conf import settings

from apps.a2a import client
from apps.a2a.client import INTERRUPTED_STATES, TERMINAL_STATES, A2AError, parts_text

DEFAULT_POLL_SECONDS, DEFAULT_PUSH_BACKSTOP_SECONDS = 5, 300
DEFAULT_MAX_DURATION_SECONDS, DEFAULT_MAX_POLL_FAILURES = 86400, 30
PUSH_TOKEN_TTL_MS = 24 * 3600 * 1000


def _fail(output: dict, reason: str, terminal: bool) -> dict:
    return {"status": "FAILED_WITH_TERMINAL_ERROR" if terminal else "FAILED", "outputData": output,
            "reasonForIncompletion": reason}


def _int(value, default: int) -> int:
    return max(1, int(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _not_a2a(inputs: dict) -> str | None:
    agent_type = inputs.get("agentType") or "a2a"
    if str(agent_type).lower() != "a2a":
        return f"Unsupported agentType '{agent_type}' (supported here: 'a2a')"
    return None


def task_output(task: dict) -> dict:
    """The output for a remote Task (Conductor's ``A2AResults.taskOutput``)."""
    status = task.get("status") if isinstance(task.get("status"), dict) else {}
    out = {"state": status.get("state"), "taskId": task.get("id"), "contextId": task.get("contextId"), "task": task}
    if isinstance(task.get("artifacts"), list):
        out["artifacts"] = task["artifacts"]
    text = parts_text([p for a in task.get("artifacts") or [] if isinstance(a, dict) for p in a.get("parts") or []])
    message = status.get("message") if isinstance(status.get("message"), dict) else None
    text = text or (parts_text(message.get("parts")) if message else None)
    if text is not None:
        out["text"] = text
    if message:
        out["agentMessage"] = message
    return out


def message_output(message: dict) -> dict:
    """The output for a direct Message reply (``state: message``)."""
    out = {"state": "message", "contextId": message.get("contextId"), "taskId": message.get("taskId"),
           "agentMessage": message}
    text = parts_text(message.get("parts"))
    if text is not None:
        out["text"] = text
    return out


def get_agent_card(inputs: dict, task) -> dict:
    """GET_AGENT_CARD."""
    if (reason := _not_a2a(inputs)) is not None:
        return _fail({}, reason, True)
    if not str(inputs.get("agentUrl") or "").strip():
        return _fail({}, "GET_AGENT_CARD requires 'agentUrl'", True)
    try:
        return {"status": "COMPLETED", "outputData": {"agentCard": client.agent_card(inputs["agentUrl"],
                                                                                     inputs.get("headers"))}}
    except A2AError as exc:
        return _fail({}, str(exc), exc.terminal)


def cancel_agent(inputs: dict, task) -> dict:
    """CANCEL_AGENT."""
    if (reason := _not_a2a(inputs)) is not None:
        return _fail({}, reason, True)
    for key in ("agentUrl", "taskId"):
        if not str(inputs.get(key) or "").strip():
            return _fail({}, f"CANCEL_AGENT requires '{key}'", True)
    try:
        url = client.endpoint(inputs["agentUrl"], inputs.get("headers"))
        canceled = client.call(url, "tasks/cancel", {"id": str(inputs["taskId"])}, inputs.get("headers"))
    except A2AError as exc:
        return _fail({}, f"Failed to cancel A2A task: {exc}", False)
    return {"status": "COMPLETED", "outputData": {"task": canceled}}


def _message(inputs: dict, task) -> dict:
    if isinstance(inputs.get("message"), dict) and inputs["message"]:
        message = dict(inputs["message"])
    else:
        parts = inputs.get("parts")
        if isinstance(parts, list) and parts:
            message = {"parts": parts}
        else:
            text = inputs.get("text") or inputs.get("prompt")
            if not isinstance(text, str) or not text.strip():
                raise A2AError("AGENT requires one of: message, parts, text, or prompt", terminal=True)
            message = {"parts": [{"kind": "text", "text": text}]}
    message.setdefault("role", "user")
    message.setdefault("messageId", f"a2a-{task.workflow_id}:{task.reference_task_name}:{task.iteration}")
    message.setdefault("kind", "message")
    for key in ("contextId", "taskId", "metadata"):
        if inputs.get(key) and key not in message:
            message[key] = inputs[key]
    return message


def _use_push(inputs: dict) -> bool:
    return bool(inputs.get("pushNotification")) and bool(settings.CONDUCTOR_A2A.get("CALLBACK_URL"))


def _keep_polling(output: dict, inputs: dict) -> dict:
    seconds = (_int(inputs.get("pushBackstopPollSeconds"), DEFAULT_PUSH_BACKSTOP_SECONDS) if _use_push(inputs)
               else _int(inputs.get("pollIntervalSeconds"), DEFAULT_POLL_SECONDS))
    return {"status": "IN_PROGRESS", "outputData": output, "callbackAfterSeconds": seconds}


def _task_state(output: dict, inputs: dict, remote: dict) -> dict:
    state = (remote.get("status") or {}).get("state") if isinstance(remote.get("status"), dict) else None
    if state in TERMINAL_STATES or state in INTERRUPTED_STATES:
        output.update(task_output(remote))
        if state in INTERRUPTED_STATES or state == "completed":
            return {"status": "COMPLETED", "outputData": output}
        text = output.get("text")
        suffix = f": {text}" if text else ""
        if state == "canceled":
            return {"status": "CANCELED", "outputData": output,
                    "reasonForIncompletion": f"Remote agent task was canceled{suffix}"}
        return _fail(output, f"Remote agent task ended in state '{state}'{suffix}", False)
    output.update({"state": state, "taskId": remote.get("id"), "contextId": remote.get("contextId")})
    return _keep_polling(output, inputs)


def agent(inputs: dict, task) -> dict:
    """AGENT: start the remote call, or poll it (the output of earlier runs has ``taskId``)."""
    output = dict(task.output_data or {})
    if (reason := _not_a2a(inputs)) is not None:
        return _fail(output, reason, True)
    if not str(inputs.get("agentUrl") or "").strip():
        return _fail(output, "AGENT requires 'agentUrl'", True)
    headers = inputs.get("headers")
    try:
        url = client.endpoint(inputs["agentUrl"], headers)
    except A2AError as exc:
        return _fail(output, str(exc) if exc.terminal else f"Failed to resolve A2A endpoint: {exc}", exc.terminal)
    now = int(time.time() * 1000)
    output.setdefault("a2aStartedAt", now)
    remote_id = output.get("taskId")
    if not remote_id:
        try:
            message = _message(inputs, task)
            params: dict = {"message": message}
            # not blocking: the agent answers at once and later runs poll, so no cluster
            # worker waits on a slow agent (Conductor leaves the agent's default, blocking)
            configuration: dict = {"blocking": False}
            if isinstance(inputs.get("historyLength"), int):
                configuration["historyLength"] = inputs["historyLength"]
            if _use_push(inputs):
                token = f"{uuid.uuid4()}:{now + PUSH_TOKEN_TTL_MS}"
                output["pushToken"] = token
                callback = settings.CONDUCTOR_A2A["CALLBACK_URL"].rstrip("/")
                configuration["pushNotificationConfig"] = {
                    "url": f"{callback}/api/a2a/callback/{task.task_id}", "token": token,
                    "authentication": {"schemes": ["Bearer"], "credentials": token}}
            params["configuration"] = configuration
            result = client.call(url, "message/send", params, headers)
        except A2AError as exc:
            return _fail(output, str(exc) if exc.terminal else f"Failed to call agent: {exc}", exc.terminal)
        if result.get("kind") == "message" or ("parts" in result and "status" not in result):
            output.update(message_output(result))
            return {"status": "COMPLETED", "outputData": output}
        return _task_state(output, inputs, result)
    if now - int(output.get("a2aStartedAt") or now) > _int(inputs.get("maxDurationSeconds"),
                                                           DEFAULT_MAX_DURATION_SECONDS) * 1000:
        _cancel_quietly(url, remote_id, headers)
        return _fail(output, f"AGENT exceeded max duration of {_int(inputs.get('maxDurationSeconds'), DEFAULT_MAX_DURATION_SECONDS)}s "
                             "without the remote agent reaching a terminal state", True)
    params = {"id": str(remote_id)}
    if isinstance(inputs.get("historyLength"), int):
        params["historyLength"] = inputs["historyLength"]
    try:
        remote = client.call(url, "tasks/get", params, headers)
    except A2AError as exc:
        failures = int(output.get("a2aPollFailures") or 0) + 1
        output["a2aPollFailures"] = failures
        if exc.terminal or failures >= _int(inputs.get("maxPollFailures"), DEFAULT_MAX_POLL_FAILURES):
            _cancel_quietly(url, remote_id, headers)
            return _fail(output, f"A2A agent unreachable after {failures} consecutive poll failures: {exc}", True)
        return _keep_polling(output, inputs)
    output["a2aPollFailures"] = 0
    return _task_state(output, inputs, remote)


def _cancel_quietly(url: str, remote_id, headers) -> None:
    try:
        client.call(url, "tasks/cancel", {"id": str(remote_id)}, headers)
    except A2AError:
        pass  # best effort, as Conductor's


def cancel_remote(task) -> None:
    """The workflow ended while an AGENT task was waiting: cancel its remote task (best effort)."""
    remote_id = (task.output_data or {}).get("taskId")
    inputs = task.input_data or {}
    if remote_id and inputs.get("agentUrl") and not _not_a2a(inputs):
        try:
            _cancel_quietly(client.endpoint(inputs["agentUrl"], inputs.get("headers")), remote_id, inputs.get("headers"))
        except A2AError:
            pass


RUNNERS = {"AGENT": agent, "GET_AGENT_CARD": get_agent_card, "CANCEL_AGENT": cancel_agent}


def run(task_type: str, task) -> dict:
    """Run one of the A2A task types for ``task`` (a TaskState)."""
    return RUNNERS[task_type](task.input_data or {}, task)


def cancel_remote_job(task_id: str) -> None:
    """Cluster job (``effects.run_deferred``, action ``cancel_remote_agent``): cancel the
    remote task of an AGENT task whose workflow ended."""
    from apps.engine import store
    from apps.engine.models import TaskExecution

    row = TaskExecution.objects.filter(pk=task_id).values(*store.TASK_FIELDS).first()
    if row is not None:
        cancel_remote(store.TaskState(**row))
