"""AGENT, GET_AGENT_CARD and CANCEL_AGENT against a loopback A2A agent built with the
official ``a2a-sdk`` (tests/agent2agent/peer.py), on both databases: the cluster's jobs run here on
demand, the sweeper's decide is called when the poll interval has passed."""
from __future__ import annotations

import time

import pytest

from tests.factories import Api, unique, workflow_def


@pytest.fixture
def api(transactional_db, settings) -> Api:
    settings.CONDUCTOR_A2A = {**settings.CONDUCTOR_A2A, "ALLOW_PRIVATE_NETWORK": True}
    return Api()


def task(ref: str, ttype: str, **inputs) -> dict:
    return {"name": ref, "taskReferenceName": ref, "type": ttype, "inputParameters": inputs}


def run(api, cluster, tasks: list[dict], *, until_s: float = 15, input: dict | None = None) -> dict:
    """Start a workflow of ``tasks``; run its jobs, deciding again while an AGENT polls
    (``pollIntervalSeconds`` 1), until it ends or ``until_s`` pass."""
    from apps.engine import executor

    name = unique("a2a_call")
    api.register_workflow(workflow_def(name, tasks))
    workflow_id = api.start(name, input)
    deadline = time.monotonic() + until_s
    while True:
        cluster.run()
        wf = api.workflow(workflow_id)
        if wf["status"] != "RUNNING" or time.monotonic() > deadline:
            return wf
        time.sleep(0.3)
        wf_tasks = [t for t in wf["tasks"] if t["status"] == "IN_PROGRESS"]
        if wf_tasks and time.time() * 1000 >= wf_tasks[-1]["updateTime"] + 1000:
            executor.workflow_decide(workflow_id)


def only(wf: dict, ref: str) -> dict:
    (found,) = [t for t in wf["tasks"] if t["referenceTaskName"] == ref]
    return found


def test_agent_calls_the_remote_agent_and_polls_it_to_completion(api, cluster, peer):
    wf = run(api, cluster, [task("call", "AGENT", agentUrl=peer.url + "/", text="slow ${workflow.input.what}",
                                 pollIntervalSeconds=1)], input={"what": "one"})
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    out = only(wf, "call")["outputData"]
    assert out["state"] == "completed" and out["text"] == "ECHO: slow one"
    assert out["task"]["id"] == out["taskId"] and out["artifacts"][0]["parts"][0]["text"] == out["text"]
    assert out["a2aPollFailures"] == 0 and out["a2aStartedAt"] > 0
    assert len(peer.sent) == 1  # polled with tasks/get, never sent again


def test_agent_resolves_a_card_url_and_maps_the_remote_states(api, cluster, peer):
    card_url = peer.url + "/.well-known/agent-card.json"
    wf = run(api, cluster, [task("hello", "AGENT", agentUrl=card_url, text="hello", pollIntervalSeconds=1),
                            task("ask", "AGENT", agentUrl=peer.url + "/", text="ask", pollIntervalSeconds=1)])
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    assert only(wf, "hello")["outputData"]["text"] == "ECHO: hello"
    asked = only(wf, "ask")["outputData"]
    assert asked["state"] == "input-required" and asked["text"] == "which size?"
    assert asked["agentMessage"]["role"] == "agent"

    wf = run(api, cluster, [task("fail", "AGENT", agentUrl=peer.url + "/", text="fail", pollIntervalSeconds=1)])
    failed = only(wf, "fail")
    assert wf["status"] == "FAILED" and failed["status"] == "FAILED"
    assert failed["reasonForIncompletion"] == "Remote agent task ended in state 'failed': cannot do that"


def test_get_agent_card_and_cancel_agent(api, cluster, peer):
    wf = run(api, cluster, [task("card", "GET_AGENT_CARD", agentUrl=peer.url)])
    card = only(wf, "card")["outputData"]["agentCard"]
    assert card["name"] == "echo-peer" and card["skills"][0]["id"] == "echo"

    slow = run(api, cluster, [task("call", "AGENT", agentUrl=peer.url + "/", text="slow cancel me",
                                   pollIntervalSeconds=30)], until_s=0)
    remote_id = only(slow, "call")["outputData"]["taskId"]
    assert only(slow, "call")["status"] == "IN_PROGRESS" and remote_id
    wf = run(api, cluster, [task("stop", "CANCEL_AGENT", agentUrl=peer.url + "/", taskId=remote_id)])
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    assert only(wf, "stop")["outputData"]["task"]["status"]["state"] == "canceled"

    wf = run(api, cluster, [task("stop", "CANCEL_AGENT", agentUrl=peer.url + "/")])
    assert only(wf, "stop")["status"] == "FAILED_WITH_TERMINAL_ERROR"
    assert only(wf, "stop")["reasonForIncompletion"] == "CANCEL_AGENT requires 'taskId'"


def test_the_ssrf_guard_refuses_loopback_unless_allowed_and_metadata_always(api, cluster, peer, settings):
    settings.CONDUCTOR_A2A = {**settings.CONDUCTOR_A2A, "ALLOW_PRIVATE_NETWORK": False}
    wf = run(api, cluster, [task("card", "GET_AGENT_CARD", agentUrl=peer.url)])
    refused = only(wf, "card")
    assert refused["status"] == "FAILED_WITH_TERMINAL_ERROR"
    assert "SSRF blocked: 127.0.0.1" in refused["reasonForIncompletion"]
    wf = run(api, cluster, [task("call", "AGENT", agentUrl=peer.url + "/", text="hello")])
    assert "SSRF blocked" in only(wf, "call")["reasonForIncompletion"] and peer.sent == []

    settings.CONDUCTOR_A2A = {**settings.CONDUCTOR_A2A, "ALLOW_PRIVATE_NETWORK": True}
    wf = run(api, cluster, [task("card", "GET_AGENT_CARD", agentUrl="http://169.254.169.254/latest")])
    assert "cloud metadata address" in only(wf, "card")["reasonForIncompletion"]
    wf = run(api, cluster, [task("card", "GET_AGENT_CARD", agentUrl="file:///etc/passwd")])
    assert only(wf, "card")["status"] == "FAILED_WITH_TERMINAL_ERROR"


def test_push_mode_gives_the_agent_a_callback_and_the_callback_checks_its_token(api, cluster, peer, settings):
    settings.CONDUCTOR_A2A = {**settings.CONDUCTOR_A2A, "CALLBACK_URL": "http://127.0.0.1:9/"}
    wf = run(api, cluster, [task("call", "AGENT", agentUrl=peer.url + "/", text="slow push", pushNotification=True,
                                 pushBackstopPollSeconds=300)], until_s=0)
    call = only(wf, "call")
    token = call["outputData"]["pushToken"]
    assert call["status"] == "IN_PROGRESS" and call["callbackAfterSeconds"] == 300
    path = f"/a2a/callback/{call['taskId']}"
    assert api.client.post("/api" + path, HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert api.client.post("/api" + path).status_code == 403
    assert api.client.post("/api/a2a/callback/no-such-task", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 404
    time.sleep(2.2)  # the peer finishes its work
    assert api.client.post("/api" + path, HTTP_X_CONDUCTOR_A2A_TOKEN=token).status_code == 200
    assert cluster.queued == [call["taskId"]]  # handed to the cluster at once, not after the backstop
    cluster.run()
    wf = api.workflow(wf["workflowId"])
    assert wf["status"] == "COMPLETED" and only(wf, "call")["outputData"]["text"] == "ECHO: slow push"
