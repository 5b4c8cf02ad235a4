"""Server-side agent tools as the compiler makes them (apps.agents.tools), from the
configurations the SDK's constructors send (``http_tool``, ``mcp_tool``, ``agent_tool``,
``wait_for_message_tool``, ``index_tool``, ``search_tool``): the ToolSpecs the model sees,
the enrich script run by the engine's own JavaScript evaluator, the MCP discovery before
the loop, and the refusals (400 naming the field, nothing registered)."""
from __future__ import annotations

import json

import pytest
from conductor.ai.agents import Agent, agent_tool, http_tool, image_tool, mcp_tool, wait_for_message_tool
from conductor.ai.agents.config_serializer import AgentConfigSerializer
from conductor.ai.agents.tool import api_tool, index_tool, search_tool

from apps.agents import tools as agent_tools
from apps.agents.compiler import compile_agent, validate
from apps.core.errors import InvalidInput
from apps.engine.evaluators import evaluate
from apps.metadata.secrets import template_names
from tests.agents import agent_defs

MODEL = agent_defs.MODEL


def config(agent) -> dict:
    return AgentConfigSerializer().serialize(agent)


def orders_tool():
    return http_tool(name="create_order", description="Create an order.", url="http://127.0.0.1:9/orders",
                     method="post", headers={"Authorization": "Bearer ${ORDERS_KEY}"}, credentials=["ORDERS_KEY"],
                     input_schema={"type": "object", "properties": {"item": {"type": "string"}}})


def stock_tool():
    return http_tool(name="lookup_stock", description="Stock of an item.", url="http://127.0.0.1:9/stock?shop=1")


def loop_tasks(wf: dict) -> list[dict]:
    return next(t for t in wf["tasks"] if t["type"] == "DO_WHILE")["loopOver"]


def by_ref(tasks: list[dict], ref: str) -> dict:
    return next(t for t in tasks if t["taskReferenceName"] == ref)


def resolved(value):
    """What a task's script receives for a compiled input (the engine's ``$${`` escape)."""
    if isinstance(value, str):
        return value.replace("$${", "${")
    if isinstance(value, list):
        return [resolved(v) for v in value]
    if isinstance(value, dict):
        return {k: resolved(v) for k, v in value.items()}
    return value


def enrich(wf: dict, tool_calls: list[dict], **extra) -> list[dict]:
    """Run the compiled ``{ref}_enrich_tools`` script on the model's tool calls."""
    dispatch = next(t for t in loop_tasks(wf) if t["type"] == "SWITCH")
    task = dispatch["decisionCases"]["tools"][0]
    assert task["type"] == "INLINE" and task["taskReferenceName"].endswith("_enrich_tools")
    assert "${" not in task["inputParameters"]["expression"]  # the engine would resolve it
    inputs = {**resolved({k: v for k, v in task["inputParameters"].items() if k != "expression"}),
              "toolCalls": tool_calls, "prompt": "the user's prompt", "sessionId": "", **extra}
    return evaluate("javascript", task["inputParameters"]["expression"], inputs)


def call(name: str, ref: str = "call_1", **args) -> dict:
    return {"taskReferenceName": ref, "name": name, "type": "SIMPLE", "inputParameters": {**args, "method": name}}


def test_http_tools_are_specs_and_calls_become_http_tasks_with_secret_headers():
    wf = compile_agent(config(Agent(name="shop", model=MODEL, tools=[orders_tool(), stock_tool(),
                                                                     agent_defs.get_weather]))).workflow_def
    llm = next(t for t in loop_tasks(wf) if t["type"] == "LLM_CHAT_COMPLETE")
    assert [(s["name"], s["type"]) for s in llm["inputParameters"]["tools"]] == [
        ("create_order", "HTTP"), ("lookup_stock", "HTTP"), ("get_weather", "SIMPLE")]
    assert llm["inputParameters"]["tools"][0]["inputSchema"]["properties"] == {"item": {"type": "string"}}
    tasks = enrich(wf, [call("create_order", item="tea", note="${workflow.secrets.ORDERS_KEY}"),
                        call("lookup_stock", "call_2", sku="green tea", tags=["a", "b"]),
                        call("get_weather", "call_3", city="${workflow.input.x}"),
                        call("drop_tables", "call_4")])
    post, get, worker, unknown = tasks
    assert post["type"] == "HTTP" and post["taskReferenceName"] == "call_1" and post["optional"] is True
    request = post["inputParameters"]["http_request"]
    assert request["uri"] == "http://127.0.0.1:9/orders" and request["method"] == "POST"
    assert request["headers"] == {"Authorization": "Bearer ${workflow.secrets.ORDERS_KEY}"}
    # what the model wrote is escaped: the task receives the text, never a secret
    assert request["body"] == {"item": "tea", "note": "$${workflow.secrets.ORDERS_KEY}"}
    assert template_names(post) == {"ORDERS_KEY"}
    assert template_names({"inputParameters": {"body": request["body"]}}) == set()
    assert post["inputParameters"]["_agent_tool_name"] == "create_order"
    assert get["inputParameters"]["http_request"]["uri"] == \
        "http://127.0.0.1:9/stock?shop=1&sku=green%20tea&tags=a&tags=b"
    assert "body" not in get["inputParameters"]["http_request"]
    # a worker tool's call goes through as it was, its arguments escaped the same way
    assert worker == {"taskReferenceName": "call_3", "name": "get_weather", "type": "SIMPLE",
                      "inputParameters": {"city": "$${workflow.input.x}", "method": "get_weather"}}
    assert unknown["type"] == "INLINE" and "Unknown tool 'drop_tables'" in unknown["inputParameters"]["errorMessage"]
    assert evaluate("javascript", unknown["inputParameters"]["expression"], unknown["inputParameters"]) == {
        "error": unknown["inputParameters"]["errorMessage"], "is_error": True}


def test_an_agent_with_only_worker_tools_keeps_its_plain_fork():
    wf = compile_agent(config(agent_defs.weather_agent())).workflow_def
    dispatch = next(t for t in loop_tasks(wf) if t["type"] == "SWITCH")
    assert [t["type"] for t in dispatch["decisionCases"]["tools"]] == ["FORK_JOIN_DYNAMIC", "JOIN"]
    assert not any(t["taskReferenceName"].endswith(("_mcp_prepare", "_agent_tools")) for t in wf["tasks"])


def test_mcp_tools_are_discovered_in_the_run_before_the_loop():
    agent = Agent(name="desk", model=MODEL, tools=[
        mcp_tool(server_url="http://127.0.0.1:9/mcp", tool_names=["get_weather", "echo"],
                 headers={"X-Team": "blue", "Authorization": "Bearer ${MCP_TOKEN}"}, credentials=["MCP_TOKEN"]),
        mcp_tool(server_url="http://127.0.0.1:9/mcp", name="more", tool_names=["lookup"]),
        stock_tool()])
    compiled = compile_agent(config(agent))
    wf = compiled.workflow_def
    assert compiled.required_workers == []
    lists = [t for t in wf["tasks"] if t["type"] == "LIST_MCP_TOOLS"]
    assert [t["inputParameters"] for t in lists] == [{"mcpServer": "http://127.0.0.1:9/mcp", "headers": {
        "X-Team": "blue", "Authorization": "Bearer ${workflow.secrets.MCP_TOKEN}"}}]  # one task a server
    prepare = by_ref(wf["tasks"], "desk_mcp_prepare")
    llm = next(t for t in loop_tasks(wf) if t["type"] == "LLM_CHAT_COMPLETE")
    assert llm["inputParameters"]["tools"] == "${desk_mcp_prepare.output.result.tools}"
    found = [{"name": n, "description": n + "!", "inputSchema": {"type": "object"}}
             for n in ("get_weather", "echo", "broken", "lookup_stock", "lookup")]
    assert "${" not in prepare["inputParameters"]["expression"]
    merged = evaluate("javascript", prepare["inputParameters"]["expression"],
                      {**resolved(prepare["inputParameters"]), "discovered_0": found})
    # tool_names of both mcp_tools; the agent's own lookup_stock keeps its name
    assert resolved(prepare["inputParameters"]["servers"])[0]["toolNames"] == ["echo", "get_weather", "lookup"]
    assert [(t["name"], t["type"]) for t in merged["tools"]] == [
        ("lookup_stock", "HTTP"), ("get_weather", "CALL_MCP_TOOL"), ("echo", "CALL_MCP_TOOL"),
        ("lookup", "CALL_MCP_TOOL")]
    assert merged["mcpConfig"]["echo"] == {"mcpServer": "http://127.0.0.1:9/mcp", "headers": {
        "X-Team": "blue", "Authorization": "Bearer ${workflow.secrets.MCP_TOKEN}"}}
    one_without_names = config(Agent(name="desk", model=MODEL, tools=[
        mcp_tool(server_url="http://127.0.0.1:9/mcp", tool_names=["echo"]),
        mcp_tool(server_url="http://127.0.0.1:9/mcp", name="all_of_them")]))
    prepared = by_ref(compile_agent(one_without_names).workflow_def["tasks"], "desk_mcp_prepare")
    assert prepared["inputParameters"]["servers"][0]["toolNames"] is None  # every tool of the server
    (task,) = enrich(wf, [call("echo", text="hi")], mcp=merged["mcpConfig"])
    assert task["type"] == "CALL_MCP_TOOL" and task["inputParameters"] == {
        "mcpServer": "http://127.0.0.1:9/mcp", "method": "echo", "arguments": {"text": "hi"},
        "headers": merged["mcpConfig"]["echo"]["headers"], "_agent_tool_name": "echo"}
    assert task["retryCount"] == 2 and task["optional"] is True


def test_agent_tool_runs_the_agent_as_a_sub_workflow_on_the_request():
    boss = Agent(name="boss", model=MODEL, tools=[agent_tool(agent_defs.weather_agent(), retry_count=0)])
    compiled = compile_agent(config(boss))
    wf = compiled.workflow_def
    assert compiled.required_workers == ["get_weather"]  # the sub-agent's worker
    defs = by_ref(wf["tasks"], "boss_agent_tools")
    child = resolved(defs["inputParameters"]["_agent_tool_defs"]["t0"])
    assert child["name"] == "e2e_weather" and child["metadata"]["classifier"] == "agent"
    # the child's own expressions are kept for the child, escaped in the parent
    assert "${workflow.input.prompt}" in str(child) and "$${workflow.input.prompt}" in str(defs)
    (task,) = enrich(wf, [call("e2e_weather", request="Weather in Oslo?")])
    assert task["type"] == "SUB_WORKFLOW" and task["name"] == "e2e_weather" and task["retryCount"] == 0
    assert task["subWorkflowParam"] == {"name": "e2e_weather", "version": 1,
                                        "workflowDefinition": "${workflow.variables._agent_tool_defs.t0}"}
    assert task["inputParameters"]["prompt"] == "Weather in Oslo?"
    (task,) = enrich(wf, [call("e2e_weather", topic="rain")])
    assert task["inputParameters"]["prompt"] == "rain"  # else the first text argument
    (task,) = enrich(wf, [call("e2e_weather")])
    assert task["inputParameters"]["prompt"] == "the user's prompt"  # else the user's prompt


def test_wait_for_message_and_rag_tools():
    agent = Agent(name="kb", model=MODEL, tools=[
        wait_for_message_tool(name="wait_for_message", description="Wait.", batch_size=3, blocking=False),
        index_tool(name="remember", description="Index.", vector_db="pgvectordb", index="notes",
                   embedding_model_provider="openai", embedding_model="text-embedding-3-small"),
        search_tool(name="recall", description="Search.", vector_db="pgvectordb", index="notes",
                    embedding_model_provider="openai", embedding_model="text-embedding-3-small", max_results=2)])
    wf = compile_agent(config(agent)).workflow_def
    llm = next(t for t in loop_tasks(wf) if t["type"] == "LLM_CHAT_COMPLETE")
    assert [s["type"] for s in llm["inputParameters"]["tools"]] == [
        "PULL_WORKFLOW_MESSAGES", "LLM_INDEX_TEXT", "LLM_SEARCH_INDEX"]
    pull, index, search = enrich(wf, [call("wait_for_message"), call("remember", "c2", text="t", docId="d"),
                                      call("recall", "c3", query="q", index="someone_elses")])
    assert pull["type"] == "PULL_WORKFLOW_MESSAGES" and pull["inputParameters"]["batchSize"] == 3
    assert pull["inputParameters"]["blocking"] is False and "optional" not in pull
    assert index["type"] == "LLM_INDEX_TEXT" and index["inputParameters"]["docId"] == "d"
    assert index["inputParameters"]["namespace"] == "default_ns"
    # the configured index wins over the model's
    assert search["inputParameters"]["index"] == "notes" and search["inputParameters"]["maxResults"] == 2


BAD = [
    (image_tool(name="draw", description="d", llm_provider="openai", model="dall-e-3"), "toolType",
     "no GENERATE_IMAGE system task"),
    (api_tool(url="http://127.0.0.1:9/openapi.json"), "toolType", "OpenAPI discovery"),
    (http_tool(name="h", description="d", url="file:///etc/passwd"), "config.url", "http(s) URL"),
    (http_tool(name="h", description="d", url="http://x/", method="TRACE"), "config.method", "one of"),
    (mcp_tool(server_url="ftp://x/mcp"), "config.server_url", "http(s) URL"),
    (wait_for_message_tool(name="w", description="d", batch_size=0), "config.batchSize", "positive"),
]


@pytest.mark.parametrize("tool,field,message", BAD, ids=[b[1] + "-" + b[2][:12] for b in BAD])
def test_refused_tools_name_the_field(tool, field, message):
    problems = validate(config(Agent(name="a", model=MODEL, tools=[tool])))
    assert [p["path"] for p in problems] == [f"agentConfig.tools[0].{field}"], problems
    assert message in problems[0]["message"]


def test_an_agent_tools_agent_is_validated_with_its_path():
    cfg = config(Agent(name="boss", model=MODEL, tools=[agent_tool(agent_defs.weather_agent())]))
    cfg["tools"][0]["config"]["agentConfig"]["maxTurns"] = 0
    cfg["tools"][0]["config"]["agentConfig"]["tools"][0]["toolType"] = "generate_video"
    with pytest.raises(InvalidInput):
        compile_agent(cfg)
    assert sorted(p["path"] for p in validate(cfg)) == [
        "agentConfig.tools[0].config.agentConfig.maxTurns",
        "agentConfig.tools[0].config.agentConfig.tools[0].toolType"]
    del cfg["tools"][0]["config"]["agentConfig"]
    assert [p["path"] for p in validate(cfg)] == ["agentConfig.tools[0].config.agentConfig"]


def test_credential_placeholders_become_secret_references():
    assert agent_tools.secret_headers({"A": "Bearer ${KEY}", "B": "${workflow.secrets.X}", "C": 3}) == {
        "A": "Bearer ${workflow.secrets.KEY}", "B": "${workflow.secrets.X}", "C": "3"}


# --- through the API (Django test client) ---------------------------------------------

from tests.ai.conftest import api  # noqa: E402,F401 - fixtures
from tests.auth.conftest import as_role, auth_on  # noqa: E402,F401 - fixtures


def test_refused_tool_types_get_400_at_every_endpoint_and_nothing_is_registered(api):
    cfg = config(Agent(name="e2e_painter", model=MODEL, tools=[
        agent_defs.get_weather, image_tool(name="draw", description="Draw.", llm_provider="openai", model="m")]))
    for path in ("/agent/compile", "/agent/deploy", "/agent/start"):
        body = api.refused(api.post(path, {"agentConfig": cfg, "prompt": "hi"}), 400)
        assert [e["path"] for e in body["validationErrors"]] == ["agentConfig.tools[1].toolType"], body
    assert api.get("/metadata/workflow/e2e_painter").status_code == 404
    assert api.get("/metadata/taskdefs/get_weather").status_code == 404


def test_an_agent_whose_tool_names_a_secret_is_an_admins_to_start(as_role):
    cfg = config(Agent(name="e2e_orders", model=MODEL, tools=[orders_tool()]))
    operator = as_role("operator")
    refused = operator.post("/agent/start", {"agentConfig": cfg, "prompt": "hi"})
    assert refused.status_code == 400 and "only an admin may start it" in refused.json()["message"]
    assert operator.post("/agent/compile", {"agentConfig": cfg}).status_code == 200
    plain = config(Agent(name="e2e_stock", model=MODEL, tools=[stock_tool()]))
    assert operator.post("/agent/start", {"agentConfig": plain, "prompt": "hi"}).status_code == 200


def test_an_agent_tool_within_an_agent_tool_gets_its_definition_as_compiled():
    boss = Agent(name="boss", model=MODEL, tools=[agent_tool(agent_defs.weather_agent())])
    top = Agent(name="top", model=MODEL, tools=[agent_tool(boss)])
    wf = compile_agent(config(top)).workflow_def
    kept = by_ref(wf["tasks"], "top_agent_tools")["inputParameters"]["_agent_tool_defs"]["t0"]
    assert "${" not in json.dumps(kept).replace("$${", "")  # every expression escaped: nothing resolves here
    expected = {**compile_agent(config(boss)).workflow_def, "metadata": {"agent_sdk": "conductor", "classifier": "agent"}}
    assert resolved(kept) == expected  # what the SET_VARIABLE stores: the boss as compiled, its own escapes kept
