"""Workflows served as A2A agents, in process (both databases): exposure, the card, the
JSON-RPC errors, idempotent ``message/send``, resume, and one agent never seeing another's
executions. The official client's view of the same endpoints: tests/e2e/test_a2a_server_sdk.py."""
from __future__ import annotations

import pytest

from tests.factories import Api, unique, workflow_def


@pytest.fixture
def api(db) -> Api:
    return Api()


def rpc(api, name: str, method: str, params=None, rpc_id=1) -> dict:
    resp = api.ok(api.post(f"/a2a/workflow/{name}", {"jsonrpc": "2.0", "id": rpc_id, "method": method,
                                                        "params": params if params is not None else {}}))
    body = resp.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == rpc_id
    return body


def human_flow(api, **metadata) -> str:
    name = unique("a2a_agent")
    api.register_workflow(workflow_def(name, [{"name": "approve", "taskReferenceName": "approve", "type": "HUMAN"}],
                                       metadata=metadata, outputParameters={"said": "${approve.output._a2a_text}",
                                                                            "n": "${approve.output.n}"}))
    return name


def message(text: str, **extra) -> dict:
    return {"kind": "message", "role": "user", "messageId": extra.pop("messageId", unique("m")),
            "parts": [{"kind": "text", "text": text}], **extra}


def test_only_exposed_workflows_are_agents(api, settings):
    hidden = human_flow(api)
    shown = human_flow(api, **{"a2a.enabled": True, "a2a.tags": ["ops"]})
    assert api.get(f"/a2a/workflow/{hidden}/.well-known/agent-card.json").status_code == 404
    card = api.ok(api.get(f"/a2a/workflow/{shown}/.well-known/agent-card.json")).json()
    assert card["name"] == shown and card["protocolVersion"] == "0.3.0" and card["preferredTransport"] == "JSONRPC"
    assert card["url"] == f"http://testserver/api/a2a/workflow/{shown}"
    assert card["skills"][0]["tags"] == ["ops"] and card["capabilities"]["streaming"] is True
    assert api.ok(api.get(f"/a2a/workflow/{shown}/.well-known/agent.json")).json() == card
    listed = {a["name"] for a in api.ok(api.get("/a2a/workflow")).json()}
    assert shown in listed and hidden not in listed
    assert rpc(api, hidden, "tasks/get", {"id": "x"})["error"]["code"] == -32001

    settings.CONDUCTOR_A2A = {**settings.CONDUCTOR_A2A, "EXPOSED_WORKFLOWS": [hidden],
                              "PUBLIC_URL": "https://agents.example.com"}
    card = api.ok(api.get(f"/a2a/workflow/{hidden}/.well-known/agent-card.json")).json()
    assert card["url"] == f"https://agents.example.com/api/a2a/workflow/{hidden}"


def test_json_rpc_errors(api):
    name = human_flow(api, **{"a2a.enabled": True})
    assert rpc(api, name, "tasks/resubscribe", {"id": "x"})["error"] == {"code": -32601,
                                                                       "message": "Method not found: tasks/resubscribe"}
    assert rpc(api, name, "message/send", {})["error"]["code"] == -32602
    assert rpc(api, name, "tasks/get", {})["error"]["code"] == -32602
    assert rpc(api, name, "tasks/get", {"id": "no-such"})["error"]["code"] == -32001
    body = api.ok(api.post(f"/a2a/workflow/{name}", {"jsonrpc": "2.0", "id": 7})).json()
    assert body["error"]["code"] == -32600 and body["id"] == 7
    assert api.ok(api.post(f"/a2a/workflow/{name}", raw="{not json")).json()["error"]["code"] == -32700


def test_send_is_idempotent_resumes_on_task_id_and_stays_within_its_agent(api):
    name = human_flow(api, **{"a2a.enabled": True})
    other = human_flow(api, **{"a2a.enabled": True})
    first = rpc(api, name, "message/send", {"message": message("hi", messageId="m-1", contextId="ctx-9")})["result"]
    again = rpc(api, name, "message/send", {"message": message("hi", messageId="m-1")})["result"]
    assert first["kind"] == "task" and again["id"] == first["id"] and first["contextId"] == "ctx-9"
    assert first["status"]["state"] == "input-required"
    assert first["status"]["message"]["role"] == "agent"
    wf = api.workflow(first["id"])
    assert wf["input"] == {"_a2a_text": "hi", "_a2a_message_id": "m-1", "_a2a_context_id": "ctx-9"}
    assert wf["correlationId"] == "ctx-9"

    assert rpc(api, other, "tasks/get", {"id": first["id"]})["error"]["code"] == -32001
    assert rpc(api, other, "tasks/cancel", {"id": first["id"]})["error"]["code"] == -32001

    done = rpc(api, name, "message/send", {"message": {**message("approved"), "taskId": first["id"],
                                                       "parts": [{"kind": "text", "text": "approved"},
                                                                 {"kind": "data", "data": {"n": 2}}]}})["result"]
    assert done["id"] == first["id"] and done["status"] == {"state": "completed"}
    assert done["artifacts"] == [{"artifactId": "workflow-output", "name": "output",
                                  "parts": [{"kind": "data", "data": {"said": "approved", "n": 2}}]}]
    canceled = rpc(api, name, "tasks/cancel", {"id": first["id"]})["result"]
    assert canceled["status"]["state"] == "completed"  # already ended: its state as it is


def test_cancel_terminates_and_a_failed_run_reports_its_reason(api):
    name = human_flow(api, **{"a2a.enabled": True})
    task = rpc(api, name, "message/send", {"message": message("x")})["result"]
    canceled = rpc(api, name, "tasks/cancel", {"id": task["id"]})["result"]
    assert canceled["status"]["state"] == "canceled"
    assert api.workflow(task["id"])["status"] == "TERMINATED"

    failing = unique("a2a_fail")
    api.register_workflow(workflow_def(failing, [
        {"name": "stop", "taskReferenceName": "stop", "type": "TERMINATE",
         "inputParameters": {"terminationStatus": "FAILED", "terminationReason": "not today"}}],
        metadata={"a2a.enabled": "true"}))
    failed = rpc(api, failing, "message/send", {"message": message("x")})["result"]
    assert failed["status"]["state"] == "failed"
    assert failed["status"]["message"]["parts"][0]["text"] == "not today"
