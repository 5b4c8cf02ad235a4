"""The agent compiler as plain Python (no database): strategies, termination programs run
by the engine's own JavaScript evaluator, and refusals naming the field."""
from __future__ import annotations

import pytest

from apps.agents.compiler import compile_agent, termination_script, validate
from apps.core.errors import InvalidInput
from apps.engine.evaluators import evaluate

MODEL = "openai/gpt-4o-mini"


def agent(name="a", **extra) -> dict:
    return {"name": name, "model": MODEL, "instructions": f"{name} instructions", **extra}


def go_on(termination: dict, **inputs) -> bool:
    return evaluate("javascript", termination_script(termination), {"result": "", "iteration": 1, **inputs})


def test_termination_conditions():
    mention = {"type": "text_mention", "text": "DONE"}
    assert go_on(mention, result="still working") is True
    assert go_on(mention, result="all done.") is False  # case-insensitive by default
    assert go_on({**mention, "caseSensitive": True}, result="all done.") is True
    assert go_on({"type": "stop_message", "stopMessage": "TERMINATE"}, result=" TERMINATE ") is False
    assert go_on({"type": "max_message", "maxMessages": 4}, iteration=1) is True
    assert go_on({"type": "max_message", "maxMessages": 4}, iteration=2) is False
    assert go_on({"type": "token_usage", "maxTotalTokens": 100}, tokens=99) is True
    assert go_on({"type": "token_usage", "maxTotalTokens": 100}, tokens=100) is False
    both = {"type": "and", "conditions": [mention, {"type": "max_message", "maxMessages": 4}]}
    assert go_on(both, result="done", iteration=1) is True   # "and" stops only when both say stop
    assert go_on(both, result="done", iteration=2) is False
    either = {"type": "or", "conditions": [mention, {"type": "max_message", "maxMessages": 4}]}
    assert go_on(either, result="done", iteration=1) is False
    assert go_on(either, result="working", iteration=1) is True


def test_the_loop_condition_reads_the_termination_task():
    wf = compile_agent(agent(termination={"type": "text_mention", "text": "DONE"}, maxTurns=7)).workflow_def
    loop = next(t for t in wf["tasks"] if t["type"] == "DO_WHILE")
    assert "$.a_loop['iteration'] < 7" in loop["loopCondition"]
    assert "$.a_termination['result'] == true" in loop["loopCondition"]
    assert [t["taskReferenceName"] for t in loop["loopOver"]][-1] == "a_termination"


@pytest.mark.parametrize("finish, route, expected", [("STOP", "final", False), ("LENGTH", "final", True),
                                                     ("MAX_TOKENS", "final", True), ("TOOL_CALLS", "tools", True)])
def test_the_loop_goes_on_after_tool_calls_and_an_answer_cut_at_the_token_limit(finish, route, expected):
    wf = compile_agent(agent(maxTurns=5)).workflow_def
    loop = next(t for t in wf["tasks"] if t["type"] == "DO_WHILE")
    bindings = {"a_loop": {"iteration": 1}, "_stop_requested": False, "a_route": {"result": route},
                "a_llm": {"finishReason": finish}}
    assert evaluate("javascript", loop["loopCondition"], bindings) is expected
    assert evaluate("javascript", loop["loopCondition"], {**bindings, "a_loop": {"iteration": 5}}) is False


def test_sequential_chains_the_sub_agents_and_they_inherit_the_model():
    compiled = compile_agent({"name": "pipe", "model": MODEL, "strategy": "sequential", "agents": [
        {"name": "draft", "instructions": "write"},
        {"name": "edit", "instructions": "edit", "tools": [{"name": "spell", "toolType": "worker"}]}]})
    first, second = compiled.workflow_def["tasks"]
    assert (first["type"], second["type"]) == ("SUB_WORKFLOW", "SUB_WORKFLOW")
    assert first["inputParameters"]["prompt"] == "${workflow.input.prompt}"
    assert second["inputParameters"]["prompt"] == "${" + first["taskReferenceName"] + ".output.result}"
    inner = second["subWorkflowParam"]["workflowDefinition"]
    llm = next(t for t in inner["tasks"][1]["loopOver"] if t["type"] == "LLM_CHAT_COMPLETE")
    assert (llm["inputParameters"]["llmProvider"], llm["inputParameters"]["model"]) == ("openai", "gpt-4o-mini")
    assert compiled.required_workers == ["spell"]
    assert compiled.workflow_def["outputParameters"]["result"] == second["inputParameters"]["prompt"].replace(
        first["taskReferenceName"], second["taskReferenceName"])


def test_handoff_offers_one_transfer_tool_per_sub_agent():
    wf = compile_agent(agent("t", strategy="handoff", agents=[agent("x"), agent("y")])).workflow_def
    loop = next(t for t in wf["tasks"] if t["type"] == "DO_WHILE")
    llm = next(t for t in loop["loopOver"] if t["type"] == "LLM_CHAT_COMPLETE")
    assert [s["name"] for s in llm["inputParameters"]["tools"]] == ["transfer_to_x", "transfer_to_y"]
    dispatch = next(t for t in loop["loopOver"] if t["type"] == "SWITCH")
    assert sorted(dispatch["decisionCases"]) == ["final", "tools", "transfer_to_x", "transfer_to_y"]
    assert dispatch["decisionCases"]["transfer_to_y"][0]["subWorkflowParam"]["workflowDefinition"]["name"] == "y"


def team(strategy, **extra) -> dict:
    return {"name": "team", "model": MODEL, "strategy": strategy, "agents": [agent("x"), agent("y")], **extra}


def js(script: str, **inputs):
    return evaluate("javascript", script, inputs)


def test_parallel_forks_every_sub_agent_and_joins_their_answers():
    compiled = compile_agent({"name": "panel", "strategy": "parallel", "agents": [
        {"name": "pros", "model": MODEL}, {"name": "cons", "model": MODEL, "tools": [{"name": "spell"}]}]})
    fork, join, aggregate = compiled.workflow_def["tasks"]
    assert (fork["type"], join["type"], aggregate["type"]) == ("FORK_JOIN", "JOIN", "INLINE")
    refs = [branch[0]["taskReferenceName"] for branch in fork["forkTasks"]]
    assert refs == ["panel_parallel_0_pros", "panel_parallel_1_cons"] == join["joinOn"]
    assert all(b[0]["type"] == "SUB_WORKFLOW" and b[0]["inputParameters"]["prompt"] == "${workflow.input.prompt}"
               for b in fork["forkTasks"])
    assert compiled.required_workers == ["spell"]
    inputs = aggregate["inputParameters"]
    assert inputs["results"] == {"pros": "${panel_parallel_0_pros.output.result}",
                                 "cons": "${panel_parallel_1_cons.output.result}"}
    answer = js(inputs["expression"], agents=inputs["agents"], results={"pros": "fast", "cons": None})
    assert answer == {"result": "[pros]: fast", "subResults": {"pros": "fast", "cons": ""}}
    assert compiled.workflow_def["outputParameters"]["subResults"] == "${panel_aggregate.output.result.subResults}"


def test_router_agent_runs_in_a_sub_workflow_and_the_loop_stops_on_done():
    wf = compile_agent(team("router", instructions="TEAM", router={
        "name": "picker", "model": "anthropic/claude-x", "instructions": "PICK"})).workflow_def
    init, loop, final = wf["tasks"]
    assert (init["type"], loop["type"], final["type"]) == ("SET_VARIABLE", "DO_WHILE", "LLM_CHAT_COMPLETE")
    router, norm, _annotate, _set, switch = loop["loopOver"]
    assert (router["type"], router["taskReferenceName"]) == ("SUB_WORKFLOW", "team_router")
    (llm,) = router["subWorkflowParam"]["workflowDefinition"]["tasks"]
    assert (llm["inputParameters"]["llmProvider"], llm["inputParameters"]["model"]) == ("anthropic", "claude-x")
    system = llm["inputParameters"]["messages"][0]["message"]
    assert system.startswith("PICK") and "- x: x instructions" in system and "DONE" in system
    assert sorted(switch["decisionCases"]) == ["DONE", "x", "y"]
    assert switch["decisionCases"]["y"][0]["taskReferenceName"] == "team_handoff_1_y"
    assert switch["decisionCases"]["y"][0]["inputParameters"]["prompt"] == "${workflow.variables.conversation}"
    picked = js(norm["inputParameters"]["expression"], agents=["x", "y"], raw="I'd say **Y**.", selected=None)
    assert picked == "y"
    bindings = {"team_loop": {"iteration": 1}, "_stop_requested": False, "team_route_norm": {"result": picked}}
    assert evaluate("javascript", loop["loopCondition"], bindings) is True
    assert evaluate("javascript", loop["loopCondition"], {**bindings, "team_route_norm": {"result": "DONE"}}) is False
    assert final["inputParameters"]["messages"][0]["message"].startswith("TEAM")
    assert wf["outputParameters"]["result"] == "${team_final.output.result}"


@pytest.mark.parametrize("raw, selected, expected", [
    ("x", None, "x"), ('"X".', None, "x"), ("send it to y please", None, "y"), ("x or y", None, "DONE"),
    ("nobody", None, "DONE"), (None, None, "DONE"), ("done", None, "DONE"), (None, "y", "y"),
    ("ask backend_dev", None, "backend_dev")])
def test_the_router_answer_is_normalized_to_a_sub_agent_or_done(raw, selected, expected):
    from apps.agents.compiler import NORMALIZE_SCRIPT
    assert js(NORMALIZE_SCRIPT, agents=["x", "y", "backend_dev", "dev"], raw=raw, selected=selected) == expected


def test_router_function_is_a_worker_and_without_synthesis_the_answer_is_the_transcript():
    compiled = compile_agent(team("router", router={"taskName": "team_router_fn"}, synthesize=False))
    init, loop = compiled.workflow_def["tasks"]
    router = loop["loopOver"][0]
    assert (router["type"], router["name"]) == ("SIMPLE", "team_router_fn")
    assert compiled.required_workers == ["team_router_fn"]
    assert compiled.workflow_def["outputParameters"]["result"] == "${workflow.variables.conversation}"
    # no model of its own is needed when nothing of the team calls one
    assert not validate({**team("router", router={"taskName": "f"}, synthesize=False), "model": None})


@pytest.mark.parametrize("transitions, turns", [(None, ["0", "1", "2", "0", "1"]),
                                                ({"x": ["z"], "z": ["y"], "y": ["x"]}, ["0", "2", "1", "0", "2"])])
def test_round_robin_takes_turns_in_definition_order(transitions, turns):
    config = {**team("round_robin", maxTurns=5), "agents": [agent("x"), agent("y"), agent("z")]}
    if transitions:
        config["allowedTransitions"] = transitions
    wf = compile_agent(config).workflow_def
    select, switch = wf["tasks"][1]["loopOver"]
    assert sorted(switch["decisionCases"]) == ["0", "1", "2"]
    assert switch["decisionCases"]["2"][0]["taskReferenceName"] == "team_agent_2_z"
    inputs, last, seen = select["inputParameters"], "", []
    for iteration in range(1, 6):
        last = js(inputs["expression"], **{**inputs, "iteration": iteration, "last": last if transitions else ""})
        seen.append(last)
    assert seen == turns


def test_random_picks_among_the_allowed_agents():
    wf = compile_agent(team("random", allowedTransitions={"x": ["y"]})).workflow_def
    inputs = wf["tasks"][1]["loopOver"][0]["inputParameters"]
    assert {js(inputs["expression"], **{**inputs, "last": "0"}) for _ in range(20)} == {"1"}
    assert {js(inputs["expression"], **{**inputs, "last": "1"}) for _ in range(60)} == {"0", "1"}


def test_rotation_reads_stop_when_and_termination_on_the_transcript():
    compiled = compile_agent(team("round_robin", maxTurns=9, stopWhen={"taskName": "enough"},
                                  termination={"type": "text_mention", "text": "AGREED"}))
    loop = compiled.workflow_def["tasks"][1]
    assert [t["taskReferenceName"] for t in loop["loopOver"]][2:] == ["team_stop_when", "team_termination"]
    assert loop["loopOver"][3]["inputParameters"]["result"] == "${workflow.variables.conversation}"
    assert compiled.required_workers == ["enough"]
    bindings = {"team_loop": {"iteration": 2}, "_stop_requested": False, "team_stop_when": {"should_continue": True},
                "team_termination": {"result": True}}
    assert evaluate("javascript", loop["loopCondition"], bindings) is True
    for stop in ({"team_termination": {"result": False}}, {"team_stop_when": {"should_continue": False}},
                 {"_stop_requested": True}, {"team_loop": {"iteration": 9}}):
        assert evaluate("javascript", loop["loopCondition"], {**bindings, **stop}) is False


def test_swarm_agents_pass_the_conversation_with_transfer_tools():
    compiled = compile_agent(team("swarm", instructions="FRONT", tools=[{"name": "lookup"}],
                                  allowedTransitions={"team": ["x", "y"], "x": ["team"]}))
    init, loop, final = compiled.workflow_def["tasks"]
    assert init["inputParameters"]["active_agent"] == "0" and final["taskReferenceName"] == "team_final"
    switch, check, update = loop["loopOver"]
    assert sorted(switch["decisionCases"]) == ["0", "1", "2"]
    turns = {k: v[0] for k, v in switch["decisionCases"].items()}
    assert [turns[k]["taskReferenceName"] for k in "012"] == ["team_agent_0_team", "team_agent_1_x", "team_agent_2_y"]

    def tool_names(turn):
        inner = turn["subWorkflowParam"]["workflowDefinition"]
        llm = next(t for t in inner["tasks"][1]["loopOver"] if t["type"] == "LLM_CHAT_COMPLETE")
        return [s["name"] for s in llm["inputParameters"].get("tools", [])]
    # the team's own agent keeps its tools; y may hand to nobody (allowedTransitions)
    assert tool_names(turns["0"]) == ["lookup", "team_transfer_to_x", "team_transfer_to_y"]
    assert tool_names(turns["1"]) == ["x_transfer_to_team"] and tool_names(turns["2"]) == []
    assert compiled.required_workers == ["lookup"]
    inner = turns["1"]["subWorkflowParam"]["workflowDefinition"]
    assert inner["outputParameters"]["transfer_to"] == "${x_transfer_check.output.result.transfer_to}"
    # the route ends x's loop on a transfer call; the check reads whom to and the message
    route = next(t for t in inner["tasks"][1]["loopOver"] if t["taskReferenceName"] == "x_route")
    calls = [{"name": "x_transfer_to_team", "inputParameters": {"method": "x_transfer_to_team", "message": "over"}}]
    picked = js(route["inputParameters"]["expression"], toolCalls=calls, targets=route["inputParameters"]["targets"])
    assert picked == "x_transfer_to_team"
    transfer = inner["tasks"][-1]["inputParameters"]
    assert js(transfer["expression"], targets=transfer["targets"], route=picked, toolCalls=calls) == {
        "is_transfer": True, "transfer_to": "team", "transfer_message": "over"}
    assert js(check["inputParameters"]["expression"], **{**check["inputParameters"], "is_transfer": True,
                                                         "transfer_to": "team", "active": "1"}) == {
        "handoff": True, "active_agent": "0"}
    assert js(check["inputParameters"]["expression"], **{**check["inputParameters"], "is_transfer": False,
                                                         "transfer_to": "", "active": "1"}) == {
        "handoff": False, "active_agent": "1"}
    concat = switch["decisionCases"]["1"][1]["inputParameters"]
    assert js(concat["expression"], agent="x", prev="hi", response=None, is_transfer=True, transfer_to="team",
              transfer_message="over") == "hi\n\n[x -> team]: over"


@pytest.mark.parametrize("config,field", [
    (team("telepathy"), "agentConfig.strategy"),
    (team("swarm", agents=[agent("x", strategy="sequential", agents=[agent("z")])]), "agentConfig.agents[0]"),
    (team("swarm", agents=[agent("team")]), "agentConfig.agents[0]"),
    (team("swarm", allowedTransitions={"team": ["nobody"]}), "agentConfig.allowedTransitions.team"),
    (team("swarm", termination={"type": "token_usage", "maxTotalTokens": 9}), "agentConfig.termination.type"),
    (team("parallel", agents=[]), "agentConfig.agents"),
    (team("parallel", agents=[agent("x"), agent("x")]), "agentConfig.agents[1].name"),
    (team("round_robin", agents=[agent("a-b"), agent("a_b")]), "agentConfig.agents[1].name"),
    (team("router", agents=[agent("x"), agent("Done")]), "agentConfig.agents[1].name"),
    (team("router", router={"taskName": 7}), "agentConfig.router.taskName"),
    (team("router", router={"name": "r", "model": "no-provider"}), "agentConfig.router.model"),
    ({**team("router", router={"taskName": "f"}), "model": None}, "agentConfig.model"),
    (team("parallel", router={"taskName": "f"}), "agentConfig.router"),
    (team("parallel", guardrails=[{"name": "g", "guardrailType": "moderation"}]), "agentConfig.guardrails[0].guardrailType"),
    (team("router", termination={"type": "text_mention", "text": "x"}), "agentConfig.termination"),
    (team("round_robin", allowedTransitions={"x": ["nobody"]}), "agentConfig.allowedTransitions.x"),
    (team("handoff", allowedTransitions={"x": ["y"]}), "agentConfig.allowedTransitions"),
    (team("random", termination={"type": "or", "conditions": [{"type": "token_usage", "maxTotalTokens": 9}]}),
     "agentConfig.termination.conditions[0].type"),
])
def test_team_refusals_name_the_field(config, field):
    assert field in [e["path"] for e in validate(config)]


@pytest.mark.parametrize("config,field", [
    (agent(guardrails=[{"name": "g", "guardrailType": "llm", "policy": "x"}]), "agentConfig.guardrails[0].model"),
    (agent(guardrails=[{"name": "g", "guardrailType": "regex", "patterns": []}]), "agentConfig.guardrails[0].patterns"),
    (agent(guardrails=[{"name": "g", "onFail": "ask"}]), "agentConfig.guardrails[0].onFail"),
    (agent(guardrails=[{"name": "g", "position": "before"}]), "agentConfig.guardrails[0].position"),
    (agent(router={"taskName": "r"}), "agentConfig.router"),
    (agent(strategy="router", agents=[agent("x")], router={"taskName": "r"}, guardrails=[{"name": "g", "onFail": "ask"}]),
     "agentConfig.guardrails[0].onFail"),
    (agent(instructions={"type": "prompt_template", "name": "p"}), "agentConfig.instructions"),
    (agent(termination={"type": "never"}), "agentConfig.termination.type"),
    (agent(termination={"type": "or", "conditions": [{"type": "max_message", "maxMessages": "ten"}]}),
     "agentConfig.termination.conditions[0].maxMessages"),
    (agent(guardrails=[{"name": "g", "guardrailType": "regex", "patterns": ["x"], "maxRetries": "3"}]),
     "agentConfig.guardrails[0].maxRetries"),
    (agent(tools=[{"name": "t"}, {"name": "t"}]), "agentConfig.tools[1].name"),
    ({"model": MODEL}, "agentConfig.name"),
])
def test_refusals_name_the_field(config, field):
    assert field in [e["path"] for e in validate(config)]
    with pytest.raises(InvalidInput) as err:
        compile_agent(config)
    assert field in [e["path"] for e in err.value.validation_errors]
