"""The governed support agent example through the API (in-process cluster, workers
answered through the task API): plan/act loop, allow-list, caps, HUMAN gate and
compensation. The e2e test runs the same example on a real server with SDK workers."""
from __future__ import annotations

import pytest

from tests.ai.agent_fixtures import agent_input, definitions, order_tools, planner
from tests.ai.stubs import MCPStub


@pytest.fixture
def shop(ai_settings, settings):
    refunds: list = []
    stub = MCPStub(order_tools(refunds))
    stub.refunds = refunds
    settings.CONDUCTOR_AI = {**ai_settings, "ALLOWED_ORIGINS": [stub.origin]}
    yield stub
    stub.close()


@pytest.fixture
def agent(api, shop):
    api.post("/metadata/taskdefs", definitions()["taskDefs"])
    for wf in definitions()["workflowDefs"]:
        api.register_workflow(wf)
    return shop


def refs(wf):
    return [t["referenceTaskName"] for t in wf["tasks"]]


def settle(api, cluster, wid, rounds=20):
    for _ in range(rounds):
        if not cluster.run():
            break
    return api.workflow(wid)


def worker_step(api, cluster, task_type, output=None, status="COMPLETED"):
    (task,) = api.poll(task_type)
    api.ok(api.update(task, status, output or {}, reasonForIncompletion=None if status == "COMPLETED" else "boom"))
    cluster.run()
    return task


def test_agent_plans_acts_pauses_for_approval_then_refunds(api, cluster, agent, llm):
    llm.chat_handler = planner("refund")
    wid = api.start("governed_support_agent", agent_input("openai", agent.origin + "/mcp"))
    wf = settle(api, cluster, wid)
    assert wf["status"] == "RUNNING", wf.get("reasonForIncompletion")
    human = [t for t in wf["tasks"] if t["referenceTaskName"] == "approve_refund"]
    assert [t["status"] for t in human] == ["IN_PROGRESS"]
    assert human[0]["inputData"]["proposal"] == {"amount": 80, "reason": "damaged on delivery"}
    assert agent.refunds == []  # nothing irreversible before the approval
    assert [c[0] for c in agent.calls] == ["lookup_order"]
    api.ok(api.update({"workflowInstanceId": wid, "taskId": human[0]["taskId"]}, "COMPLETED",
                      {"approved": True, "reviewer": "lee"}))
    cluster.run()
    notify = worker_step(api, cluster, "notify_customer", {"sent": True})
    assert notify["inputData"]["outcome"] == "refunded" and notify["inputData"]["detail"]["refundId"] == "rf-1"
    wf = settle(api, cluster, wid)
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    assert wf["output"]["iterations"] == 2
    assert wf["output"]["refund"]["refundId"] == "rf-1" and agent.refunds[0]["idempotencyKey"] == wid
    assert wf["output"]["approval"] == {"approved": True, "reviewer": "lee"}
    assert wf["output"]["tokensUsed"] > 0


def test_rejected_approval_issues_nothing(api, cluster, agent, llm):
    llm.chat_handler = planner("refund")
    wid = api.start("governed_support_agent", agent_input("openai", agent.origin + "/mcp"))
    wf = settle(api, cluster, wid)
    (human,) = [t for t in wf["tasks"] if t["referenceTaskName"] == "approve_refund"]
    api.ok(api.update({"workflowInstanceId": wid, "taskId": human["taskId"]}, "COMPLETED",
                      {"approved": False, "feedback": "photo needed"}))
    cluster.run()
    notify = worker_step(api, cluster, "notify_customer")
    assert (notify["inputData"]["outcome"], notify["inputData"]["detail"]) == ("declined", "photo needed")
    assert settle(api, cluster, wid)["status"] == "COMPLETED"
    assert agent.refunds == []


def test_caps_and_allow_list_bound_the_loop(api, cluster, agent, llm):
    llm.chat_handler = planner("loop")
    wid = api.start("governed_support_agent", agent_input("openai", agent.origin + "/mcp", maxIterations=3,
                                                          tokenBudget=100000))
    settle(api, cluster, wid)
    worker_step(api, cluster, "notify_customer")
    wf = settle(api, cluster, wid)
    assert wf["status"] == "COMPLETED" and wf["output"]["iterations"] == 3  # iteration cap
    assert [c[0] for c in agent.calls] == ["lookup_order"] * 3

    agent.calls.clear()
    wid = api.start("governed_support_agent", agent_input("openai", agent.origin + "/mcp", maxIterations=10,
                                                          tokenBudget=1))
    settle(api, cluster, wid)
    worker_step(api, cluster, "notify_customer")
    wf = settle(api, cluster, wid)
    assert wf["output"]["iterations"] == 1 and wf["output"]["tokensUsed"] >= 1  # budget cap

    llm.chat_handler = planner("rogue")
    agent.calls.clear()
    wid = api.start("governed_support_agent", agent_input("openai", agent.origin + "/mcp"))
    settle(api, cluster, wid)
    notify = worker_step(api, cluster, "notify_customer")
    wf = settle(api, cluster, wid)
    assert wf["status"] == "COMPLETED" and notify["inputData"]["outcome"] == "no_refund"
    assert wf["output"]["evidence"][0]["step"] == "rejected"
    assert wf["output"]["evidence"][0]["asked"]["action"] == "delete_customer"
    assert agent.calls == []  # the rogue action never reached a tool


def test_failure_after_refund_runs_the_compensation(api, cluster, agent, llm):
    llm.chat_handler = planner("refund")
    wid = api.start("governed_support_agent", agent_input("openai", agent.origin + "/mcp"))
    wf = settle(api, cluster, wid)
    (human,) = [t for t in wf["tasks"] if t["referenceTaskName"] == "approve_refund"]
    api.ok(api.update({"workflowInstanceId": wid, "taskId": human["taskId"]}, "COMPLETED", {"approved": True}))
    cluster.run()
    worker_step(api, cluster, "notify_customer", status="FAILED")
    wf = settle(api, cluster, wid)
    assert wf["status"] == "FAILED"
    comp_id = wf["output"]["conductor.failure_workflow"]
    settle(api, cluster, comp_id)
    incident = worker_step(api, cluster, "open_incident", {"incident": "INC-T-1"})
    assert incident["inputData"]["voidedRefund"] == "rf-1"
    comp = settle(api, cluster, comp_id)
    assert comp["status"] == "COMPLETED", comp.get("reasonForIncompletion")
    assert comp["output"] == {"voidedRefund": "rf-1", "incident": "INC-T-1"}
    assert ("void_refund", {"refundId": "rf-1", "reason": wf["reasonForIncompletion"]}) in agent.calls


def test_missing_tools_stop_the_agent(api, cluster, ai_settings, mcp, llm, settings):
    api.post("/metadata/taskdefs", definitions()["taskDefs"])
    for wf in definitions()["workflowDefs"]:
        api.register_workflow(wf)
    wid = api.start("governed_support_agent", agent_input("openai", mcp.origin + "/mcp"))
    wf = settle(api, cluster, wid)
    assert wf["status"] == "FAILED"
    assert wf["reasonForIncompletion"] == "The MCP server must offer lookup_order and issue_refund."
    assert llm.chats() == []
