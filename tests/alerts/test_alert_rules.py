"""Alert rules through ``/api/alerts``: each condition opens one incident when it holds
and resolves it when it stops, both notified once to a loopback webhook and by e-mail
(Django's locmem backend); bad rules are refused naming the field; the roles."""
from __future__ import annotations

import pytest
from django.core import mail

from apps.alerts import delivery, evaluation
from tests.factories import simple_task, task_def, unique, workflow_def


def definition(api) -> tuple[str, str]:
    name = unique("alerted_wf")
    task = f"{name}_task"
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task)]))
    return name, task


def rule(api, receiver, **fields) -> dict:
    body = {"name": unique("rule"), "webhookUrl": receiver.url + "/hook", "emails": ["oncall@example.com"], **fields}
    return api.ok(api.post("/alerts/rules", body)).json()


def run(api, wf: str, task: str, status: str) -> str:
    workflow_id = api.start(wf)
    polled = api.poll_one(task)
    api.ok(api.update(polled, status, reasonForIncompletion="boom" if status == "FAILED" else None))
    assert api.workflow(workflow_id)["status"] == ("COMPLETED" if status == "COMPLETED" else "FAILED")
    return workflow_id


def step(clock) -> None:
    """One evaluation turn (past the evaluation interval) and the deliveries it made."""
    clock.advance(20)
    evaluation.evaluate_due()
    delivery.deliver_due()


def incidents(api, rule_id) -> list[dict]:
    return api.ok(api.get("/alerts/incidents", {"ruleId": rule_id})).json()


def events(receiver, rule_id) -> list[tuple[str, str]]:
    return [(r["body"]["event"], r["body"]["subject"]) for r in receiver.delivered() if r["body"]["ruleId"] == rule_id]


@pytest.mark.django_db
def test_a_failure_fires_once_per_incident_and_resolves_on_the_next_success(api, clock, receiver):
    wf, task = definition(api)
    r = rule(api, receiver, workflowName=wf, condition="FAILURE")
    step(clock)
    assert incidents(api, r["id"]) == [] and mail.outbox == []
    failed = run(api, wf, task, "FAILED")
    step(clock)
    [incident] = incidents(api, r["id"])
    assert incident["state"] == "OPEN" and incident["subject"] == wf and incident["details"]["workflowId"] == failed
    assert "boom" in incident["summary"]
    assert events(receiver, r["id"]) == [("OPENED", wf)]
    hook = receiver.delivered()[-1]
    assert hook["path"] == "/hook" and hook["headers"]["x-conductor-alert-event"] == "OPENED"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["oncall@example.com"]
    assert mail.outbox[0].subject.startswith("[conductor-web] OPENED:")
    run(api, wf, task, "FAILED")  # still failing: the same incident, no new message
    step(clock)
    step(clock)
    assert len(incidents(api, r["id"])) == 1 and len(events(receiver, r["id"])) == 1 and len(mail.outbox) == 1
    run(api, wf, task, "COMPLETED")
    step(clock)
    [incident] = incidents(api, r["id"])
    assert incident["state"] == "RESOLVED" and incident["resolvedAt"]
    assert events(receiver, r["id"]) == [("OPENED", wf), ("RESOLVED", wf)]
    assert [m.subject.split(":")[0] for m in mail.outbox] == ["[conductor-web] OPENED", "[conductor-web] RESOLVED"]
    assert {n["state"] for n in incident["notifications"]} == {"SENT"}
    assert api.ok(api.get(f"/alerts/rules/{r['id']}")).json()["openIncidents"] == 0


@pytest.mark.django_db
def test_failure_rate_long_run_queue_age_and_no_poller(api, clock, receiver):
    wf, task = definition(api)
    rate = rule(api, receiver, workflowName=wf, condition="FAILURE_RATE", windowSeconds=600, failureRate=0.5,
                minRuns=2)
    long_run = rule(api, receiver, workflowName=wf, condition="LONG_RUN", thresholdSeconds=60)
    queue_age = rule(api, receiver, workflowName=wf, condition="QUEUE_AGE", thresholdSeconds=30)
    no_poller = rule(api, receiver, condition="NO_POLLER", taskType=task, thresholdSeconds=30, emails=[])
    run(api, wf, task, "FAILED")
    step(clock)
    assert incidents(api, rate["id"]) == []  # one ended run: below minRuns
    run(api, wf, task, "COMPLETED")
    waiting = api.start(wf)  # its task waits in the queue, polled 40 s ago at most
    step(clock)
    assert [i["state"] for i in incidents(api, rate["id"])] == ["OPEN"]  # 1 of 2 failed: 50 %
    step(clock)
    step(clock)  # 60 s later
    assert [i["subject"] for i in incidents(api, queue_age["id"])] == [task]
    assert [i["subject"] for i in incidents(api, no_poller["id"])] == [task]
    step(clock)
    [late] = incidents(api, long_run["id"])
    assert late["state"] == "OPEN" and late["details"]["workflowId"] == waiting
    polled = api.poll_one(task)
    step(clock)
    assert [i["state"] for i in incidents(api, queue_age["id"])] == ["RESOLVED"]
    assert [i["state"] for i in incidents(api, no_poller["id"])] == ["RESOLVED"]
    api.complete(polled)
    step(clock)
    assert [i["state"] for i in incidents(api, long_run["id"])] == ["RESOLVED"]
    clock.advance(700)  # the window passes: no ended run in it
    step(clock)
    assert [i["state"] for i in incidents(api, rate["id"])] == ["RESOLVED"]
    assert events(receiver, no_poller["id"]) == [("OPENED", task), ("RESOLVED", task)]


@pytest.mark.django_db
def test_rules_are_managed_and_checked(api, receiver):
    from apps.api.auth import required_role

    r = rule(api, receiver, condition="LONG_RUN", thresholdSeconds=5)
    assert r["workflowName"] is None and r["enabled"] is True and r["createdBy"] == "api"
    assert [x["name"] for x in api.ok(api.get("/alerts/rules")).json()] == [r["name"]]
    changed = api.ok(api.put(f"/alerts/rules/{r['id']}", {**r, "thresholdSeconds": 9, "enabled": False})).json()
    assert changed["thresholdSeconds"] == 9 and changed["enabled"] is False

    def refused(body, path):
        resp = api.post("/alerts/rules", body)
        assert resp.status_code == 400, resp.content
        assert resp.json()["validationErrors"][0]["path"] == path, resp.json()

    ok = {"name": "x", "condition": "LONG_RUN", "thresholdSeconds": 5, "webhookUrl": "http://127.0.0.1:9/h"}
    refused({**ok, "condition": "SOMETIMES"}, "condition")
    refused({**ok, "thresholdSeconds": None}, "thresholdSeconds")
    refused({**ok, "thresholdSeconds": "5"}, "thresholdSeconds")
    refused({**ok, "webhookUrl": "file:///etc/passwd"}, "webhookUrl")
    refused({**ok, "webhookUrl": "", "emails": []}, "webhookUrl")
    refused({**ok, "emails": ["not an address"]}, "emails[0]")
    refused({**ok, "condition": "FAILURE_RATE", "windowSeconds": 60, "failureRate": 1.5}, "failureRate")
    refused({**ok, "name": r["name"]}, "name")
    refused({**ok, "name": ""}, "name")
    assert api.get("/alerts/rules/999999").status_code == 404
    assert api.get("/alerts/rules/abc").status_code == 404
    assert api.get("/alerts/incidents", {"state": "SHUT"}).status_code == 400
    refused = api.get("/alerts/incidents", {"ruleId": "abc"})
    assert refused.status_code == 400 and refused.json()["validationErrors"][0]["path"] == "ruleId"
    assert api.get("/alerts/incidents", {"ruleId": "999999"}).status_code == 404
    assert api.put("/alerts/rules/999999", {}).status_code == 404  # unknown before invalid
    assert api.ok(api.delete(f"/alerts/rules/{r['id']}")).content == b""
    assert api.get(f"/alerts/rules/{r['id']}").status_code == 404
    assert required_role("GET", "/api/alerts/rules") == "read_only"
    assert required_role("POST", "/api/alerts/rules") == "operator"
    assert required_role("DELETE", "/api/alerts/rules/1") == "operator"
