"""Stored definitions come back with their keys in the order the user wrote them (#32),
on PostgreSQL too, where a ``jsonb`` column would sort them (by length, then bytes): the
API (``GET`` of a WorkflowDef, a TaskDef, an EventHandler) and the UI's definition page.
Defaults the server fills in come after the user's keys."""
from __future__ import annotations

import json
import re

import pytest

from tests.factories import unique
from tests.ui.conftest import make_user


def keys_in_order(returned: dict, written: dict) -> list[str]:
    """The keys of ``written`` in the order ``returned`` has them."""
    return [k for k in returned if k in written]


def a_workflow(name: str, task: str) -> dict:
    """Keys in an order jsonb would change, at every level."""
    return {
        "name": name,
        "description": "keys as written",
        "version": 1,
        "tasks": [{"taskReferenceName": "t1", "name": task, "type": "SIMPLE",
                   "inputParameters": {"zeta": "${workflow.input.zeta}", "alpha": 1, "mid": {"yy": 1, "b": 2}}}],
        "inputParameters": ["zeta"],
        "schemaVersion": 2,
        "ownerEmail": "keys@example.com",
    }


def a_task_def(name: str) -> dict:
    return {"name": name, "responseTimeoutSeconds": 30, "description": "keys as written", "retryCount": 1,
            "timeoutSeconds": 60, "ownerEmail": "keys@example.com",
            "inputTemplate": {"zulu": 1, "alpha": 2, "mm": 3}}


@pytest.fixture
def registered(client, db):
    name, task = unique("key_order_wf"), unique("key_order_task")
    resp = client.post("/api/metadata/taskdefs", json.dumps([a_task_def(task)]), content_type="application/json")
    assert resp.status_code == 200, resp.content
    resp = client.post("/api/metadata/workflow", json.dumps(a_workflow(name, task)), content_type="application/json")
    assert resp.status_code == 200, resp.content
    return name, task


def test_a_workflow_def_keeps_its_key_order(client, registered):
    name, task = registered
    written = a_workflow(name, task)
    body = client.get(f"/api/metadata/workflow/{name}").json()
    assert keys_in_order(body, written) == list(written)
    first = body["tasks"][0]
    assert keys_in_order(first, written["tasks"][0]) == ["taskReferenceName", "name", "type", "inputParameters"]
    assert list(first["inputParameters"]) == ["zeta", "alpha", "mid"]
    assert list(first["inputParameters"]["mid"]) == ["yy", "b"]
    listed = [d for d in client.get("/api/metadata/workflow").json() if d["name"] == name]
    assert keys_in_order(listed[0], written) == list(written)


def test_a_task_def_keeps_its_key_order(client, registered):
    _, task = registered
    written = a_task_def(task)
    body = client.get(f"/api/metadata/taskdefs/{task}").json()
    assert keys_in_order(body, written) == list(written)
    assert list(body["inputTemplate"]) == ["zulu", "alpha", "mm"]
    # an update keeps the new order too
    rewritten = {"ownerEmail": "keys@example.com", "name": task, "timeoutSeconds": 60, "responseTimeoutSeconds": 30}
    assert client.put("/api/metadata/taskdefs", json.dumps(rewritten), content_type="application/json").status_code == 200
    body = client.get(f"/api/metadata/taskdefs/{task}").json()
    assert keys_in_order(body, rewritten) == list(rewritten)


def test_an_event_handler_keeps_its_key_order(client, db):
    # the top level in the order Conductor serialises an EventHandler (jsonb: active before actions)
    written = {"name": unique("key_order_handler"), "event": "conductor:key_order:done",
               "actions": [{"action": "complete_task", "complete_task": {
                   "workflowId": "${workflowId}", "taskRefName": "wait", "output": {"zz": 1, "a": 2}}}],
               "active": True}
    resp = client.post("/api/event", json.dumps(written), content_type="application/json")
    assert resp.status_code == 200, resp.content
    handlers = [h for h in client.get("/api/event").json() if h["name"] == written["name"]]
    assert keys_in_order(handlers[0], written) == list(written)
    assert list(handlers[0]["actions"][0]["complete_task"]["output"]) == ["zz", "a"]


def test_the_definition_page_shows_the_keys_in_the_written_order(client, registered):
    name, task = registered
    client.force_login(make_user("key_reader", "view_executions"))
    html = client.get(f"/definitions/{name}/1").content.decode()
    shown = re.search(r'<pre class="json">(.*?)</pre>', html, re.S).group(1)
    top = [m for m in re.findall(r'^  &quot;(\w+)&quot;:', shown, re.M)]
    assert keys_in_order(dict.fromkeys(top), a_workflow(name, task)) == list(a_workflow(name, task))
    assert shown.index("&quot;zeta&quot;") < shown.index("&quot;alpha&quot;") < shown.index("&quot;mid&quot;")
