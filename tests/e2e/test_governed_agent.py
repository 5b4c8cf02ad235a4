"""The governed support agent example end to end: a real server (uvicorn + qcluster) whose
``openai`` provider and MCP allow-list point at loopback stubs through the environment,
definitions loaded by ``manage.py load_examples`` (what ``make run`` does), the SDK's
workers (``notify_customer``, ``open_incident``) in their own processes, the HUMAN
approval given through the SDK's task client.

The LLM and MCP calls happen in the cluster's worker processes; the stubs run in this
process on 127.0.0.1.
"""
import os
import secrets
import time

import httpx
import pytest
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.models.start_workflow_request import StartWorkflowRequest
from conductor.client.http.models.task_result import TaskResult
from conductor.client.orkes_clients import OrkesClients

import examples.governed_support_agent  # noqa: F401 - registers the @worker_task workers
from tests.ai.agent_fixtures import agent_input, order_tools, planner
from tests.ai.stubs import LLMStub, MCPStub
from tests.e2e.conftest import ConductorServer, PostgresDatabase, _is_postgres
from tests.e2e.sdk_helpers import raw_workflow, running_workers, tasks_by_ref, wait_for_workflow

pytestmark = pytest.mark.e2e
API_KEY = "sk-e2e-" + secrets.token_hex(8)
WAIT_SECONDS = 90
AGENT_TASK_TYPES = ("notify_customer", "open_incident")  # the example's workers, and only them


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Stubs, then a server configured for them (its own database), then the workers."""
    llm = LLMStub(planner("refund"))
    refunds: list = []
    shop = MCPStub(order_tools(refunds), sse=True, require_session=True)
    shop.refunds = refunds
    workdir = tmp_path_factory.mktemp("conductor-ai-e2e")
    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
    server = ConductorServer(workdir, pg.url if pg else f"sqlite:///{workdir / 'conductor.sqlite3'}")
    server.env.update({"CONDUCTOR_AI_OPENAI_BASE_URL": llm.origin + "/v1", "CONDUCTOR_AI_OPENAI_API_KEY": API_KEY,
                       "CONDUCTOR_AI_ALLOWED_ORIGINS": shop.origin, "CONDUCTOR_AI_TIMEOUT_SECONDS": "20"})
    try:
        server.start()
        server._run_manage("load_examples")
        with pytest.MonkeyPatch.context() as mp:
            for name, value in server.sdk_env().items():
                mp.setenv(name, value)
            config = Configuration()
            with running_workers(config, AGENT_TASK_TYPES):
                yield server, config, OrkesClients(configuration=config), llm, shop
    finally:
        server.stop()
        llm.close()
        shop.close()
        if pg is not None:
            pg.drop()


def wait_for_task(clients, config, workflow_id, ref, status="IN_PROGRESS"):
    """The task ``ref`` once it has ``status`` (bounded polling)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        wf = clients.get_workflow_client().get_workflow(workflow_id, include_tasks=True)
        for task in tasks_by_ref(wf.tasks).get(ref) or []:
            if task.status == status:
                return task
        if wf.status in ("COMPLETED", "FAILED", "TERMINATED", "TIMED_OUT"):
            break
        time.sleep(0.25)
    raise AssertionError(f"{ref} never {status}:\n{raw_workflow(config, workflow_id)}")


def approve(clients, workflow_id, task, output):
    clients.get_task_client().update_task(TaskResult(workflow_instance_id=workflow_id, task_id=task.task_id,
                                                     status="COMPLETED", output_data=output))


def test_agent_waits_for_approval_then_refunds_and_notifies(world):
    server, config, clients, llm, shop = world
    wid = clients.get_workflow_client().start_workflow(StartWorkflowRequest(
        name="governed_support_agent", input=agent_input("openai", shop.origin + "/mcp")))
    human = wait_for_task(clients, config, wid, "approve_refund")
    assert human.input_data["proposal"] == {"amount": 80, "reason": "damaged on delivery"}
    assert shop.refunds == []  # paused before the irreversible action
    approve(clients, wid, human, {"approved": True, "reviewer": "lee"})
    done = wait_for_workflow(clients.get_workflow_executor(), config, wid, timeout=WAIT_SECONDS)
    assert done.status == "COMPLETED", raw_workflow(config, wid)
    by_ref = tasks_by_ref(done.tasks)
    plan = by_ref["plan__1"][0] if "plan__1" in by_ref else by_ref["plan"][0]
    assert plan.task_type == "LLM_CHAT_COMPLETE" and plan.output_data["result"]["action"] == "lookup_order"
    assert plan.output_data["promptTokens"] > 0
    notify = by_ref["notify_refunded"][0]
    # the SDK worker's answer
    assert notify.output_data["sent"] is True and notify.output_data["to"] == "ann@example.com"
    assert notify.output_data["detail"]["refundId"] == "rf-1"
    assert done.output["iterations"] == 2 and done.output["refund"]["idempotencyKey"] == wid
    assert [c[0] for c in shop.calls] == ["lookup_order", "issue_refund"]
    # the provider's key reached the provider, and nowhere else
    auth = {h.get("authorization") for p, h, b in llm.requests}
    assert auth == {f"Bearer {API_KEY}"}
    assert API_KEY not in raw_workflow(config, wid)


def test_failure_after_the_refund_is_compensated(world):
    server, config, clients, llm, shop = world
    shop.calls.clear()
    wid = clients.get_workflow_client().start_workflow(StartWorkflowRequest(
        name="governed_support_agent",
        input=agent_input("openai", shop.origin + "/mcp", customerEmail="ann@bounce.invalid")))
    approve(clients, wid, wait_for_task(clients, config, wid, "approve_refund"), {"approved": True})
    failed = wait_for_workflow(clients.get_workflow_executor(), config, wid, timeout=WAIT_SECONDS)
    assert failed.status == "FAILED", raw_workflow(config, wid)
    assert "mailbox 'ann@bounce.invalid' rejected the message" in (failed.reason_for_incompletion or "")
    comp_id = failed.output["conductor.failure_workflow"]
    comp = wait_for_workflow(clients.get_workflow_executor(), config, comp_id, timeout=WAIT_SECONDS)
    assert comp.status == "COMPLETED", raw_workflow(config, comp_id)
    refund_id = failed.variables["refund"]["refundId"]
    assert comp.output == {"voidedRefund": refund_id, "incident": "INC-T-1"}
    assert ("void_refund", {"refundId": refund_id, "reason": failed.reason_for_incompletion}) in shop.calls
    body = httpx.get(f"{server.url}/workflow/{comp_id}", headers=server.auth_headers(), timeout=10).json()
    void = [t for t in body["tasks"] if t["referenceTaskName"] == "void_refund"]
    assert [(t["taskType"], t["status"]) for t in void] == [("CALL_MCP_TOOL", "COMPLETED")]
    assert void[0]["outputData"]["content"][0]["parsed"] == {"voided": refund_id}
