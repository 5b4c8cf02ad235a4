"""Strategy ``manual`` and a swarm's ``handoffs`` conditions: the compiled shapes and the
400s (plain Python, no database), then end to end through the Python SDK's AgentRuntime
(conductor-python 2.0.0) against a real server (uvicorn + qcluster, API auth on, SQLite or
the session's PostgreSQL) whose ``openai`` provider is the loopback stub answering from
``strategy_defs.script``. The teams are written as the SDK's documentation writes them
(``strategy_defs``)."""
from __future__ import annotations

import json
import time

import httpx
import pytest
from conductor.ai.agents.config_serializer import AgentConfigSerializer

from apps.agents.compiler import compile_agent, validate
from apps.core.errors import InvalidInput
from apps.engine.evaluators import evaluate
from tests.agents import strategy_defs
from tests.agents.test_agents_sdk import WAIT_SECONDS, api_get, world  # noqa: F401 - world: the shared fixture
from tests.ai.conftest import api  # noqa: F401 - fixture

MODEL = "openai/gpt-4o-mini"


def agent(name, **extra) -> dict:
    return {"name": name, "model": MODEL, "instructions": f"{name} instructions", **extra}


def swarm(**extra) -> dict:
    return {"name": "team", "model": MODEL, "strategy": "swarm", "instructions": "FRONT",
            "tools": [{"name": "lookup"}], "agents": [agent("x"), agent("y", tools=[{"name": "probe"}])], **extra}


def js(inputs: dict, **bindings):
    return evaluate("javascript", inputs["expression"], {**inputs, **bindings})


# --- the compiled shapes (no database) -----------------------------------------------------

RULES = [{"type": "on_text_mention", "text": "Refund", "target": "x"},
         {"type": "on_tool_result", "toolName": "lookup", "resultContains": "DAMAGED", "target": "y"},
         {"type": "on_condition", "taskName": "team_handoff_y", "target": "y"}]


def test_swarm_conditions_compile_to_a_resolver_and_the_sdk_condition_worker():
    compiled = compile_agent(swarm(handoffs=RULES))
    init, loop = compiled.workflow_def["tasks"][:2]
    assert init["inputParameters"]["last_response"] == "" and init["inputParameters"]["_last_tool_results"] == []
    assert [t["taskReferenceName"] for t in loop["loopOver"]] == [
        "team_switch", "team_handoff_condition", "team_handoff_check", "team_update_active"]
    condition, check = loop["loopOver"][1:3]
    # OnCondition is a Python callable: the SDK's own worker for the swarm runs it
    assert (condition["type"], condition["name"]) == ("SIMPLE", "team_handoff_check")
    assert compiled.required_workers == ["lookup", "probe", "team_handoff_check"]
    ip = check["inputParameters"]
    assert check["type"] == "INLINE" and ip["condition"] == "${team_handoff_condition.output}"
    base = {"active": "0", "is_transfer": False, "transfer_to": "", "result": "", "tool_results": [], "condition": None}
    assert js(ip, **{**base, "result": "a REFUND, please"}) == {"handoff": True, "active_agent": "1"}
    damaged = [{"name": "lookup", "output": {"result": "box damaged"}}]
    assert js(ip, **{**base, "tool_results": damaged}) == {"handoff": True, "active_agent": "2"}
    assert js(ip, **{**base, "tool_results": [{"name": "lookup", "output": {"result": "fine"}}]}) == {
        "handoff": False, "active_agent": "0"}
    assert js(ip, **{**base, "condition": {"handoff": True, "active_agent": "2"}}) == {
        "handoff": True, "active_agent": "2"}
    # a transfer tool wins over the conditions; a condition naming the agent that spoke is skipped
    assert js(ip, **{**base, "is_transfer": True, "transfer_to": "y", "result": "refund"}) == {
        "handoff": True, "active_agent": "2"}
    assert js(ip, **{**base, "active": "1", "result": "refund"}) == {"handoff": False, "active_agent": "1"}
    # the first condition that holds wins, in their order
    assert js(ip, **{**base, "result": "refund", "tool_results": damaged})["active_agent"] == "1"


def test_allowed_transitions_bound_the_conditions():
    compiled = compile_agent(swarm(handoffs=RULES[:1], allowedTransitions={"team": ["y"], "y": ["x"]}))
    check = compiled.workflow_def["tasks"][1]["loopOver"][1]
    base = {"is_transfer": False, "transfer_to": "", "tool_results": None, "result": "refund"}
    assert js(check["inputParameters"], active="0", **base) == {"handoff": False, "active_agent": "0"}
    assert js(check["inputParameters"], active="2", **base) == {"handoff": True, "active_agent": "1"}
    assert compiled.required_workers == ["lookup", "probe"]  # no on_condition: no worker


def test_the_agent_owning_a_watched_tool_ends_its_turn_after_a_matching_tool_batch():
    compiled = compile_agent(swarm(handoffs=RULES[1:2]))
    cases = compiled.workflow_def["tasks"][1]["loopOver"][0]["decisionCases"]
    own = cases["0"][0]["subWorkflowParam"]["workflowDefinition"]
    loop = own["tasks"][1]
    dispatch = next(t for t in loop["loopOver"] if t["taskReferenceName"] == "team_dispatch")
    tools_case = dispatch["decisionCases"]["tools"]
    assert [t["taskReferenceName"] for t in tools_case] == ["team_tools", "team_tools_join", "team_tool_results",
                                                            "team_tool_results_set"]
    record = tools_case[2]["inputParameters"]
    calls = [{"name": "lookup", "taskReferenceName": "c1", "inputParameters": {"order": 7}}]
    assert js(record, toolCalls=calls, join={"c1": {"result": "it is Damaged"}}) == {
        "results": [{"name": "lookup", "output": {"result": "it is Damaged"}}], "matched": True}
    assert js(record, toolCalls=calls, join={"c1": {"result": "fine"}})["matched"] is False
    assert own["outputParameters"]["tool_results"] == "${workflow.variables._last_tool_results}"
    bindings = {"team_loop": {"iteration": 1}, "_stop_requested": False, "team_route": {"result": "tools"},
                "team_llm": {"finishReason": "TOOL_CALLS"}, "_tool_handoff": False}
    assert evaluate("javascript", loop["loopCondition"], bindings) is True
    assert evaluate("javascript", loop["loopCondition"], {**bindings, "_tool_handoff": True}) is False
    # y's own tool is not watched: its loop is the usual one; the turn's setter keeps the results
    y = cases["2"][0]["subWorkflowParam"]["workflowDefinition"]
    assert "_tool_handoff" not in y["tasks"][1]["loopCondition"] and "tool_results" not in y["outputParameters"]
    assert cases["2"][-1]["inputParameters"]["_last_tool_results"] == "${team_agent_2_y.output.tool_results}"


def test_manual_compiles_a_human_pick_each_turn():
    compiled = compile_agent({"name": "desk", "model": MODEL, "strategy": "manual", "maxTurns": 3,
                              "agents": [agent("x"), agent("y")], "termination": {"type": "text_mention",
                                                                                  "text": "BYE"}})
    assert compiled.required_workers == []
    init, loop = compiled.workflow_def["tasks"]
    assert init["inputParameters"]["conversation"] == "${workflow.input.prompt}"
    assert [t["taskReferenceName"] for t in loop["loopOver"]] == [
        "desk_pick_agent", "desk_process_selection", "desk_switch", "desk_termination"]
    human, select, switch = loop["loopOver"][:3]
    assert human["type"] == "HUMAN"
    assert human["inputParameters"]["response_schema"]["properties"]["selected"]["enum"] == ["x", "y"]
    assert human["inputParameters"]["agent_options"] == {"x": "0", "y": "1"}
    assert [t["taskReferenceName"] for t in switch["decisionCases"]["1"]] == ["desk_agent_1_y", "desk_concat_1",
                                                                             "desk_set_1"]
    ip = select["inputParameters"]
    for answer, index in [({"selected": "y"}, "1"), ({"agent": "x"}, "0"), ({"selected": "1"}, "1"),
                          ("y", "1"), (None, "0"), ({"selected": "nobody"}, "none")]:
        assert js(ip, human_output=answer) == {"selected": index}
    assert "$.desk_loop['iteration'] < 3" in loop["loopCondition"]
    assert compiled.workflow_def["outputParameters"]["result"] == "${workflow.variables.conversation}"


@pytest.mark.parametrize("config,field", [
    (swarm(handoffs=[{"type": "on_vibes", "target": "x"}]), "agentConfig.handoffs[0].type"),
    (swarm(handoffs=[{"type": "on_text_mention", "text": "x", "target": "nobody"}]), "agentConfig.handoffs[0].target"),
    (swarm(handoffs=[{"type": "on_text_mention", "text": " ", "target": "x"}]), "agentConfig.handoffs[0].text"),
    (swarm(handoffs=[{"type": "on_tool_result", "target": "x"}]), "agentConfig.handoffs[0].toolName"),
    (swarm(handoffs=[{"type": "on_tool_result", "toolName": "nope", "target": "x"}]),
     "agentConfig.handoffs[0].toolName"),
    (swarm(handoffs=[{"type": "on_tool_result", "toolName": "lookup", "resultContains": 3, "target": "x"}]),
     "agentConfig.handoffs[0].resultContains"),
    (swarm(handoffs=[{"type": "on_condition", "target": "x"}]), "agentConfig.handoffs[0].taskName"),
    (swarm(handoffs={"type": "on_condition"}), "agentConfig.handoffs"),
    ({**swarm(handoffs=RULES), "strategy": "round_robin"}, "agentConfig.handoffs"),
    ({"name": "m", "model": MODEL, "strategy": "manual", "agents": []}, "agentConfig.agents"),
    ({"name": "m", "model": MODEL, "strategy": "manual", "agents": [agent("x")], "guardrails": [{"name": "g"}]},
     "agentConfig.guardrails"),
    ({"name": "m", "model": MODEL, "strategy": "manual", "agents": [agent("x")],
      "termination": {"type": "token_usage", "maxTotalTokens": 9}}, "agentConfig.termination.type"),
    ({"name": "m", "model": MODEL, "strategy": "manual", "agents": [agent("x")], "allowedTransitions": {"x": []}},
     "agentConfig.allowedTransitions"),
])
def test_refusals_name_the_field(config, field):
    assert field in [e["path"] for e in validate(config)]
    with pytest.raises(InvalidInput) as err:
        compile_agent(config)
    assert field in [e["path"] for e in err.value.validation_errors]


# --- deploy through the API (in process) ----------------------------------------------------

def test_deploy_stores_both_as_normal_definitions_and_refuses_bad_conditions_whole(api):
    serializer = AgentConfigSerializer()
    for team, workers in ((strategy_defs.helpdesk_agent(), ["e2e_helpdesk_handoff_check", "lookup_order"]),
                          (strategy_defs.concierge_agent(), [])):
        body = api.post("/agent/deploy", {"agentConfig": serializer.serialize(team)})
        assert body.status_code == 200, body.content[:500]
        assert body.json()["requiredWorkers"] == workers
        stored = api.get(f"/agent/definitions/{team.name}").json()
        assert stored["metadata"]["classifier"] == "agent" and stored["tasks"]
    bad = serializer.serialize(strategy_defs.helpdesk_agent())
    bad["name"] = "e2e_bad_helpdesk"
    bad["handoffs"][1]["toolName"] = "no_such_tool"
    body = api.refused(api.post("/agent/deploy", {"agentConfig": bad}), 400)
    assert [e["path"] for e in body["validationErrors"]] == ["agentConfig.handoffs[1].toolName"]
    assert api.get("/agent/definitions/e2e_bad_helpdesk").status_code == 404


# --- end to end through the SDK ------------------------------------------------------------

@pytest.fixture(scope="module")
def teams(world):
    """tests/agents/test_agents_sdk.py's ``world`` (a server, the stub LLM, an
    AgentRuntime), the stub answering from ``strategy_defs.script`` for this module."""
    server, runtime, llm = world
    llm.chat_handler = strategy_defs.script
    return server, runtime, llm


def helpdesk_calls(llm, prompt: str) -> int:
    return sum(1 for c in llm.chats() if any(m.get("role") == "system" and str(m.get("content")).startswith("HELPDESK")
                                             for m in c["messages"])
               and any(m.get("role") == "user" and m.get("content") == prompt for m in c["messages"]))


@pytest.mark.e2e
@pytest.mark.parametrize("prompt, handed_to, helpdesk_turns, worker_said", [
    # OnTextMention("Refund") (the SDK's worker sees it too)
    ("I want my money back", "e2e_billing", 1, {"active_agent": "1", "handoff": True}),
    # OnToolResult: the helpdesk does not speak again after the lookup
    ("Where is order 7", "e2e_billing", 1, {"active_agent": "0", "handoff": False}),
    # OnCondition, run by the SDK's handoff_check worker
    ("My app will not start", "e2e_tech", 1, {"active_agent": "2", "handoff": True}),
    # the lookup's answer matches nothing: the helpdesk reads it and answers; nobody takes over
    ("Where is order 8", None, 2, {"active_agent": "0", "handoff": False}),
])
def test_swarm_handoff_conditions(teams, prompt, handed_to, helpdesk_turns, worker_said):
    server, runtime, llm = teams
    stream = runtime.stream(strategy_defs.helpdesk_agent(), prompt)
    events = list(stream)
    assert [e.target for e in events if e.type == "handoff"] == ["e2e_helpdesk"] + ([handed_to] if handed_to else [])
    result = stream.get_result()
    assert result.status == "COMPLETED", result.error
    turns = result.output["result"].split("\n\n")
    assert turns[0] == prompt
    expected_last = {"e2e_billing": "[e2e_billing]: billing: your refund is on its way",
                     "e2e_tech": "[e2e_tech]: tech: restart the app",
                     None: "[e2e_helpdesk]: helpdesk: order 8: on its way"}[handed_to]
    assert turns[-1] == expected_last
    assert helpdesk_calls(llm, prompt) == helpdesk_turns
    run = api_get(server, f"/agent/execution/{stream.handle.execution_id}")
    conditions = [t for t in run["tasks"] if t["taskType"] == "e2e_helpdesk_handoff_check"]
    assert conditions and all(t["status"] == "COMPLETED" for t in conditions)
    assert conditions[0]["outputData"] == worker_said


def wait_for_pick(handle, after: str | None = None):
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        status = handle.get_status()
        if status.is_waiting and status.pending_tool["taskRefName"] != after:
            return status.pending_tool
        time.sleep(0.3)
    raise AssertionError("no agent pick waited")


@pytest.mark.e2e
def test_manual_team_a_person_picks_each_turn_through_respond(teams):
    server, runtime, llm = teams
    handle = runtime.start(strategy_defs.concierge_agent(), "I need help")
    first = wait_for_pick(handle)
    assert first["response_schema"]["properties"]["selected"]["enum"] == ["e2e_billing", "e2e_tech"]
    assert first["parameters"]["conversation"] == "I need help"
    handle.respond({"selected": "e2e_tech"})
    second = wait_for_pick(handle, after=first["taskRefName"])
    assert second["parameters"]["conversation"] == "I need help\n\n[e2e_tech]: tech: restart the app"
    handle.respond({"selected": "e2e_billing"})
    result = handle.join(timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == ("I need help\n\n[e2e_tech]: tech: restart the app\n\n"
                                       "[e2e_billing]: billing: your refund is on its way")
    run = api_get(server, f"/agent/execution/{handle.execution_id}")
    children = [api_get(server, f"/agent/execution/{t['subWorkflowId']}")["agentName"]
                for t in run["tasks"] if t["taskType"] == "SUB_WORKFLOW"]
    assert children == ["e2e_tech", "e2e_billing"]
    # nothing waits any more (maxTurns=2): another answer is Conductor's 409
    r = httpx.post(f"{server.url}/agent/{handle.execution_id}/respond", json={"selected": "e2e_tech"},
                   headers=server.auth_headers(), timeout=10)
    assert r.status_code == 409


# --- plan_execute ---------------------------------------------------------------------------

def harness(**extra) -> dict:
    return {"name": "h", "model": MODEL, "strategy": "plan_execute", "planner": {"name": "h_planner"},
            "tools": [{"name": "add"}, {"name": "check"}], **extra}


def test_plan_execute_compiles_the_harness_and_plans_to_normal_workflows():
    compiled = compile_agent(harness(fallback={"name": "h_fallback", "tools": [{"name": "add"}]}))
    assert compiled.required_workers == ["add", "check"]
    tasks = compiled.workflow_def["tasks"]
    assert [t["taskReferenceName"] for t in tasks] == ["h_planner", "h_extract_json", "h_plan_and_compile",
                                                       "h_compile_gate", "h_output_select"]
    assert "## Available tools" in tasks[0]["inputParameters"]["prompt"]
    assert tasks[0]["subWorkflowParam"]["workflowDefinition"]["tasks"][1]["type"] == "DO_WHILE"  # an agent
    gate = tasks[3]
    assert [t["taskReferenceName"] for t in gate["decisionCases"]["compile_failed"]] == [
        "h_compile_fb_prompt", "h_compile_fallback", "h_compile_fallback_set"]
    run = gate["defaultCase"]
    assert run[0]["optional"] is True and run[0]["subWorkflowParam"]["workflowDefinition"] == (
        "${h_plan_and_compile.output.result.workflowDef}")
    # the extraction takes the run's static plan first, else the planner's last json fence
    extract = tasks[1]["inputParameters"]
    assert js(extract, staticPlan={"steps": []}, raw="x") == {"plan": {"steps": []}, "text": "x"}
    assert js(extract, staticPlan=None, raw='a ```json\n{"steps": 1}\n``` b')["plan"] == '{"steps": 1}'
    plan = {"steps": [{"id": "one", "operations": [{"tool": "add", "args": {"a": 1}}]},
                      {"id": "two", "depends_on": ["one"], "parallel": True,
                       "operations": [{"tool": "add", "args": {"a": {"$ref": "one"}}}, {"tool": "add", "args": {}}]}],
            "validation": [{"tool": "check", "args": {}}], "on_failure": [{"tool": "add", "args": {"a": 0}}]}
    out = js(tasks[2]["inputParameters"], planJson=plan)
    assert out["error"] is None and out["stats"] == {"stepCount": 2, "taskCount": 7}
    wf = out["workflowDef"]
    assert wf["name"] == "pe_h_plan" and [t["type"] for t in wf["tasks"]] == [
        "SIMPLE", "FORK_JOIN", "JOIN", "INLINE", "SIMPLE", "INLINE", "SWITCH"]
    assert wf["tasks"][1]["forkTasks"][0][0]["inputParameters"] == {"a": "${s_one_0.output}"}
    assert [t["type"] for t in wf["tasks"][6]["decisionCases"]["failed"]] == ["SIMPLE", "TERMINATE"]
    # a script's text is resolved as a template before it runs: none may hold one
    assert all("${" not in t["inputParameters"]["expression"] for t in tasks if t["type"] == "INLINE")
    checks = wf["tasks"][5]["inputParameters"]
    assert js(checks, checks=[{"result": "fine"}]) == "passed"
    assert js(checks, checks=[{"passed": False}]) == "failed" and js(checks, checks=[{"result": "ERROR: x"}]) == "failed"


@pytest.mark.parametrize("plan, error", [
    ({"steps": []}, "Plan must have a non-empty steps array"),
    ("not json", "Invalid plan JSON"),
    ({"steps": [{"id": "a", "operations": [{"tool": "zap", "args": {}}]}]}, "uses unknown tool 'zap'"),
    ({"steps": [{"id": "a", "depends_on": ["b"], "operations": [{"tool": "add", "args": {}}]},
                {"id": "b", "depends_on": ["a"], "operations": [{"tool": "add", "args": {}}]}]}, "Cycle in depends_on"),
    ({"steps": [{"id": "a", "operations": [{"tool": "add", "args": {"x": {"$ref": "b"}}}]},
                {"id": "b", "operations": [{"tool": "add", "args": {}}]}]}, "does not declare it in depends_on"),
    ({"steps": [{"id": "a", "operations": [{"tool": "add", "generate": {"output_schema": "{}"}}]}]},
     "generate needs instructions"),
    ({"steps": [{"id": "a", "operations": [{"tool": "add", "generate": {
        "instructions": "x", "output_schema": '{"type": "object", "properties": {}}'}}]}]}, "looks like a JSON Schema"),
])
def test_a_plan_that_does_not_compile_is_an_error_not_a_workflow(plan, error):
    compiled = compile_agent(harness())
    out = js(compiled.workflow_def["tasks"][2]["inputParameters"], planJson=plan)
    assert out["workflowDef"] is None and error in out["error"]


def test_a_plan_may_call_the_harness_worker_tools_only():
    compiled = compile_agent(harness(tools=[{"name": "add"}, {"name": "ask", "toolType": "human"}]))
    prompt = compiled.workflow_def["tasks"][0]["inputParameters"]["prompt"]
    assert "- add" in prompt and "- ask" not in prompt
    plan = {"steps": [{"id": "a", "operations": [{"tool": "ask", "args": {}}]}]}
    assert "unknown tool 'ask'" in js(compiled.workflow_def["tasks"][2]["inputParameters"], planJson=plan)["error"]


def test_a_generate_operation_asks_the_model_for_the_tool_arguments():
    compiled = compile_agent(harness())
    plan = {"steps": [{"id": "a", "operations": [{"tool": "add", "args": {"n": 1}}]},
                      {"id": "b", "depends_on": ["a"], "operations": [{"tool": "add", "generate": {
                          "instructions": "Sum it.", "output_schema": '{"n": 0, "why": "..."}',
                          "context": {"$ref": "a"}}}]}]}
    wf = js(compiled.workflow_def["tasks"][2]["inputParameters"], planJson=plan)["workflowDef"]
    assert [t["type"] for t in wf["tasks"]] == ["SIMPLE", "LLM_CHAT_COMPLETE", "INLINE", "SWITCH"]
    llm, parse, gate = wf["tasks"][1:]
    assert (llm["inputParameters"]["llmProvider"], llm["inputParameters"]["model"]) == ("openai", "gpt-4o-mini")
    assert llm["inputParameters"]["messages"][1]["message"] == "Sum it.\n\nContext:\n${s_a_0.output}\n\nRespond as json."
    tool = gate["decisionCases"]["ok"][0]
    assert tool["name"] == "add" and tool["inputParameters"] == {"n": "${p_b_2.output.result.n}",
                                                                 "why": "${p_b_2.output.result.why}"}
    assert wf["outputParameters"]["result"] == "${t_b_3.output.result}"
    assert js(parse["inputParameters"], llmOut='```json\n{"n": 2}\n```') == {"n": 2}
    assert js(parse["inputParameters"], llmOut={"n": 3}) == {"n": 3}
    assert js(parse["inputParameters"], llmOut="two")["__parse_error"] is True
    assert evaluate("javascript", gate["expression"], {"parsed": {"__parse_error": True}}) == "err"
    assert evaluate("javascript", gate["expression"], {"parsed": {"n": 2}}) == "ok"
    assert all("${" not in t["inputParameters"]["expression"] for t in (parse,))


def test_a_validation_success_condition_reads_the_tool_answer():
    compiled = compile_agent(harness())
    plan = {"steps": [{"id": "a", "operations": [{"tool": "add", "args": {}}]}],
            "validation": [{"tool": "check", "args": {}, "success_condition": "$.score >= 3"}]}
    wf = js(compiled.workflow_def["tasks"][2]["inputParameters"], planJson=plan)["workflowDef"]
    assert [t["taskReferenceName"] for t in wf["tasks"]] == ["s_a_0", "val_1", "val_eval_2", "val_agg_3", "vsw_6"]
    cond = wf["tasks"][2]["inputParameters"]
    assert js(cond, toolOut={"result": '{"score": 4}'}) == {"passed": True}
    assert js(cond, toolOut={"score": 1})["passed"] is False
    assert js(cond, toolOut=None)["passed"] is False  # a condition error fails the validation
    agg = wf["tasks"][3]["inputParameters"]
    assert js(agg, checks=[{"passed": True}]) == "passed" and js(agg, checks=[{"passed": False}]) == "failed"
    for bad, error in (("$.score >=", "unsafe success_condition"), ("${x} == 1", "may not hold a template")):
        plan["validation"][0]["success_condition"] = bad
        assert error in js(compiled.workflow_def["tasks"][2]["inputParameters"], planJson=plan)["error"]


@pytest.mark.parametrize("config,field", [
    ({**harness(), "planner": None}, "agentConfig.planner"),
    (harness(planner={"name": "p", "model": "no-provider"}), "agentConfig.planner.model"),
    (harness(fallback={"name": "f", "tools": [{"name": "t", "toolType": "telepathy"}]}),
     "agentConfig.fallback.tools[0].toolType"),
    (harness(plannerContext=[{"text": "x"}]), "agentConfig.plannerContext"),
    (harness(planSource={"tool": "add"}), "agentConfig.planSource"),
])
def test_plan_execute_refusals_name_the_field(config, field):
    assert field in [e["path"] for e in validate(config)]


def test_inspect_plan_compiles_without_running(api):
    config = AgentConfigSerializer().serialize(strategy_defs.pricing_harness())
    body = api.post("/agent/inspect-plan", {"agentConfig": config, "plan": strategy_defs.price_plan("tea").to_dict()})
    assert body.status_code == 200, body.content[:500]
    out = body.json()
    assert out["error"] is None and out["stats"] == {"stepCount": 2, "taskCount": 6}
    assert [(t["name"], t["inputParameters"]) for t in out["workflowDef"]["tasks"][:3]] == [
        ("fetch_price", {"item": "tea"}), ("write_note", {"text": "${s_price_0.output}"}), ("fetch_price", {"item": "tea"})]
    bad = api.post("/agent/inspect-plan", {"agentConfig": config, "plan": {"steps": [{"operations": []}]}}).json()
    assert bad["workflowDef"] is None and "has no operations" in bad["error"]
    refused = api.refused(api.post("/agent/inspect-plan", {"agentConfig": {**config, "strategy": "swarm"},
                                                           "plan": {}}), 400)
    assert refused["validationErrors"][0]["path"] == "agentConfig.strategy"
    assert api.refused(api.post("/agent/inspect-plan", {"agentConfig": config}), 400)["message"] == (
        "inspectPlan: plan is required")
    assert api.get("/agent/definitions/e2e_pricing").status_code == 404  # nothing stored


@pytest.mark.e2e
@pytest.mark.parametrize("prompt, plan, expected", [
    ("Price of tea?", strategy_defs.price_plan, "noted: price of tea: 12"),  # runtime.run(harness, plan=Plan(...))
    ("Price of coffee?", None, "noted: price of coffee: 12"),  # the planner's ```json plan
    ("Price of cake?", None, "fallback: Price of cake?"),     # a plan naming a tool it lacks: the fallback agent
    ("Price of tea, in writing?", strategy_defs.written_plan,  # a generate operation: the model writes the args
     "noted: the model read price of tea: 12"),
])
def test_plan_execute_runs_the_plan_through_the_sdk(teams, prompt, plan, expected):
    server, runtime, llm = teams
    extra = {"plan": plan("tea")} if plan else {}
    result = runtime.run(strategy_defs.pricing_harness(), prompt, timeout=WAIT_SECONDS, **extra)
    assert result.status == "COMPLETED", result.error
    run = api_get(server, f"/agent/execution/{result.execution_id}")
    assert result.output["result"] == expected
    planner_turn = next(c for c in llm.chats() if any(m.get("role") == "user" and str(m.get("content")).startswith(prompt)
                                                      for m in c["messages"]))
    assert "## Available tools" in planner_turn["messages"][-1]["content"]
    subs = {t["referenceTaskName"]: t for t in run["tasks"] if t["taskType"] == "SUB_WORKFLOW"}
    # the stream shows the planner (and the fallback agent) started as handoffs
    with httpx.stream("GET", f"{server.url}/agent/stream/{result.execution_id}", headers=server.auth_headers(),
                      timeout=30) as resp:
        targets = [line[6:] for line in resp.iter_lines() if line.startswith("data: ") and '"handoff"' in line]
    assert [json.loads(t)["target"] for t in targets] == ["e2e_pricing_planner"] + (
        ["e2e_pricing_fallback"] if expected.startswith("fallback") else [])
    if expected.startswith("fallback"):
        assert set(subs) == {"e2e_pricing_planner", "e2e_pricing_compile_fallback"}
        return
    plan_run = api_get(server, f"/agent/execution/{subs['e2e_pricing_plan_exec']['subWorkflowId']}")
    assert plan_run["agentName"] == "pe_e2e_pricing_plan"
    tools = [(t["taskType"], t["status"]) for t in plan_run["tasks"] if t["taskType"] in ("fetch_price", "write_note")]
    assert tools == [("fetch_price", "COMPLETED"), ("write_note", "COMPLETED"), ("fetch_price", "COMPLETED")]
    verdicts = [t["outputData"]["result"] for t in plan_run["tasks"] if t["referenceTaskName"].startswith("val_eval")]
    assert verdicts == [{"passed": True}]  # the validation's success_condition read the price
