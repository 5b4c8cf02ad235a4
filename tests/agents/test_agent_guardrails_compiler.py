"""The compiler's guardrails and loop options as plain Python (no database): the shapes
they compile to, their scripts run by the engine's own JavaScript evaluator, and the 400s
naming the field."""
from __future__ import annotations

import json

import pytest

from apps.agents import guardrails, options
from apps.agents.compiler import compile_agent, validate
from apps.core.errors import InvalidInput
from apps.engine.evaluators import evaluate
from tests.ai.conftest import api  # noqa: F401 - fixture

MODEL = "openai/gpt-4o-mini"
JUDGE = {"name": "safe", "guardrailType": "llm", "model": "openai/judge", "policy": "be kind", "onFail": "retry",
         "maxRetries": 2, "position": "output"}


def agent(name="a", **extra) -> dict:
    return {"name": name, "model": MODEL, "instructions": f"{name} instructions", **extra}


def find(tasks, ref):
    return options._find(tasks, ref)


def test_an_llm_judge_runs_in_a_workflow_of_its_own_and_its_answer_is_parsed():
    wf = compile_agent(agent(guardrails=[JUDGE])).workflow_def
    judge = find(wf["tasks"], "a_guardrail_0_judge")
    assert judge["type"] == "SUB_WORKFLOW" and judge["inputParameters"] == {"content": "${a_llm.output.result}"}
    (llm,) = judge["subWorkflowParam"]["workflowDefinition"]["tasks"]
    assert llm["type"] == "LLM_CHAT_COMPLETE" and llm["inputParameters"]["model"] == "judge"
    assert llm["inputParameters"]["maxTokens"] == 256 and llm["inputParameters"]["temperature"] == 0
    assert "POLICY: be kind" in llm["inputParameters"]["messages"][0]["message"]
    parse = find(wf["tasks"], "a_guardrail_0")
    loop = next(t for t in wf["tasks"] if t["type"] == "DO_WHILE")
    assert "$.a_guardrail_0['result']['on_fail'] == 'retry'" in loop["loopCondition"]
    assert find(wf["tasks"], "a_llm")["inputParameters"]["participants"] == {"a_guardrail_0_retry": "user"}

    def verdict(raw, iteration=1):
        return evaluate("javascript", parse["inputParameters"]["expression"],
                        {**parse["inputParameters"], "llm_result": raw, "iteration": iteration})

    assert verdict('```json\n{"passed": true}\n```')["passed"] is True
    assert verdict({"passed": False, "reason": "rude"})["on_fail"] == "retry"
    assert verdict('{"passed": false, "reason": "rude"}', iteration=2) == {
        "passed": False, "message": "rude", "on_fail": "raise", "fixed_output": None, "guardrail_name": "safe",
        "should_continue": False}
    assert verdict("I think it is fine")["message"] == "Unparseable LLM response"


@pytest.mark.parametrize("on_fail, iteration, expected", [("retry", 1, "retry"), ("retry", 3, "raise"),
                                                         ("fix", 1, "raise"), ("human", 1, "human")])
def test_a_regex_verdict_escalates_as_conductors(on_fail, iteration, expected):
    guard = {"name": "r", "guardrailType": "regex", "patterns": ["\\d"], "onFail": on_fail, "maxRetries": 3}
    task = find(compile_agent(agent(guardrails=[guard])).workflow_def["tasks"], "a_guardrail_0")["inputParameters"]
    out = evaluate("javascript", task["expression"], {**task, "content": "3 roses", "iteration": iteration})
    assert (out["passed"], out["on_fail"]) == (False, expected)
    assert evaluate("javascript", task["expression"], {**task, "content": "roses"})["passed"] is True


def test_input_guardrails_of_an_agent_are_left_to_the_sdk():
    wf = compile_agent(agent(guardrails=[{**JUDGE, "position": "input"}])).workflow_def
    assert find(wf["tasks"], "a_guardrail_0") is None


def test_a_tool_guardrail_gates_the_calls_of_its_tool():
    guard = {"name": "no_rm", "guardrailType": "regex", "patterns": ["rm -rf"], "position": "input", "onFail": "retry"}
    compiled = compile_agent(agent(tools=[{"name": "sh", "guardrails": [guard]}, {"name": "other"}]))
    tasks = compiled.workflow_def["tasks"]
    dispatch = find(tasks, "a_dispatch")
    refs = [t["taskReferenceName"] for t in dispatch["decisionCases"]["tools"]]
    assert refs == ["a_tool_gate_reset", "a_tool_calls_0", "a_tool_check_0", "a_tool_gate"]
    gate = find(tasks, "a_tool_gate")
    assert gate["decisionCases"] == {"true": []} and gate["defaultCase"][0]["type"] == "FORK_JOIN_DYNAMIC"
    retry = find(tasks, "a_tool_guardrail_0_route")["decisionCases"]["retry"]
    assert retry[-1]["inputParameters"] == {"_tool_blocked": True}
    assert "a_tool_guardrail_0_retry" in find(tasks, "a_llm")["inputParameters"]["participants"]
    calls = find(tasks, "a_tool_calls_0")["inputParameters"]
    text = evaluate("javascript", calls["expression"], {"tool": "sh", "toolCalls": [
        {"name": "sh", "inputParameters": {"cmd": "rm -rf /", "method": "sh"}}, {"name": "other", "inputParameters": {}}]})
    assert text == {"called": True, "text": 'Tool: sh\nArguments: {"cmd":"rm -rf /"}\n---'}
    assert evaluate("javascript", calls["expression"], {"tool": "sh", "toolCalls": [{"name": "other"}]})["called"] is False


def test_a_team_with_output_guardrails_runs_in_a_guardrail_loop():
    team = {"name": "t", "model": MODEL, "strategy": "parallel", "agents": [agent("x"), agent("y")],
            "guardrails": [{"name": "g", "taskName": "check_team", "onFail": "retry"}], "maxTurns": 4}
    compiled = compile_agent(team)
    wf = compiled.workflow_def
    assert [t["taskReferenceName"] for t in wf["tasks"]] == ["t_guardrail_init", "t_guardrail_loop", "t_output"]
    loop = wf["tasks"][1]
    strategy = find(wf["tasks"], "t_strategy")
    assert strategy["subWorkflowParam"]["workflowDefinition"]["name"] == "t_strategy"
    assert strategy["inputParameters"]["prompt"] == "${t_strategy_prompt.output.result}"
    assert find(wf["tasks"], "t_guardrail_0")["inputParameters"]["content"] == "${t_strategy.output.result}"
    assert loop["loopCondition"].startswith("if ($.t_guardrail_loop['iteration'] < 4 && (")
    assert wf["outputParameters"]["subResults"] == "${t_strategy.output.subResults}"
    assert "check_team" in compiled.required_workers
    prompt = find(wf["tasks"], "t_strategy_prompt")["inputParameters"]
    assert evaluate("javascript", prompt["expression"], {"prompt": "p", "feedback": "f"}) == "p\n\nf"


@pytest.mark.parametrize("answer, action", [
    ({"approved": True}, "approve"), ({"approved": "yes"}, "approve"),
    ({"approved": False, "edited_output": "better"}, "edit"), ({"approved": False, "reason": "no"}, "reject"),
])
def test_the_human_review_reads_the_answer(answer, action):
    wf = compile_agent(agent(guardrails=[{"name": "g", "taskName": "g", "onFail": "human"}])).workflow_def
    human = find(wf["tasks"], "a_guardrail_0_human")
    assert human["type"] == "HUMAN" and human["inputParameters"]["response_schema"]["required"] == ["approved"]
    validate_task = find(wf["tasks"], "a_guardrail_0_human_validate")["inputParameters"]
    process = find(wf["tasks"], "a_guardrail_0_human_process")["inputParameters"]
    validated = evaluate("javascript", validate_task["expression"], {"human_output": answer})
    assert validated["needs_normalize"] is False
    out = evaluate("javascript", process["expression"], {"validated": validated, "normalized": None, "llm_output": "x"})
    assert out["action"] == action
    # free text goes to the model, whose JSON answer is read the same way
    free = evaluate("javascript", validate_task["expression"], {"human_output": {"message": "lgtm"}})
    assert free == {"needs_normalize": True, "raw_text": "lgtm"}
    normalized = json.dumps({"approved": False, "reason": "nope"})
    assert evaluate("javascript", process["expression"], {"validated": free, "normalized": normalized})["reason"] == "nope"


def test_memory_outputs_and_required_tools_shape_the_loop():
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "array", "items": {
        "$ref": "#/$defs/Day"}}}, "$defs": {"Day": {"type": "object", "properties": {"t": {"type": "number"}}}}}
    wf = compile_agent(agent(
        tools=[{"name": "t1"}, {"name": "t2"}], requiredTools=["t2"], outputType={"schema": schema, "className": "W"},
        memory={"messages": [{"role": "user", "message": "old"}, {"role": "assistant", "message": "older"},
                             {"role": "tool_call", "message": "", "tool_calls": [{"name": "t1", "taskReferenceName": "r",
                                                                                  "input": {"q": 1}}]}],
                "maxMessages": 2})).workflow_def
    context = find(wf["tasks"], "a_context")["inputParameters"]
    assert context["memory"] == [{"role": "assistant", "message": "older"}, {"role": "tool_call", "message": "", "toolCalls": [
        {"name": "t1", "taskReferenceName": "r", "inputParameters": {"q": 1}}]}]
    assert context["instructions"].endswith("schema: {'city': str, 'days': [{'t': float}]}. Output only valid JSON.")
    messages = evaluate("javascript", context["expression"], {**context, "signals": "", "prompt": "now"})
    assert [m["role"] for m in messages] == ["system", "assistant", "tool_call", "user"]
    check = find(wf["tasks"], "a_required_tools_check")["inputParameters"]
    run = evaluate("javascript", check["expression"], {**check, "called": ["t1"], "reminders": 0})
    assert run["remind"] is True and run["message"] == "You MUST call these tools before completing: t2"
    assert evaluate("javascript", check["expression"], {**check, "called": ["t1"], "reminders": 3})["remind"] is False
    loop = next(t for t in wf["tasks"] if t["type"] == "DO_WHILE")
    bindings = {"a_loop": {"iteration": 1}, "_stop_requested": False, "a_route": {"result": "final"},
                "a_llm": {"finishReason": "STOP"}, "_required_missing": True}
    assert evaluate("javascript", loop["loopCondition"], bindings) is True
    assert evaluate("javascript", loop["loopCondition"], {**bindings, "_required_missing": False}) is False


def test_callbacks_and_prefills_run_around_the_loop():
    compiled = compile_agent(agent(tools=[{"name": "t1"}], prefillTools=[{"toolName": "t1", "arguments": {"a": 1}},
                                                                        {"toolName": "t0", "arguments": {}}],
                                   callbacks=[{"position": p, "taskName": f"a_{p}"} for p in options.CALLBACK_POSITIONS]))
    tasks = compiled.workflow_def["tasks"]
    assert [t["taskReferenceName"] for t in tasks] == ["a_init_state", "a_before_agent", "a_prefill_fork", "a_prefill_join",
                                                      "a_loop", "a_after_agent", "a_output"]
    body = [t["taskReferenceName"] for t in tasks[4]["loopOver"]]
    assert body[:4] == ["a_context", "a_before_model", "a_llm", "a_after_model"]
    tools = [t["taskReferenceName"] for t in find(tasks, "a_dispatch")["decisionCases"]["tools"]]
    assert tools[0] == "a_before_tool" and tools[-1] == "a_after_tool"
    assert {"t0", "t1", "a_before_agent", "a_after_tool"} <= set(compiled.required_workers)
    memory = find(tasks, "a_context")["inputParameters"]["memory"]
    assert "## t1(a=1)\n\n${a_prefill_0.output.result}" in memory[-1]["message"]


def test_a_gate_nests_the_rest_of_a_pipeline():
    team = {"name": "p", "model": MODEL, "strategy": "sequential", "agents": [
        agent("x", gate={"type": "text_contains", "text": "STOP", "caseSensitive": False}), agent("y"), agent("z")]}
    wf = compile_agent(team).workflow_def
    assert [t["taskReferenceName"] for t in wf["tasks"]] == ["p_step_0_x", "p_gate_0", "p_gate_switch_0",
                                                            "p_pipeline_result"]
    nested = wf["tasks"][2]["decisionCases"]["continue"]
    assert [t["taskReferenceName"] for t in nested] == ["p_step_1_y", "p_step_2_z"]
    gate = wf["tasks"][1]["inputParameters"]
    assert evaluate("javascript", gate["expression"], {**gate, "result": "please stop"}) == {"decision": "stop"}
    pick = wf["tasks"][-1]["inputParameters"]
    assert evaluate("javascript", pick["expression"], {"results": ["a", None, None]}) == "a"
    assert wf["outputParameters"]["result"] == "${p_pipeline_result.output.result}"


def test_a_swarm_reads_stop_when_and_termination_on_the_transcript():
    swarm = {"name": "s", "model": MODEL, "strategy": "swarm", "agents": [agent("x"), agent("y")],
             "stopWhen": {"taskName": "s_stop_when"}, "termination": {"type": "text_mention", "text": "DONE"}}
    compiled = compile_agent(swarm)
    loop = next(t for t in compiled.workflow_def["tasks"] if t["type"] == "DO_WHILE")
    refs = [t["taskReferenceName"] for t in loop["loopOver"]]
    assert refs[-2:] == ["s_stop_when", "s_termination"] and "s_stop_when" in compiled.required_workers
    assert find(loop["loopOver"], "s_stop_when")["inputParameters"]["result"] == "${workflow.variables.conversation}"
    bindings = {"s_loop": {"iteration": 1}, "_stop_requested": False, "s_handoff_check": {"result": {"handoff": True}},
                "s_stop_when": {"should_continue": True}, "s_termination": {"result": True}}
    assert evaluate("javascript", loop["loopCondition"], bindings) is True
    assert evaluate("javascript", loop["loopCondition"], {**bindings, "s_stop_when": {"should_continue": False}}) is False
    assert evaluate("javascript", loop["loopCondition"], {**bindings, "s_termination": {"result": False}}) is False


@pytest.mark.parametrize("config,field", [
    (agent(guardrails=[{"name": "g", "guardrailType": "llm", "model": MODEL}]), "agentConfig.guardrails[0].policy"),
    (agent(guardrails=[{**JUDGE, "maxTokens": 0}]), "agentConfig.guardrails[0].maxTokens"),
    (agent(guardrails=[{"name": "g", "onFail": "human", "position": "input"}]), "agentConfig.guardrails[0].onFail"),
    (agent(tools=[{"name": "t", "guardrails": [{"name": "g", "position": "input", "onFail": "fix"}]}]),
     "agentConfig.tools[0].guardrails[0].onFail"),
    (agent(tools=[{"name": "t", "guardrails": [{"guardrailType": "custom"}]}]), "agentConfig.tools[0].guardrails[0].taskName"),
    (agent(tools=[{"name": "t", "guardrails": "g"}]), "agentConfig.tools[0].guardrails"),
    (agent(memory={"messages": [{"role": "robot", "message": "x"}]}), "agentConfig.memory.messages[0].role"),
    (agent(memory={"maxMessages": 0}), "agentConfig.memory.maxMessages"),
    (agent(tools=[{"name": "t"}], requiredTools=["u"]), "agentConfig.requiredTools[0]"),
    (agent(prefillTools=[{"toolName": "bad name"}]), "agentConfig.prefillTools[0].toolName"),
    (agent(tools=[{"name": "ask", "toolType": "human"}], prefillTools=[{"toolName": "ask"}]),
     "agentConfig.prefillTools[0].toolName"),
    (agent(callbacks=[{"position": "on_error", "taskName": "x"}]), "agentConfig.callbacks[0].position"),
    (agent(callbacks=[{"position": "before_agent"}]), "agentConfig.callbacks[0].taskName"),
    (agent(outputType="W"), "agentConfig.outputType"),
    (agent(gate={"type": "regex", "text": "x"}), "agentConfig.gate.type"),
    (agent(codeExecution={"enabled": True}), "agentConfig.codeExecution"),
    (agent(cliConfig={"enabled": True}), "agentConfig.cliConfig"),
    ({"name": "t", "model": MODEL, "strategy": "sequential", "agents": [agent("x")],
      "guardrails": [{"name": "g", "guardrailType": "llm", "model": "nope", "policy": "p"}]}, "agentConfig.guardrails[0].model"),
])
def test_refusals_name_the_field(config, field):
    assert field in [e["path"] for e in validate(config)]
    with pytest.raises(InvalidInput) as err:
        compile_agent(config)
    assert field in [e["path"] for e in err.value.validation_errors]


def kitchen_sink() -> dict:
    """Every key of this round at once: what the server's own WorkflowDef checks must accept."""
    judge_tool = {"name": "no_rm", "guardrailType": "llm", "model": MODEL, "policy": "p", "position": "input",
                  "onFail": "human"}
    sub = agent("w", gate={"type": "text_contains", "text": "STOP"}, tools=[{"name": "t1", "guardrails": [judge_tool]}],
                guardrails=[JUDGE, {"name": "h", "taskName": "h", "onFail": "human"},
                            {"name": "r", "guardrailType": "regex", "patterns": ["x"], "onFail": "fix"}],
                memory={"messages": [{"role": "user", "message": "m"}]}, requiredTools=["t1"],
                prefillTools=[{"toolName": "t1", "arguments": {}}, {"toolName": "t2", "arguments": {"a": 1}}],
                outputType={"schema": {"type": "object", "properties": {"a": {"type": "integer"}}}},
                callbacks=[{"position": p, "taskName": f"w_{p}"} for p in options.CALLBACK_POSITIONS])
    return {"name": "g_sink", "strategy": "sequential", "agents": [{**sub, "model": MODEL}, agent("v")],
            "guardrails": [{**JUDGE, "onFail": "human"}, {"name": "r", "guardrailType": "regex", "patterns": ["y"],
                                                          "onFail": "human"}]}


def test_the_server_registers_every_compiled_shape_and_refuses_a_bad_one_whole(api):  # noqa: F811
    resp = api.post("/agent/deploy", {"agentConfig": kitchen_sink()})
    assert resp.status_code == 200, resp.content[:2000]
    assert set(resp.json()["requiredWorkers"]) >= {"t1", "t2", "h", "w_before_tool"}
    definition = api.get("/metadata/workflow/g_sink").json()
    assert definition["tasks"][1]["type"] == "DO_WHILE"
    # a team without a model reviews without a normalizer: a free-text answer is a rejection
    process = find(definition["tasks"], "g_sink_guardrail_1_human_process")["inputParameters"]
    assert process["normalized"] is None and find(definition["tasks"], "g_sink_guardrail_1_human_normalizer") is None
    bad = kitchen_sink()
    bad["agents"][0]["tools"][0]["guardrails"][0]["policy"] = ""
    bad["name"] = "g_sink_bad"
    body = api.post("/agent/deploy", {"agentConfig": bad}).json()
    assert body["status"] == 400
    assert "agentConfig.agents[0].tools[0].guardrails[0].policy" in [e["path"] for e in body["validationErrors"]]
    assert api.get("/metadata/workflow/g_sink_bad").status_code == 404
    assert api.get("/metadata/taskdefs/w_before_agent").status_code == 200  # from the first deploy only


def test_the_compiled_guardrail_types_are_the_compilers():
    from apps.agents import compiler

    assert compiler.GUARDRAIL_TYPES == guardrails.GUARDRAIL_TYPES == ("custom", "external", "regex", "llm")
