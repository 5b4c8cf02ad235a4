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


@pytest.mark.parametrize("config,field", [
    (agent(guardrails=[{"name": "g", "guardrailType": "llm", "policy": "x"}]), "agentConfig.guardrails[0].guardrailType"),
    (agent(guardrails=[{"name": "g", "guardrailType": "regex", "patterns": []}]), "agentConfig.guardrails[0].patterns"),
    (agent(guardrails=[{"name": "g", "onFail": "human"}]), "agentConfig.guardrails[0].onFail"),
    (agent(guardrails=[{"name": "g", "position": "input"}]), "agentConfig.guardrails[0].position"),
    (agent(router={"taskName": "r"}), "agentConfig.router"),
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
