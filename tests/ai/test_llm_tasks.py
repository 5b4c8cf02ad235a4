"""LLM tasks through the API, run as async system tasks by the (in-test) cluster against
the loopback OpenAI-compatible and Ollama stubs: inputs, outputs, tool calls, JSON mode,
prompt variables, token counts, retries and failure reasons."""
from __future__ import annotations

import json

from apps.engine import sweeper
from tests.ai.conftest import API_KEY
from tests.factories import unique, workflow_def


def run(api, cluster, tasks, input=None, **extra):
    name = unique("ai_wf")
    api.register_workflow(workflow_def(name, tasks, **extra))
    wid = api.start(name, input or {})
    cluster.run()
    return api.workflow(wid)


def only(wf, ref):
    (task,) = [t for t in wf["tasks"] if t["referenceTaskName"] == ref]
    return task


def chat(ref, **inputs):
    return {"name": ref, "taskReferenceName": ref, "type": "LLM_CHAT_COMPLETE",
            "inputParameters": {"llmProvider": "openai", "model": "gpt-stub", **inputs}}


def test_chat_complete_json_mode_prompt_variables_and_token_counts(api, cluster, ai_settings, llm):
    llm.chat_handler = lambda req: {"text": '```json\n{"plan": "search", "steps": 2}\n```'}
    wf = run(api, cluster, [chat("plan", instructions="You plan for $${team}.", jsonOutput=True, temperature=0,
                                 maxTokens=50, promptVariables={"team": "${workflow.input.team}", "n": 3},
                                 messages=[{"role": "user", "message": "Goal: $${goal} in $${n} steps"}])],
             {"team": "ops"}, outputParameters={"plan": "${plan.output.result.plan}"})
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    task = only(wf, "plan")
    assert task["taskType"] == "LLM_CHAT_COMPLETE" and task["status"] == "COMPLETED"
    out = task["outputData"]
    assert out["result"] == {"plan": "search", "steps": 2}
    assert out["finishReason"] == "STOP"
    assert out["promptTokens"] > 0 and out["completionTokens"] > 0
    assert out["tokenUsed"] == out["promptTokens"] + out["completionTokens"]
    assert "toolCalls" not in out
    assert wf["output"] == {"plan": "search"}
    (sent,) = llm.chats()
    assert sent["model"] == "gpt-stub" and sent["temperature"] == 0 and sent["max_tokens"] == 50
    assert sent["response_format"] == {"type": "json_object"}
    # instructions first as the system message; ${goal} has no variable and stays
    assert sent["messages"] == [{"role": "system", "content": "You plan for ops."},
                                {"role": "user", "content": "Goal: ${goal} in 3 steps"}]
    path, headers, _ = [r for r in llm.requests if r[0].endswith("/chat/completions")][0]
    assert path == "/v1/chat/completions" and headers["authorization"] == f"Bearer {API_KEY}"
    # the key lives in settings only: never in a task's input or output
    assert API_KEY not in json.dumps(wf)


def test_chat_complete_tool_calls_and_tool_results(api, cluster, ai_settings, llm):
    def handler(req):
        if any(m["role"] == "tool" for m in req["messages"]):
            return {"text": "It is 21C in Paris."}
        return {"tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]}

    llm.chat_handler = handler
    tools = [{"name": "get_weather", "type": "CALL_MCP_TOOL", "description": "Weather of a city",
              "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    wf = run(api, cluster, [
        chat("ask", tools=tools, messages=[{"role": "user", "message": "Weather in Paris?"}]),
        chat("answer", tools=tools, messages=[
            {"role": "user", "message": "Weather in Paris?"},
            {"role": "tool_call", "toolCalls": "${ask.output.toolCalls}"},
            {"role": "tool", "toolCalls": [{"taskReferenceName": "call_1", "name": "get_weather",
                                            "inputParameters": {"method": "get_weather", "city": "Paris"},
                                            "output": {"tempC": 21}}]}]),
    ])
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    ask = only(wf, "ask")["outputData"]
    assert ask["finishReason"] == "TOOL_CALLS"
    assert ask["toolCalls"] == [{"taskReferenceName": "call_1", "name": "get_weather", "type": "CALL_MCP_TOOL",
                                 "integrationNames": {},
                                 "inputParameters": {"city": "Paris", "method": "get_weather"}}]
    assert only(wf, "answer")["outputData"]["result"] == "It is 21C in Paris."
    first, second = llm.chats()
    assert first["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    assistant, tool = second["messages"][1], second["messages"][2]
    assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["id"] == "call_1"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"])["city"] == "Paris"
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"tempC": 21})}
    assert second["messages"][3] == {"role": "user", "content": "Please continue where you left off."}


def test_text_complete_and_embeddings_through_ollama(api, cluster, ai_settings, llm):
    llm.chat_handler = lambda req: {"text": "Bonjour"}
    wf = run(api, cluster, [
        {"name": "t", "taskReferenceName": "t", "type": "LLM_TEXT_COMPLETE",
         "inputParameters": {"llmProvider": "local", "model": "llama3", "prompt": "Say hello in $${lang}",
                             "promptVariables": {"lang": "French"}, "maxTokens": 20}},
        {"name": "e", "taskReferenceName": "e", "type": "LLM_GENERATE_EMBEDDINGS",
         "inputParameters": {"llmProvider": "local", "model": "nomic-embed-text", "text": "${t.output.result}"}},
    ])
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    t = only(wf, "t")["outputData"]
    assert t["result"] == "Bonjour" and t["finishReason"] == "STOP" and t["completionTokens"] == 1
    (sent,) = llm.chats("/api/chat")
    assert sent["model"] == "llama3" and sent["options"]["num_predict"] == 20
    assert sent["messages"][0] == {"role": "system", "content": "Say hello in French"}
    from tests.ai.stubs import embed

    assert only(wf, "e")["outputData"]["result"] == embed("Bonjour")


def test_json_output_that_is_not_json_fails_after_conductors_default_retries(api, cluster, ai_settings, llm, clock):
    llm.chat_handler = lambda req: {"text": "Sure! Here is a plan."}
    name = unique("ai_wf")
    api.register_workflow(workflow_def(name, [chat("plan", jsonOutput=True,
                                                   messages=[{"role": "user", "message": "plan"}])]))
    wid = api.start(name)
    cluster.run()
    wf = api.workflow(wid)
    assert [(t["status"], t["retryCount"]) for t in wf["tasks"]] == [("FAILED", 0), ("SCHEDULED", 1)]
    reason = json.loads(wf["tasks"][0]["reasonForIncompletion"])
    assert reason["response"] == "Sure! Here is a plan." and "not JSON" in reason["error"]
    assert cluster.queued == []  # LINEAR_BACKOFF 2 s: the retry waits for the sweeper
    for attempt in range(1, 4):
        clock.advance(2 * attempt + 0.1)
        sweeper.sweep_once()
        assert cluster.run() == 1
    wf = api.workflow(wid)
    assert [(t["status"], t["retryCount"]) for t in wf["tasks"]] == [("FAILED", n) for n in range(4)]
    assert wf["status"] == "FAILED"
    assert len(llm.chats()) == 4


def test_failure_reasons_unknown_provider_model_error_and_timeout(api, cluster, ai_settings, llm):
    wf = run(api, cluster, [chat("c", llmProvider="nope", messages=[{"role": "user", "message": "hi"}])])
    (task,) = wf["tasks"]
    assert task["status"] == "FAILED_WITH_TERMINAL_ERROR" and wf["status"] == "FAILED"
    assert task["reasonForIncompletion"].startswith("Unknown LLM provider 'nope': configured providers are local, openai")

    llm.chat_handler = lambda req: {"status": 404, "body": {"error": {"message": "model 'gpt-x' not found"}}}
    wf = run(api, cluster, [chat("c", model="gpt-x", messages=[{"role": "user", "message": "hi"}])])
    (task,) = wf["tasks"]
    assert task["status"] == "FAILED_WITH_TERMINAL_ERROR"
    assert task["reasonForIncompletion"] == \
        "LLM provider 'openai' answered HTTP 404 for model gpt-x: model 'gpt-x' not found"

    ai_settings["TIMEOUT_SECONDS"] = 1
    llm.chat_handler = lambda req: {"sleep": 2, "text": "late"}
    wf = run(api, cluster, [chat("c", messages=[{"role": "user", "message": "hi"}])])
    first = wf["tasks"][0]
    assert first["status"] == "FAILED"  # retriable: a retry is scheduled
    assert first["reasonForIncompletion"] == "LLM provider 'openai' timed out after 1 s (model gpt-stub)"
    assert wf["tasks"][1]["retryCount"] == 1


def test_explicit_task_definition_keeps_its_retries(api, cluster, ai_settings, llm):
    llm.chat_handler = lambda req: {"status": 500, "body": {"error": {"message": "overloaded"}}}
    task = chat("c", messages=[{"role": "user", "message": "hi"}])
    task["taskDefinition"] = {"name": "c", "retryCount": 1, "retryDelaySeconds": 0, "retryLogic": "FIXED"}
    name = unique("ai_wf")
    api.register_workflow(workflow_def(name, [task]))
    wid = api.start(name)
    cluster.run()
    sweeper.sweep_once()
    cluster.run()
    wf = api.workflow(wid)
    assert [(t["status"], t["retryCount"]) for t in wf["tasks"]] == [("FAILED", 0), ("FAILED", 1)]
    assert wf["tasks"][1]["reasonForIncompletion"] == \
        "LLM provider 'openai' answered HTTP 500 for model gpt-stub: overloaded"
    assert wf["status"] == "FAILED"


def test_ollama_tool_calls(api, cluster, ai_settings, llm):
    llm.chat_handler = lambda req: {"tool_calls": [{"name": "lookup", "arguments": {"id": 7}}]}
    wf = run(api, cluster, [chat("c", llmProvider="local", model="llama3", jsonOutput=True,
                                 tools=[{"name": "lookup", "description": "Find", "inputSchema": {"type": "object"}}],
                                 messages=[{"role": "user", "message": "find 7"}])])
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    out = only(wf, "c")["outputData"]
    assert out["finishReason"] == "TOOL_CALLS"
    (call,) = out["toolCalls"]
    assert (call["name"], call["type"], call["inputParameters"]) == ("lookup", "SIMPLE", {"id": 7, "method": "lookup"})
    (sent,) = llm.chats("/api/chat")
    assert sent["format"] == "json" and sent["tools"][0]["function"]["name"] == "lookup"


def test_a_job_lost_by_the_cluster_is_handed_out_again(api, cluster, ai_settings, llm, clock):
    llm.chat_handler = lambda req: {"text": "done"}
    name = unique("ai_wf")
    api.register_workflow(workflow_def(name, [chat("c", messages=[{"role": "user", "message": "hi"}])]))
    wid = api.start(name)
    lost = cluster.queued.pop()  # the cluster died before running it
    clock.advance(ai_settings["TIMEOUT_SECONDS"] + 29)
    sweeper.sweep_once()
    assert cluster.queued == []
    clock.advance(2)
    sweeper.sweep_once()
    assert cluster.queued == [lost]
    cluster.run()
    assert api.workflow(wid)["status"] == "COMPLETED"


def test_workflow_test_endpoint_mocks_ai_tasks(api, ai_settings, llm):
    resp = api.ok(api.post("/workflow/test", {
        "name": "t", "workflowDef": workflow_def("t", [chat("c", messages=[{"role": "user", "message": "hi"}])],
                                                 outputParameters={"r": "${c.output.result}"}),
        "taskRefToMockOutput": {"c": [{"status": "COMPLETED", "output": {"result": "mocked"}}]}}))
    assert resp.json()["status"] == "COMPLETED" and resp.json()["output"] == {"r": "mocked"}
    assert llm.chats() == []


def test_chat_in_a_loop_gets_earlier_answers_as_history(api, cluster, ai_settings, llm):
    answers = iter(["first", '{"n": 2}', "third"])
    llm.chat_handler = lambda req: {"text": next(answers)}
    wf = run(api, cluster, [{
        "name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
        "loopCondition": "$.loop['iteration'] < 3",
        "loopOver": [chat("talk", messages=[{"role": "user", "message": "go on"}])]}])
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    # the last answer is sent as a user turn asking to continue it (Conductor's
    # ensureLastMessageIsFromUser), earlier ones as assistant turns
    resume = "You were saying:\n\n{}\n\nPlease continue where you left off."
    assert [[(m["role"], m["content"]) for m in c["messages"]] for c in llm.chats()] == [
        [("user", "go on")],
        [("user", "go on"), ("user", resume.format("first"))],
        [("user", "go on"), ("assistant", "first"), ("user", resume.format('{"n": 2}'))],
    ]
