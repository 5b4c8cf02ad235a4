"""Server-side agent tools end to end through the Python SDK's agent runtime
(``conductor.ai.agents``, conductor-python 2.0.0) against a real server (uvicorn +
qcluster, API auth on, its own SQLite or PostgreSQL database): ``mcp_tool`` against a
loopback MCP server built with the official ``mcp`` package (``mcp_peer``), ``http_tool``
against a loopback HTTP service with a secret header, ``agent_tool`` running a sub-agent
whose ``@tool`` runs in the SDK's worker, ``wait_for_message_tool`` answered by
``send_message``, and ``index_tool`` / ``search_tool`` over the server's vector store. No
worker serves a server-side tool: the server runs each as its system task. The model is
a loopback OpenAI-compatible stub answering by the agent's instructions (``script``)."""
from __future__ import annotations

import json
import secrets
import time

import httpx
import pytest
from conductor.ai.agents import Agent, agent_tool, http_tool, mcp_tool, wait_for_message_tool
from conductor.ai.agents.tool import index_tool, search_tool

from examples.agent_demo import text_result
from tests.agents import agent_defs
from tests.agents.mcp_peer import McpPeer
from tests.agents.sdk_server import agent_server
from tests.ai.stubs import LLMStub, MCPStub
from tests.support.http_stub import HttpStub, Reply

pytestmark = pytest.mark.e2e
API_KEY = "sk-agent-tools-" + secrets.token_hex(8)
ORDERS_KEY = "orders-" + secrets.token_hex(8)
MCP_TOKEN = "mcp-" + secrets.token_hex(8)
WAIT_SECONDS = 60
MODEL = agent_defs.MODEL
EMBEDDER = {"vector_db": "pgvectordb", "index": "shop_notes", "embedding_model_provider": "openai",
            "embedding_model": "text-embedding-3-small"}


def _system(messages: list) -> str:
    return next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")


def _tool_outputs(messages: list) -> list:
    return [json.loads(m["content"]) for m in messages if m.get("role") == "tool"]


def script(request: dict) -> dict:
    """The stub model: each agent below asks for its tools, then reports what they gave."""
    messages = request.get("messages") or []
    system, outputs = _system(messages), _tool_outputs(messages)
    if system.startswith("MCPDESK"):
        if not outputs:
            return {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}
        return {"text": "MCP says {tempC}C in {city}".format(**json.loads(outputs[-1]["content"][0]["text"]))}
    if system.startswith("SHOP"):
        if not outputs:
            return {"tool_calls": [
                {"name": "create_order", "arguments": {"item": "tea", "note": "${workflow.secrets.ORDERS_KEY}"}},
                {"name": "lookup_stock", "arguments": {"sku": "green tea"}},
                {"name": "drop_tables", "arguments": {}}]}
        by_kind = {("order" if "id" in json.dumps(o) else "stock" if "inStock" in json.dumps(o) else "error"): o
                   for o in outputs}
        return {"text": "order {} placed; {} in stock; {}".format(
            by_kind["order"]["response"]["body"]["id"], by_kind["stock"]["response"]["body"]["inStock"],
            by_kind["error"]["result"]["error"])}
    if system.startswith("MANAGER"):
        if not outputs:
            return {"tool_calls": [{"name": "e2e_weather", "arguments": {"request": "What is the weather in Paris?"}}]}
        return {"text": "Manager: " + outputs[-1]["result"]}
    if system.startswith("LISTENER"):
        if not outputs:
            return {"tool_calls": [{"name": "wait_for_message", "arguments": {}}]}
        return {"text": "Got: " + outputs[-1]["messages"][0]["payload"]["text"]}
    if system.startswith("LIBRARIAN"):
        if not outputs:
            return {"tool_calls": [{"name": "remember", "arguments": {
                "text": "The tea shop opens at nine.", "docId": "shop-hours"}}]}
        if len(outputs) == 1:
            return {"tool_calls": [{"name": "recall", "arguments": {"query": "The tea shop opens at nine."}}]}
        return {"text": "Found: " + outputs[-1]["result"][0]["text"]}
    return agent_defs.script(request)


def orders_service(request):
    if request.path.startswith("/orders") and request.method == "POST":
        return Reply(201, {"id": "ord-1", "item": (request.json() or {}).get("item")})
    if request.path.startswith("/stock") and request.method == "GET":
        return Reply(200, {"inStock": 4})
    return Reply(404, {"error": "no route"})


def weather_tools() -> dict:
    weather = ("Current weather of a city", {"type": "object", "properties": {"city": {"type": "string"}}},
               lambda a: text_result({"city": a.get("city"), "tempC": 21}))
    echo = ("Echo the text", {"type": "object", "properties": {"text": {"type": "string"}}},
            lambda a: text_result(str(a.get("text"))))
    return {"get_weather": weather, "echo": echo, "broken": ("Broken", {"type": "object"}, lambda a: text_result(""))}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The model, an MCP server (the official ``mcp`` package's), an MCP stub outside
    the allowed origins, the HTTP service, a server configured for
    them, the secrets ``ORDERS_KEY`` and ``MCP_TOKEN`` stored, and one AgentRuntime signed in as admin."""
    llm, mcp, outsider, shop = LLMStub(script), McpPeer(), MCPStub(weather_tools()), HttpStub(orders_service)
    env = {"CONDUCTOR_AI_OPENAI_BASE_URL": llm.origin + "/v1", "CONDUCTOR_AI_OPENAI_API_KEY": API_KEY,
           "CONDUCTOR_AI_TIMEOUT_SECONDS": "20", "CONDUCTOR_AI_ALLOWED_ORIGINS": mcp.origin}

    def store_secrets(server):
        for name, value in (("ORDERS_KEY", ORDERS_KEY), ("MCP_TOKEN", MCP_TOKEN)):
            r = httpx.put(f"{server.url}/secrets/{name}", content=value,
                          headers={**server.auth_headers(), "Content-Type": "text/plain"}, timeout=10)
            assert r.status_code == 200, r.text

    try:
        with agent_server(tmp_path_factory.mktemp("conductor-agent-tools"), env, store_secrets) as (server, runtime):
            yield server, runtime, {"llm": llm, "mcp": mcp, "outsider": outsider, "shop": shop}
    finally:
        for stub in (llm, mcp, outsider, shop):
            stub.close()


def execution(server, execution_id: str) -> dict:
    r = httpx.get(f"{server.url}/agent/execution/{execution_id}", headers=server.auth_headers(), timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def why(server, result) -> str:
    """The reason a run did not complete, with its failed tasks (an assertion's message)."""
    run = execution(server, result.execution_id)
    failed = [(t["referenceTaskName"], t["status"], t.get("reasonForIncompletion")) for t in run["tasks"]
              if t["status"] not in ("COMPLETED", "SCHEDULED", "IN_PROGRESS")]
    return f"{result.error} {run.get('reasonForIncompletion')} {failed}"


def test_mcp_tools_are_discovered_in_the_run_and_called_by_the_server(world):
    server, runtime, stubs = world
    desk = Agent(name="e2e_mcp_desk", model=MODEL, instructions="MCPDESK: answer with the weather tools.",
                 tools=[mcp_tool(server_url=stubs["mcp"].origin + "/mcp", tool_names=["get_weather", "echo"],
                                 headers={"X-Team": "blue", "Authorization": "Bearer ${MCP_TOKEN}"},
                                 credentials=["MCP_TOKEN"])])
    result = runtime.run(desk, "Weather in Oslo?", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", why(server, result)
    assert result.output["result"] == "MCP says 21C in Oslo"
    assert stubs["mcp"].calls == [("get_weather", {"city": "Oslo"})]
    # discovery and call (each a session of its own) carry the headers, the credential as the stored secret
    assert len(stubs["mcp"].headers) >= 4
    assert {(h.get("x-team"), h.get("authorization")) for h in stubs["mcp"].headers} == {("blue", f"Bearer {MCP_TOKEN}")}
    # the model saw the server's tools within tool_names, as the MCP server describes them
    first = next(c for c in stubs["llm"].chats() if _system(c["messages"]).startswith("MCPDESK"))
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather", "echo"]
    parameters = first["tools"][0]["function"]["parameters"]
    assert parameters["properties"]["city"]["type"] == "string" and parameters["required"] == ["city"]
    run = execution(server, result.execution_id)
    types = [t["taskType"] for t in run["tasks"]]
    assert types.count("LIST_MCP_TOOLS") == 1 and types.count("CALL_MCP_TOOL") == 1
    assert MCP_TOKEN not in json.dumps(run) and "Bearer ${workflow.secrets.MCP_TOKEN}" in json.dumps(run)


def test_an_mcp_server_outside_the_allowed_origins_is_never_called(world):
    server, runtime, stubs = world
    agent = Agent(name="e2e_mcp_outsider", model=MODEL, instructions="MCPDESK: answer with the weather tools.",
                  tools=[mcp_tool(server_url=stubs["outsider"].origin + "/mcp")])
    result = runtime.run(agent, "Weather in Oslo?", timeout=WAIT_SECONDS)
    assert result.status == "FAILED"
    assert "CONDUCTOR_AI_ALLOWED_ORIGINS" in str(execution(server, result.execution_id).get("reasonForIncompletion"))
    assert stubs["outsider"].requests == []


def test_http_tools_call_the_service_with_the_secret_and_the_models_arguments(world):
    server, runtime, stubs = world
    shop = stubs["shop"]
    agent = Agent(name="e2e_shop", model=MODEL, instructions="SHOP: order tea.", tools=[
        http_tool(name="create_order", description="Create an order.", url=shop.url + "/orders", method="POST",
                  headers={"Authorization": "Bearer ${ORDERS_KEY}"}, credentials=["ORDERS_KEY"],
                  input_schema={"type": "object", "properties": {"item": {"type": "string"},
                                                                 "note": {"type": "string"}}}),
        http_tool(name="lookup_stock", description="Stock of an item.", url=shop.url + "/stock",
                  input_schema={"type": "object", "properties": {"sku": {"type": "string"}}})])
    stream = runtime.stream(agent, "Order some tea")
    events = list(stream)
    result = stream.get_result()
    assert result.status == "COMPLETED", why(server, result)
    assert result.output["result"] == ("order ord-1 placed; 4 in stock; Unknown tool 'drop_tables'. "
                                       "Available tools: create_order, lookup_stock")
    post = next(r for r in shop.requests if r.method == "POST")
    assert post.headers["authorization"] == f"Bearer {ORDERS_KEY}"
    # the model's text reaches the service as it wrote it: it names no secret
    assert post.json() == {"item": "tea", "note": "${workflow.secrets.ORDERS_KEY}"}
    get = next(r for r in shop.requests if r.method == "GET")
    assert get.path == "/stock?sku=green%20tea"
    run = execution(server, result.execution_id)
    stored = json.dumps(run)
    assert ORDERS_KEY not in stored and "Bearer ${workflow.secrets.ORDERS_KEY}" in stored
    calls = {e.tool_name for e in events if e.type == "tool_call"}
    assert {"create_order", "lookup_stock"} <= calls


def test_agent_tool_runs_the_sub_agent_and_its_answer_is_the_tool_result(world):
    server, runtime, stubs = world
    manager = Agent(name="e2e_manager", model=MODEL, instructions="MANAGER: delegate weather questions.",
                    tools=[agent_tool(agent_defs.weather_agent())])
    result = runtime.run(manager, "Should I take an umbrella in Paris?", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", why(server, result)
    assert result.output["result"] == "Manager: Forecast: 18C and sunny in Paris"
    run = execution(server, result.execution_id)
    (sub,) = [t for t in run["tasks"] if t["taskType"] == "SUB_WORKFLOW"]
    assert sub["status"] == "COMPLETED" and sub["outputData"]["result"] == "Forecast: 18C and sunny in Paris"
    child = execution(server, sub["subWorkflowId"])
    assert [t["status"] for t in child["tasks"] if t["taskType"] == "get_weather"] == ["COMPLETED"]
    weather_chat = next(c for c in stubs["llm"].chats() if _system(c["messages"]).startswith("WEATHER")
                        and any(m.get("content") == "What is the weather in Paris?" for m in c["messages"]))
    assert weather_chat is not None


def test_wait_for_message_tool_takes_what_send_message_pushed(world):
    server, runtime, _stubs = world
    listener = Agent(name="e2e_listener", model=MODEL, instructions="LISTENER: wait for a message, then repeat it.",
                     tools=[wait_for_message_tool(name="wait_for_message", description="Wait for a message.")])
    handle = runtime.start(listener, "Listen")
    deadline = time.monotonic() + WAIT_SECONDS
    while not any(t["taskType"] == "PULL_WORKFLOW_MESSAGES" and t["status"] == "IN_PROGRESS"
                  for t in execution(server, handle.execution_id)["tasks"]):
        assert time.monotonic() < deadline, "the pull never started"
        time.sleep(0.2)
    runtime.send_message(handle.execution_id, {"text": "the parcel arrived"})
    result = handle.join(timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", why(server, result)
    assert result.output["result"] == "Got: the parcel arrived"


def test_index_and_search_tools_use_the_vector_store(world):
    server, runtime, _stubs = world
    librarian = Agent(name="e2e_librarian", model=MODEL, instructions="LIBRARIAN: remember, then recall.", tools=[
        index_tool(name="remember", description="Remember a note.", **EMBEDDER),
        search_tool(name="recall", description="Find notes.", max_results=1, **EMBEDDER)])
    result = runtime.run(librarian, "When does the shop open?", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", why(server, result)
    assert result.output["result"] == "Found: The tea shop opens at nine."
