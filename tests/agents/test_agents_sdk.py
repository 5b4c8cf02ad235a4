"""The Python SDK's agent runtime (``conductor.ai.agents``, conductor-python 2.0.0) end to
end against a real server (uvicorn + qcluster, API auth on, its own database: SQLite, or
PostgreSQL when the session's ``DATABASE_URL`` is), whose ``openai`` provider is a
loopback OpenAI-compatible stub answering from ``agent_defs.script``. The agents are
written as the SDK's documentation writes them (``agent_defs``); the SDK compiles them on
the server (``/api/agent/start``), runs their ``@tool`` and ``@guardrail`` functions in
its own worker processes, and reads status, executions and streams from ``/api/agent/*``.
"""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time

import httpx
import pytest
from conductor.ai.agents.testing import validate_strategy

from tests.agents import agent_defs
from tests.agents.sdk_server import agent_server
from tests.ai.stubs import LLMStub
from tests.e2e.conftest import REPO_ROOT

pytestmark = pytest.mark.e2e
API_KEY = "sk-agents-" + secrets.token_hex(8)
WAIT_SECONDS = 60


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The LLM stub, a server configured for it, and one AgentRuntime signed in with the
    suite's admin key through the environment (as a user configures the SDK)."""
    llm = LLMStub(agent_defs.script)
    env = {"CONDUCTOR_AI_OPENAI_BASE_URL": llm.origin + "/v1", "CONDUCTOR_AI_OPENAI_API_KEY": API_KEY,
           "CONDUCTOR_AI_TIMEOUT_SECONDS": "20"}
    try:
        with agent_server(tmp_path_factory.mktemp("conductor-agents-e2e"), env) as (server, runtime):
            yield server, runtime, llm
    finally:
        llm.close()


def api_get(server, path: str) -> dict:
    r = httpx.get(f"{server.url}{path}", headers=server.auth_headers(), timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def chats_of(llm, marker: str) -> list[dict]:
    return [c for c in llm.chats() if any(str(m.get("content") or "").startswith(marker)
                                          for m in c.get("messages") or [] if m.get("role") == "system")]


def test_single_agent_with_a_tool_worker(world):
    server, runtime, llm = world
    result = runtime.run(agent_defs.weather_agent(), "What is the weather in Paris?", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    # the @tool ran in the SDK's worker and its answer went back to the model
    assert result.output["result"] == "Forecast: 18C and sunny in Paris"
    run = api_get(server, f"/agent/execution/{result.execution_id}")
    tools = [t for t in run["tasks"] if t["taskType"] == "get_weather"]
    assert [(t["status"], t["outputData"]) for t in tools] == [("COMPLETED", {"result": "18C and sunny in Paris"})]
    assert sum(1 for t in run["tasks"] if t["taskType"] == "LLM_CHAT_COMPLETE") == 2
    assert run["tokenUsage"]["totalTokens"] > 0
    assert result.token_usage is not None and result.token_usage.total_tokens == run["tokenUsage"]["totalTokens"]
    # the second turn saw the tool call and its result, as Conductor's loop history gives them
    second = chats_of(llm, "WEATHER")[-1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "user"]
    assert second[1]["content"] == "What is the weather in Paris?"


def test_guardrail_rejects_then_the_retry_passes(world):
    server, runtime, llm = world
    result = runtime.run(agent_defs.poet_agent(), "A line about roses", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "roses are red and violets are blue"
    calls = chats_of(llm, "POET")[-2:]
    assert [m["role"] for m in calls[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert calls[1]["messages"][2]["content"] == "there are 3 roses"
    assert "the answer must not contain digits" in calls[1]["messages"][3]["content"]
    run = api_get(server, f"/agent/execution/{result.execution_id}")
    verdicts = [t["outputData"]["passed"] for t in run["tasks"] if t["referenceTaskName"].startswith("e2e_poet_guardrail_0__")]
    assert verdicts == [False, True]


def test_human_step_answered_through_respond(world):
    server, runtime, llm = world
    handle = runtime.start(agent_defs.clerk_agent(), "Book me a trip")
    deadline = time.monotonic() + WAIT_SECONDS
    status = handle.get_status()
    while not status.is_waiting and time.monotonic() < deadline:
        time.sleep(0.3)
        status = handle.get_status()
    assert status.is_waiting and status.pending_tool["tool_name"] == "ask_user"
    assert status.pending_tool["parameters"] == {"question": "Where to?"}
    handle.respond({"answer": "Oslo"})
    result = handle.join(timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "Booked a trip to Oslo"
    # nothing waits any more: a second answer is refused with Conductor's 409
    r = httpx.post(f"{server.url}/agent/{handle.execution_id}/respond", json={"answer": "Rome"},
                   headers=server.auth_headers(), timeout=10)
    assert r.status_code == 409 and "No pending HUMAN task" in r.json()["message"]


def test_stream_read_to_the_end(world):
    server, runtime, llm = world
    stream = runtime.stream(agent_defs.weather_agent(), "Weather in Paris, please")
    kinds = [event.type for event in stream]
    assert kinds[0] == "thinking" and kinds[-1] == "done"
    assert kinds.count("thinking") == 2
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("done")
    call = next(e for e in stream.events if e.type == "tool_call")
    assert call.tool_name == "get_weather" and call.args == {"city": "Paris"}
    result = stream.get_result()
    assert result.output == {"result": "Forecast: 18C and sunny in Paris", "finishReason": "STOP"}
    # resuming after the first event replays the rest, from the durable history
    with httpx.stream("GET", f"{server.url}/agent/stream/{stream.handle.execution_id}",
                      headers={**server.auth_headers(), "Last-Event-ID": stream_ids(server, stream)[0]},
                      timeout=30) as resp:
        replay = [line[7:] for line in resp.iter_lines() if line.startswith("event: ")]
    assert replay == kinds[1:]


def stream_ids(server, stream) -> list[str]:
    with httpx.stream("GET", f"{server.url}/agent/stream/{stream.handle.execution_id}",
                      headers=server.auth_headers(), timeout=30) as resp:
        return [line[4:] for line in resp.iter_lines() if line.startswith("id: ")]


def test_multi_agent_handoff(world):
    server, runtime, llm = world
    stream = runtime.stream(agent_defs.triage_agent(), "I was charged twice")
    events = list(stream)
    assert [e.target for e in events if e.type == "handoff"] == ["e2e_billing"]
    result = stream.get_result()
    assert result.output["result"] == "billing: your refund is on its way"
    run = api_get(server, f"/agent/execution/{stream.handle.execution_id}")
    (sub,) = [t for t in run["tasks"] if t["taskType"] == "SUB_WORKFLOW"]
    child = api_get(server, f"/agent/execution/{sub['subWorkflowId']}")
    assert child["agentName"] == "e2e_billing" and child["status"] == "COMPLETED"
    assert not chats_of(llm, "TECH")


def handoffs_of(events) -> list[str]:
    return [e.target for e in events if e.type == "handoff"]


def test_parallel_team_runs_every_sub_agent_and_joins_their_answers(world):
    server, runtime, llm = world
    agent = agent_defs.panel_agent()
    stream = runtime.stream(agent, "Weather in Paris tomorrow?")
    events = list(stream)
    assert sorted(handoffs_of(events)) == ["e2e_cons", "e2e_weather"]
    result = stream.get_result()
    validate_strategy(agent, result)
    assert result.output["result"] == ("[e2e_weather]: Forecast: 18C and sunny in Paris\n\n"
                                       "[e2e_cons]: con: it may rain tomorrow")
    assert result.sub_results == {"e2e_weather": "Forecast: 18C and sunny in Paris",
                                  "e2e_cons": "con: it may rain tomorrow"}
    run = api_get(server, f"/agent/execution/{stream.handle.execution_id}")
    children = [api_get(server, f"/agent/execution/{t['subWorkflowId']}")
                for t in run["tasks"] if t["taskType"] == "SUB_WORKFLOW"]
    assert sorted((c["agentName"], c["status"]) for c in children) == [("e2e_cons", "COMPLETED"),
                                                                        ("e2e_weather", "COMPLETED")]
    # the weather branch called its @tool in the SDK's worker, the prompt as its question
    weather = next(c for c in children if c["agentName"] == "e2e_weather")
    assert [t["status"] for t in weather["tasks"] if t["taskType"] == "get_weather"] == ["COMPLETED"]


def test_router_agent_picks_a_sub_agent_then_the_team_answers(world):
    server, runtime, llm = world
    tech_calls = len(chats_of(llm, "TECH"))
    agent = agent_defs.desk_agent()
    stream = runtime.stream(agent, "I was charged twice")
    events = list(stream)
    assert handoffs_of(events) == ["e2e_billing"]
    result = stream.get_result()
    validate_strategy(agent, result)
    assert result.output["result"] == "desk: [e2e_billing]: billing: your refund is on its way"
    # the router saw the transcript each turn: first the prompt, then billing's answer (and said DONE)
    first, second = [c["messages"][-1]["content"] for c in chats_of(llm, "ROUTER")[-2:]]
    assert first == "I was charged twice"
    assert second == ("I was charged twice\n\n[coordinator -> e2e_billing]\n\n"
                      "[e2e_billing]: billing: your refund is on its way")
    assert chats_of(llm, "BILLING")[-1]["messages"][-1]["content"] == "I was charged twice\n\n[coordinator -> e2e_billing]"
    assert len(chats_of(llm, "TECH")) == tech_calls


def test_router_function_runs_in_the_sdk_worker(world):
    server, runtime, llm = world
    result = runtime.run(agent_defs.switchboard_agent(), "My app crashes", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "My app crashes\n\n[coordinator -> e2e_tech]\n\n[e2e_tech]: tech: restart the app"
    run = api_get(server, f"/agent/execution/{result.execution_id}")
    picks = [t["outputData"].get("selected_agent") for t in run["tasks"] if t["taskType"] == "e2e_switchboard_router_fn"]
    assert sorted(picks) == ["DONE", "e2e_tech"]


def test_round_robin_team_takes_turns_in_order_on_the_transcript(world):
    server, runtime, llm = world
    agent = agent_defs.debate_agent()
    stream = runtime.stream(agent, "Remote work")
    events = list(stream)
    assert handoffs_of(events) == ["e2e_optimist", "e2e_pessimist", "e2e_optimist"]
    result = stream.get_result()
    validate_strategy(agent, result)
    assert result.output["result"] == ("Remote work\n\n[e2e_optimist]: bright side after 0 turns\n\n"
                                       "[e2e_pessimist]: dark side after 1 turns\n\n"
                                       "[e2e_optimist]: bright side after 2 turns")


def test_random_team_turns_are_its_agents(world):
    server, runtime, llm = world
    stream = runtime.stream(agent_defs.lottery_agent(), "Remote work")
    events = list(stream)
    turns = stream.get_result().output["result"].split("\n\n")
    assert turns[0] == "Remote work" and len(turns) == 5  # max_turns=4
    sides = {"e2e_optimist": "bright", "e2e_pessimist": "dark"}
    names = handoffs_of(events)
    assert len(names) == 4 and set(names) <= set(sides)
    assert turns[1:] == [f"[{name}]: {sides[name]} side after {k} turns" for k, name in enumerate(names)]


def test_swarm_agent_hands_over_with_a_transfer_tool(world):
    server, runtime, llm = world
    tech_calls = len(chats_of(llm, "TECH"))
    stream = runtime.stream(agent_defs.swarm_agent(), "I was charged twice")
    events = list(stream)
    assert handoffs_of(events) == ["e2e_swarm", "e2e_billing"]
    result = stream.get_result()
    assert result.output["result"] == ("I was charged twice\n\n[e2e_swarm -> e2e_billing]: a double charge\n\n"
                                       "[e2e_billing]: billing: your refund is on its way")
    billing = chats_of(llm, "BILLING")[-1]
    assert billing["messages"][-1]["content"] == "I was charged twice\n\n[e2e_swarm -> e2e_billing]: a double charge"
    assert sorted(t["function"]["name"] for t in billing["tools"]) == ["e2e_billing_transfer_to_e2e_swarm",
                                                                       "e2e_billing_transfer_to_e2e_tech"]
    assert len(chats_of(llm, "TECH")) == tech_calls


def test_deploy_then_start_by_name(world):
    server, runtime, llm = world
    (info,) = runtime.deploy(agent_defs.greeter_agent())
    assert info.registered_name == "e2e_greeter"
    agent = api_get(server, "/agent/e2e_greeter")
    assert agent["agentDef"]["instructions"] == "GREETER: greet."
    result = runtime.run("e2e_greeter", "Hi there", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    assert result.output["result"] == "hello from a deployed agent"


def test_stop_mid_run(world):
    server, runtime, llm = world
    handle = runtime.start(agent_defs.looper_agent(), "Count")
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        run = api_get(server, f"/agent/execution/{handle.execution_id}")
        if sum(1 for t in run["tasks"] if t["taskType"] == "tick" and t["status"] == "COMPLETED") >= 2:
            break
        time.sleep(0.3)
    handle.stop()
    result = handle.join(timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    run = api_get(server, f"/agent/execution/{handle.execution_id}")
    turns = sum(1 for t in run["tasks"] if t["taskType"] == "LLM_CHAT_COMPLETE")
    assert 2 <= turns < 20  # the loop ended on the stop, long before its 200 turns


def test_the_readme_example_runs(world):
    """examples/sdk_agent.py (docs/agents.md) against this server's provider (``--no-model``)."""
    server, runtime, llm = world
    proc = subprocess.run([sys.executable, "examples/sdk_agent.py", "--no-model"], cwd=REPO_ROOT, text=True,
                          capture_output=True, timeout=WAIT_SECONDS * 2, env={**os.environ, **server.sdk_env()})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'Output: {"result": "Forecast: 18C and sunny in Paris", "finishReason": "STOP"}' in proc.stdout
