"""Workflows served as A2A agents (Conductor's ``A2AWorkflowAgent``, A2A protocol 0.3).

One exposed workflow is one agent. A workflow is exposed when ``CONDUCTOR_A2A["EXPOSE_ALL"]``
is on, when its name is in ``CONDUCTOR_A2A["EXPOSED_WORKFLOWS"]``, or when its latest
WorkflowDef's ``metadata`` has ``a2a.enabled`` true. The A2A task of a call is the workflow
execution: its id is the workflowId, its ``contextId`` the execution's correlationId (``context_id``).

* ``message/send`` starts the latest version with the message's data parts merged into the
  input plus ``_a2a_text``, ``_a2a_message_id`` and ``_a2a_context_id``; the messageId is the
  idempotency key (``<workflow>:<messageId>``, RETURN_EXISTING), so a retried send returns
  the same execution. A message carrying a ``taskId`` resumes that execution: the HUMAN or
  WAIT task it waits on is completed with the message as its output.
* States: COMPLETED -> ``completed`` (the output as a ``data`` artifact ``workflow-output``),
  FAILED/TIMED_OUT -> ``failed``, TERMINATED -> ``canceled``, PAUSED -> ``working``, RUNNING ->
  ``input-required`` while a HUMAN/WAIT task is pending, else ``working``.
* ``tasks/cancel`` terminates (``Canceled via A2A tasks/cancel``). An execution of another
  workflow is "not found" to this agent.
"""
from __future__ import annotations

import uuid

from django.conf import settings

from apps.a2a.client import INTERRUPTED_STATES, TERMINAL_STATES, parts_text
from apps.core.errors import ConductorError, NotFound
from apps.engine import executor, selectors
from apps.engine.state import WorkflowState
from apps.metadata.services import workflow_def_row

INPUT_TEXT, INPUT_MESSAGE_ID, INPUT_CONTEXT_ID = "_a2a_text", "_a2a_message_id", "_a2a_context_id"
BASE_PATH = "/api/a2a/workflow"


class RpcError(Exception):
    """A JSON-RPC error ``{code, message}`` (-32001 task/agent not found, -32602 invalid
    params, -32601 method not found, -32600 invalid request)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def conf() -> dict:
    """``settings.CONDUCTOR_A2A``."""
    return settings.CONDUCTOR_A2A


def exposes(definition: dict) -> bool:
    """Whether the WorkflowDef ``definition`` (a latest version) is served as an agent."""
    flag = (definition.get("metadata") or {}).get("a2a.enabled")
    return bool(conf()["EXPOSE_ALL"] or definition.get("name") in conf()["EXPOSED_WORKFLOWS"] or flag is True
                or (isinstance(flag, str) and flag.lower() == "true"))


def exposed_definition(name: str) -> dict | None:
    """The latest WorkflowDef of ``name`` when it is exposed as an agent, else None."""
    row = workflow_def_row(name=name) if name else None
    return row.definition if row is not None and exposes(row.definition) else None


def require_exposed(name: str) -> dict:
    definition = exposed_definition(name)
    if definition is None:
        raise RpcError(-32001, f"No A2A agent exposed for workflow: {name}")
    return definition


def agent_url(name: str, base_url: str) -> str:
    """The agent's JSON-RPC endpoint: ``<base>/api/a2a/workflow/<name>``."""
    return f"{(conf()['PUBLIC_URL'] or base_url).rstrip('/')}{BASE_PATH}/{name}"


def agent_card(name: str, base_url: str) -> dict:
    """The AgentCard (protocol 0.3.0, JSONRPC, streaming) of an exposed workflow. Raises RpcError."""
    definition = require_exposed(name)
    description = definition.get("description") or f"Conductor workflow '{name}' exposed as an A2A agent"
    tags = (definition.get("metadata") or {}).get("a2a.tags")
    modes = ["text/plain", "application/json"]
    return {"name": name, "description": description, "url": agent_url(name, base_url),
            "version": str(definition.get("version", 1)), "protocolVersion": "0.3.0",
            "preferredTransport": "JSONRPC", "defaultInputModes": modes, "defaultOutputModes": modes,
            "capabilities": {"streaming": True, "pushNotifications": False},
            "provider": {"organization": conf()["PROVIDER_ORGANIZATION"],
                         "url": (conf()["PUBLIC_URL"] or base_url).rstrip("/")},
            "skills": [{"id": name, "name": name, "description": description,
                        "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
                        "inputModes": modes, "outputModes": modes}]}


def _input(message: dict) -> dict:
    data: dict = {}
    for part in message.get("parts") or []:
        if isinstance(part, dict) and isinstance(part.get("data"), dict):
            data.update(part["data"])
    data.update({INPUT_TEXT: parts_text(message.get("parts")), INPUT_MESSAGE_ID: message.get("messageId"),
                 INPUT_CONTEXT_ID: message.get("contextId")})
    return data


def _blocking(wf: WorkflowState):
    return next((t for t in wf.tasks if t.task_type in ("HUMAN", "WAIT") and not t.terminal), None)


def _state(wf: WorkflowState) -> str:
    return {"COMPLETED": "completed", "FAILED": "failed", "TIMED_OUT": "failed", "TERMINATED": "canceled",
            "PAUSED": "working"}.get(wf.status) or ("input-required" if _blocking(wf) else "working")


def _agent_message(text: str, wf: WorkflowState) -> dict:
    return {"kind": "message", "role": "agent", "messageId": f"{wf.workflow_id}:{wf.status}",
            "parts": [{"kind": "text", "text": text}], "taskId": wf.workflow_id, "contextId": context_id(wf)}


def context_id(wf: WorkflowState) -> str:
    """The A2A contextId of an execution: its correlationId (the message's contextId, or a
    new UUID when the message had none), else its workflowId (an execution not started
    through A2A): the protocol requires one."""
    return wf.correlation_id or wf.workflow_id


def task_json(wf: WorkflowState) -> dict:
    """The A2A Task of an execution (``kind: task``)."""
    state = _state(wf)
    status: dict = {"state": state}
    if state == "failed":
        status["message"] = _agent_message(wf.reason_for_incompletion or f"Workflow ended in state {wf.status}", wf)
    elif state == "input-required":
        status["message"] = _agent_message("Workflow is awaiting input. Send another message/send carrying this "
                                           "task's id to provide the input and resume the execution.", wf)
    task = {"kind": "task", "id": wf.workflow_id, "contextId": context_id(wf), "status": status}
    if wf.status == "COMPLETED" and wf.output:
        task["artifacts"] = [{"artifactId": "workflow-output", "name": "output",
                              "parts": [{"kind": "data", "data": wf.output}]}]
    return task


def load(workflow_id: str, name: str) -> WorkflowState:
    """The execution ``workflow_id`` of workflow ``name``; RpcError -32001 otherwise."""
    try:
        wf = selectors.workflow_get(workflow_id=str(workflow_id))
    except NotFound:
        wf = None
    if wf is None or wf.workflow_name != name:
        raise RpcError(-32001, f"No A2A task (workflow execution) found: {workflow_id}")
    return wf


def send_message(name: str, message: dict) -> dict:
    """``message/send``: start (or resume, with ``taskId``) an execution; its Task."""
    definition = require_exposed(name)
    if not isinstance(message, dict):
        raise RpcError(-32602, "message/send requires params.message")
    if message.get("taskId"):
        wf = load(message["taskId"], name)
        pending = _blocking(wf) if not wf.terminal else None
        if pending is not None:
            executor.task_update_by_ref(workflow_id=wf.workflow_id, task_ref_name=pending.reference_task_name,
                                        status="COMPLETED", output=_input(message), worker_id="a2a-resume")
            wf = load(wf.workflow_id, name)
        return task_json(wf)
    key = f"{name}:{message['messageId']}" if message.get("messageId") else None
    try:
        workflow_id = executor.workflow_start(name=name, version=definition.get("version"), input=_input(message),
                                              correlation_id=message.get("contextId") or str(uuid.uuid4()),
                                              idempotency_key=key,
                                              idempotency_strategy="RETURN_EXISTING" if key else None)
    except ConductorError as exc:
        raise RpcError(-32602, exc.message) from exc
    return task_json(load(workflow_id, name))


def get_task(name: str, workflow_id) -> dict:
    """``tasks/get``."""
    require_exposed(name)
    return task_json(load(workflow_id, name))


def cancel_task(name: str, workflow_id) -> dict:
    """``tasks/cancel``: terminate a running execution; its Task (``canceled``, or its end state)."""
    require_exposed(name)
    wf = load(workflow_id, name)
    if not wf.terminal:
        try:
            executor.workflow_terminate(workflow_id=wf.workflow_id, reason="Canceled via A2A tasks/cancel")
        except ConductorError:
            pass  # ended meanwhile: report the state it reached
        wf = load(wf.workflow_id, name)
    return task_json(wf)


def is_stream_final(state: str | None) -> bool:
    return state in TERMINAL_STATES or state in INTERRUPTED_STATES
