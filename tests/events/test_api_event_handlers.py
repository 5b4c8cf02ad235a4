"""/api/event: EventHandler CRUD with Conductor's answers (docs/conductor-notes.md §1.5,
§2.6, §9): 409/404 messages, bean-validation 400s, ``active`` false by default and
``GET /event/{event}`` active-only by default."""
from __future__ import annotations

import pytest

from tests.factories import unique

pytestmark = pytest.mark.django_db(transaction=True)


def handler(name: str, event: str = "conductor:wf:ref", **extra) -> dict:
    out = {"name": name, "event": event, "condition": "$.ok == true",
           "actions": [{"action": "complete_task",
                        "complete_task": {"workflowId": "${workflowId}", "taskRefName": "${taskRefName}",
                                          "output": {"by": "event"}}}]}
    out.update(extra)
    return out


def error(resp, status):
    assert resp.status_code == status, (resp.status_code, resp.content)
    body = resp.json()
    assert body["status"] == status
    assert body["retryable"] is False
    assert "instance" in body
    return body


def test_add_then_list_returns_the_normalised_handler(api):
    name = unique("h")
    resp = api.post("/event", handler(name, unknownField=1))
    assert resp.status_code == 200 and resp.content == b""
    listed = [h for h in api.ok(api.get("/event")).json() if h["name"] == name]
    assert listed == [{
        "name": name, "event": "conductor:wf:ref", "condition": "$.ok == true",
        "actions": [{"action": "complete_task",
                     "complete_task": {"workflowId": "${workflowId}", "taskRefName": "${taskRefName}",
                                       "output": {"by": "event"}},
                     "expandInlineJSON": False}],
        "active": False,
    }]


def test_add_twice_is_a_conflict(api):
    name = unique("h")
    api.ok(api.post("/event", handler(name)))
    body = error(api.post("/event", handler(name)), 409)
    assert body["message"] == f"EventHandler with name {name} already exists!"


def test_update_of_an_unknown_handler_is_not_found(api):
    name = unique("h")
    body = error(api.put("/event", handler(name)), 404)
    assert body["message"] == f"EventHandler with name {name} not found!"


def test_update_replaces_the_handler(api):
    name = unique("h")
    api.ok(api.post("/event", handler(name)))
    api.ok(api.put("/event", handler(name, event="conductor:wf:other", active=True, condition=None,
                                     evaluatorType="javascript")))
    [stored] = [h for h in api.get("/event").json() if h["name"] == name]
    assert stored["event"] == "conductor:wf:other"
    assert stored["active"] is True
    assert stored["evaluatorType"] == "javascript"
    assert "condition" not in stored


def test_get_for_event_is_active_only_by_default(api):
    event = f"conductor:{unique('wf')}:ref"
    active, inactive = unique("active"), unique("inactive")
    api.ok(api.post("/event", handler(active, event, active=True)))
    api.ok(api.post("/event", handler(inactive, event)))
    api.ok(api.post("/event", handler(unique("elsewhere"), "conductor:x:y", active=True)))
    assert [h["name"] for h in api.ok(api.get(f"/event/{event}")).json()] == [active]
    assert [h["name"] for h in api.ok(api.get(f"/event/{event}", {"activeOnly": True})).json()] == [active]
    assert sorted(h["name"] for h in api.ok(api.get(f"/event/{event}", {"activeOnly": False})).json()) == \
        sorted([active, inactive])
    assert api.ok(api.get("/event/conductor:nobody:here")).json() == []


def test_delete_then_delete_again_is_not_found(api):
    name = unique("h")
    api.ok(api.post("/event", handler(name)))
    resp = api.delete(f"/event/{name}")
    assert resp.status_code == 200 and resp.content == b""
    assert all(h["name"] != name for h in api.get("/event").json())
    body = error(api.delete(f"/event/{name}"), 404)
    assert body["message"] == f"EventHandler with name {name} not found!"


def test_validation_messages_on_add(api):
    body = error(api.post("/event", {"actions": []}), 400)
    assert body["message"] == "Validation failed, check below errors for detail."
    assert sorted((e["path"], e["message"]) for e in body["validationErrors"]) == [
        ("addEventHandler.arg0.actions", "No actions specified. Please specify at-least one action"),
        ("addEventHandler.arg0.event", "Missing event location"),
        ("addEventHandler.arg0.name", "Missing event handler name"),
    ]


def test_validation_messages_on_update_carry_the_empty_value(api):
    body = error(api.put("/event", {"name": "", "event": "conductor:a:b"}), 400)
    assert body["validationErrors"] == [
        {"path": "updateEventHandler.arg0.name", "message": "Missing event handler name", "invalidValue": ""},
        {"path": "updateEventHandler.arg0.actions",
         "message": "No actions specified. Please specify at-least one action"},
    ]


def test_unknown_action_type_is_rejected(api):
    body = error(api.post("/event", handler(unique("h"), actions=[{"action": "launch_rocket"}])), 400)
    assert "launch_rocket" in body["message"]


def test_sdk_model_reads_the_handler(api):
    """The conductor-python SDK deserialises what GET /event returns."""
    from conductor.client.http.api_client import ApiClient

    name = unique("h")
    api.ok(api.post("/event", handler(name, active=True)))
    [raw] = [h for h in api.get("/event").json() if h["name"] == name]
    model = ApiClient.__new__(ApiClient)._ApiClient__deserialize(raw, "EventHandler")
    assert model.name == name and model.active is True
    assert model.actions[0].action == "complete_task"
