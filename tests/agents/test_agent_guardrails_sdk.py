"""Guardrails and memory of ``conductor.ai.agents`` agents end to end through the Python
SDK's AgentRuntime (conductor-python 2.0.0) against a real server (uvicorn + qcluster, API
auth on, SQLite or the session's PostgreSQL), its ``openai`` provider a loopback stub
answering from ``guard_defs.script``: an LLM judge that asks for a retry, a tool guardrail
that stops a call before the tool runs, a team's output guardrail, a human review answered
through ``/respond`` (edit, free text, rejection), and conversation memory."""
from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.agents import guard_defs
from tests.agents.sdk_server import agent_server
from tests.agents.test_agents_sdk import WAIT_SECONDS, api_get, chats_of
from tests.ai.stubs import LLMStub

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The LLM stub answering from ``guard_defs.script``, a server configured for it and an
    AgentRuntime signed in through the environment (``tests/agents/sdk_server.py``)."""
    llm = LLMStub(guard_defs.script)
    env = {"CONDUCTOR_AI_OPENAI_BASE_URL": llm.origin + "/v1", "CONDUCTOR_AI_OPENAI_API_KEY": "sk-guard",
           "CONDUCTOR_AI_TIMEOUT_SECONDS": "20"}
    try:
        with agent_server(tmp_path_factory.mktemp("conductor-guardrails-e2e"), env) as (server, runtime):
            yield server, runtime, llm
    finally:
        llm.close()


def tasks_of(server, execution_id: str) -> list[dict]:
    return api_get(server, f"/agent/execution/{execution_id}")["tasks"]


def test_an_llm_judge_rejects_and_the_retry_passes(world):
    server, runtime, llm = world
    result = runtime.run(guard_defs.advisor_agent(), "How do I get rich?", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "save a little every month"
    # the judge read each answer under Conductor's judge prompt, in a workflow of its own
    judged = [c["messages"][-1]["content"] for c in chats_of(llm, "You are a content safety evaluator")]
    assert judged[-2:] == ["buy crypto now", "save a little every month"]
    assert "POLICY: No investment advice about crypto." in chats_of(llm, "You are a")[-1]["messages"][0]["content"]
    tasks = tasks_of(server, result.execution_id)
    verdicts = [t["outputData"]["result"] for t in tasks if t["referenceTaskName"].startswith("g2e_advisor_guardrail_0__")]
    assert [(v["passed"], v["message"]) for v in verdicts] == [(False, "no crypto advice"), (True, "")]
    judges = [t for t in tasks if t["taskType"] == "SUB_WORKFLOW"]
    assert len(judges) == 2 and all(t["status"] == "COMPLETED" for t in judges)
    # the model saw the judge's reason as a user message, not the judge's own turns
    second = chats_of(llm, "ADVISOR")[-1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert "no crypto advice" in second[-1]["content"]


def test_a_tool_guardrail_stops_the_call_before_the_tool_runs(world):
    server, runtime, llm = world
    result = runtime.run(guard_defs.shell_agent(), "Clean up the disk", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "done: ran ls"
    tasks = tasks_of(server, result.execution_id)
    # only the allowed call ran in the SDK's tool worker; the guardrail ran in its own worker
    assert [t["outputData"] for t in tasks if t["taskType"] == "run_command"] == [{"result": "ran ls"}]
    verdicts = [t["outputData"] for t in tasks if t["taskType"] == "no_destruction"]
    assert [v["passed"] for v in verdicts] == [False, True]
    assert "destructive commands are not allowed" in chats_of(llm, "SHELL")[-2]["messages"][-1]["content"]


def test_a_team_output_guardrail_runs_the_team_again_with_its_message(world):
    server, runtime, llm = world
    result = runtime.run(guard_defs.scribe_team(), "Write the release notes", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "final draft"
    tasks = tasks_of(server, result.execution_id)
    teams = [t for t in tasks if t["taskType"] == "SUB_WORKFLOW"]
    assert [t["status"] for t in teams] == ["COMPLETED", "COMPLETED"]
    retried = chats_of(llm, "SCRIBE")[-1]["messages"][-1]["content"]
    assert retried.startswith("Write the release notes\n\n") and "no numbered drafts" in retried


def wait_for_review(handle):
    deadline = time.monotonic() + WAIT_SECONDS
    status = handle.get_status()
    while not status.is_waiting and time.monotonic() < deadline:
        time.sleep(0.3)
        status = handle.get_status()
    assert status.is_waiting, status
    return status


@pytest.mark.parametrize("answer, status, output", [
    ({"approved": False, "edited_output": "there are some roses"}, "COMPLETED", "there are some roses"),
    ({"approved": False, "reason": "numbers are not allowed"}, "FAILED", None),
], ids=["edit", "reject"])
def test_a_human_reviews_a_failed_guardrail_through_respond(world, answer, status, output):
    server, runtime, llm = world
    handle = runtime.start(guard_defs.counter_agent(), "How many roses?")
    waiting = wait_for_review(handle)
    assert waiting.pending_tool["tool_name"] == "g2e_counter_guardrail_0_human"
    assert waiting.pending_tool["parameters"]["guardrail_message"] == "the answer must not contain digits"
    assert waiting.pending_tool["parameters"]["llm_output"] == "there are 3 roses"
    handle.respond(answer)
    result = handle.join(timeout=WAIT_SECONDS)
    assert result.status == status, result.error
    if output is not None:
        assert result.output["result"] == output
    else:
        assert "numbers are not allowed" in (api_get(server, f"/agent/{handle.execution_id}/status")
                                             ["reasonForIncompletion"] or "")
    r = httpx.post(f"{server.url}/agent/{handle.execution_id}/respond", json={"approved": True},
                   headers=server.auth_headers(), timeout=10)
    assert r.status_code == 409


def test_a_streamed_review_answered_in_free_text(world):
    server, runtime, llm = world
    stream = runtime.stream(guard_defs.counter_agent(), "How many roses?")
    kinds = []
    for event in stream:
        kinds.append(event.type)
        if event.type == "waiting":
            stream.handle.respond({"message": "looks good to me"})
    assert kinds.index("message") < kinds.index("waiting") and kinds[-1] == "done"
    assert "guardrail_fail" not in kinds
    assert stream.get_result().output["result"] == "there are 3 roses"
    # the agent's model read the reviewer's words as an approval
    assert chats_of(llm, "Convert the human's response")[-1]["messages"][-1]["content"] == "looks good to me"
    # the verdict's event says a person reviews it (the Agent tab shows it so)
    with httpx.stream("GET", f"{server.url}/agent/stream/{stream.handle.execution_id}",
                      headers=server.auth_headers(), timeout=30) as resp:
        events = [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith("data: ")]
    (review,) = [e for e in events if e.get("type") == "message"]
    assert review["onFail"] == "human" and "the answer must not contain digits" in review["content"]


def test_memory_is_given_to_the_model_before_the_prompt(world):
    server, runtime, llm = world
    result = runtime.run(guard_defs.recall_agent(), "What is my name?", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "remembered: user: My name is Ada. | assistant: Nice to meet you, Ada."
    messages = chats_of(llm, "RECALL")[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[-1]["content"] == "What is my name?"


def test_structured_output_asks_the_model_for_json_of_the_schema(world):
    server, runtime, llm = world
    result = runtime.run(guard_defs.reporter_agent(), "Weather in Paris?", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == {"city": "Paris", "temperature": 18.5}
    chat = chats_of(llm, "REPORTER")[-1]
    assert chat["messages"][0]["content"].endswith(
        "Respond with a JSON object matching this schema: {'city': str, 'temperature': float}. "
        "Output only valid JSON, no other text.")
    assert chat.get("response_format", {}).get("type") == "json_object"


def test_prefill_required_tools_and_callbacks(world):
    server, runtime, llm = world
    result = runtime.run(guard_defs.auditor_agent(), "Audit A1", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "report filed: A1: 120 EUR"
    tasks = tasks_of(server, result.execution_id)
    # the prefill ran once before the loop, in the SDK's worker, and was never a tool call
    assert [t["outputData"] for t in tasks if t["taskType"] == "get_balance"] == [{"result": "A1: 120 EUR"}]
    first = chats_of(llm, "AUDITOR")[-3]["messages"]
    assert [m["role"] for m in first] == ["system", "system", "user"]
    assert first[1]["content"].startswith("# Pre-loaded context") and "## get_balance(account=A1)" in first[1]["content"]
    # the answer without file_report was not final: the model was told to call it
    second = chats_of(llm, "AUDITOR")[-2]["messages"]
    assert second[-1] == {"role": "user", "content": "You MUST call these tools before completing: file_report"}
    assert [t["status"] for t in tasks if t["taskType"] == "file_report"] == ["COMPLETED"]
    # the before_model callback ran in the SDK's worker around each of the 3 model calls
    callbacks = [t for t in tasks if t["taskType"] == "g2e_auditor_before_model"]
    assert len(callbacks) == 3 and all(t["status"] == "COMPLETED" for t in callbacks)


def test_a_gate_ends_a_sequential_pipeline(world):
    server, runtime, llm = world
    writes = len(chats_of(llm, "WRITER"))
    result = runtime.run(guard_defs.pipeline_agent(), "Anything to do?", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "STOP: nothing to do"
    assert len(chats_of(llm, "WRITER")) == writes
    steps = [t for t in tasks_of(server, result.execution_id) if t["taskType"] == "SUB_WORKFLOW"]
    assert len(steps) == 1


def test_a_swarm_termination_ends_it_on_the_transcript(world):
    server, runtime, llm = world
    scribes = len(chats_of(llm, "SCRIBE"))
    result = runtime.run(guard_defs.dispatch_swarm(), "Summarize the week", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "Summarize the week\n\n[g2e_dispatch -> g2e_scribe]: a summary, please"
    assert len(chats_of(llm, "SCRIBE")) == scribes
