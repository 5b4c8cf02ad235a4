"""The Agents API in process (Django test client, the engine's system tasks run by the
``cluster`` fixture, the LLM a loopback stub): compile, deploy and start checks with
Conductor's 400 naming the field and nothing half-registered, roles, and one agent run
driven by hand (the tool answered as a worker does) to see signal, stop, status, the
execution view and the event stream."""
from __future__ import annotations

import asyncio
import json

import pytest
from conductor.ai.agents.config_serializer import AgentConfigSerializer

from apps.agents import stream
from tests.agents import agent_defs
from tests.ai.conftest import ai_settings, api, cluster, llm, mcp, mcp_sse  # noqa: F401 - fixtures
from tests.auth.conftest import as_role, auth_on  # noqa: F401 - fixtures


def ok(resp) -> dict | None:
    """The JSON body of a 200 answer (None for Conductor's empty answers)."""
    assert resp.status_code == 200, (resp.status_code, resp.content[:2000])
    return resp.json() if resp.content else None


def config(agent) -> dict:
    return AgentConfigSerializer().serialize(agent)


def weather() -> dict:
    return config(agent_defs.weather_agent())


def test_compile_answers_the_definition_and_its_workers_and_stores_nothing(api):
    body = ok(api.post("/agent/compile", {"agentConfig": config(agent_defs.poet_agent())}))
    wf = body["workflowDef"]
    assert body["requiredWorkers"] == ["no_digits"]
    assert wf["name"] == "e2e_poet" and wf["inputParameters"] == ["prompt", "media", "session_id", "context"]
    loop = next(t for t in wf["tasks"] if t["type"] == "DO_WHILE")
    llm_task = next(t for t in loop["loopOver"] if t["type"] == "LLM_CHAT_COMPLETE")
    assert llm_task["inputParameters"]["llmProvider"] == "openai"
    assert llm_task["inputParameters"]["model"] == "gpt-4o-mini"
    assert llm_task["inputParameters"]["participants"] == {"e2e_poet_guardrail_0_retry": "user"}
    assert api.get("/metadata/workflow/e2e_poet").status_code == 404
    assert api.get("/metadata/taskdefs/no_digits").status_code == 404


BAD = [
    (lambda c: c.pop("model"), "agentConfig.model"),
    (lambda c: c["tools"][0].update(toolType="generate_image"), "agentConfig.tools[0].toolType"),
    (lambda c: c.update(strategy="telepathy", agents=[dict(c)]), "agentConfig.strategy"),
    (lambda c: c.update(maxTurns=0), "agentConfig.maxTurns"),
    (lambda c: c["tools"][0].update(name="bad name/x"), "agentConfig.tools[0].name"),
    (lambda c: c.update(strategy="handoff", agents=[{"name": "sub", "model": "no-provider"}]),
     "agentConfig.agents[0].model"),
]


@pytest.mark.parametrize("spoil,field", BAD, ids=[f for _s, f in BAD])
def test_a_bad_agent_config_gets_400_naming_the_field_and_nothing_is_registered(api, spoil, field):
    cfg = weather()
    spoil(cfg)
    for path in ("/agent/compile", "/agent/deploy", "/agent/start"):
        body = api.refused(api.post(path, {"agentConfig": cfg, "prompt": "hi"}), 400)
        assert field in [e["path"] for e in body["validationErrors"]], body
    assert api.get("/metadata/workflow/e2e_weather").status_code == 404
    assert api.get("/metadata/taskdefs/get_weather").status_code == 404
    assert api.get("/workflow/search", {"query": "workflowType IN (e2e_weather)"}).json()["totalHits"] == 0


def test_requests_without_a_config_or_a_prompt_are_refused(api):
    assert "agentConfig is required" in api.refused(api.post("/agent/deploy", {}), 400)["message"]
    assert "prompt is required" in api.refused(api.post("/agent/start", {"agentConfig": weather()}), 400)["message"]
    assert "only native agent configurations" in api.refused(
        api.post("/agent/compile", {"framework": "langgraph", "rawConfig": {}}), 400)["message"]
    assert "No agent found by name: nobody" in api.refused(
        api.post("/agent/start", {"name": "nobody", "prompt": "hi"}), 404)["message"]


def test_an_agent_never_replaces_a_workflow_that_is_not_one(api):
    from tests.factories import simple_task, workflow_def

    api.register_workflow(workflow_def("e2e_weather", [simple_task("x")]))
    body = api.refused(api.post("/agent/deploy", {"agentConfig": weather()}), 409)
    assert "exists and is not an agent" in body["message"]
    assert api.get("/metadata/workflow/e2e_weather").json()["tasks"][0]["name"] == "x"
    assert api.get("/metadata/taskdefs/get_weather").status_code == 404


def test_deploy_registers_the_definition_and_missing_task_defs_only(api):
    from tests.factories import task_def

    api.register_task_defs(task_def("get_weather", retryCount=7))
    body = ok(api.post("/agent/deploy", {"agentConfig": weather()}))
    assert body == {"agentName": "e2e_weather", "requiredWorkers": ["get_weather"]}
    assert api.get("/metadata/taskdefs/get_weather").json()["retryCount"] == 7  # left as its owner wrote it
    agent = ok(api.get("/agent/e2e_weather"))
    assert agent["agentDef"]["tools"][0]["name"] == "get_weather"
    ok(api.post("/agent/deploy", {"agentConfig": weather()}))  # a second deploy replaces version 1
    assert [d["version"] for d in api.get("/metadata/workflow", {"name": "e2e_weather"}).json()] == [1]


def test_roles(as_role):
    operator, reader = as_role("operator"), as_role("read_only")
    assert operator.post("/agent/deploy", {"agentConfig": weather()}).status_code == 403
    assert reader.post("/agent/start", {"agentConfig": weather(), "prompt": "hi"}).status_code == 403
    assert reader.post("/agent/compile", {"agentConfig": weather()}).status_code == 403
    started = operator.post("/agent/start", {"agentConfig": weather(), "prompt": "hi"})
    assert started.status_code == 200, started.content
    eid = started.json()["executionId"]
    assert reader.get(f"/agent/{eid}/status").status_code == 200
    assert reader.post(f"/agent/{eid}/stop").status_code == 403
    assert as_role("worker").post(f"/agent/events/{eid}", {"type": "thinking"}).status_code == 200


def test_unknown_executions_answer_404(api):
    for resp in (api.get("/agent/nope/status"), api.get("/agent/execution/nope"), api.post("/agent/nope/stop"),
                 api.post("/agent/nope/signal", {"message": "x"}), api.post("/agent/nope/respond", {"a": 1}),
                 api.get("/agent/stream/nope")):
        assert resp.status_code == 404 and resp.json()["message"] == "No such workflow found by id: nope"


def events_of(eid: str, after: int = 0) -> list[tuple[int, dict]]:
    out, _cursor, _ended = stream.read(eid, after)
    return out


def test_a_run_by_hand_signal_status_execution_and_events(api, cluster, llm, ai_settings):
    llm.chat_handler = agent_defs.script
    started = ok(api.post("/agent/start", {"agentConfig": weather(), "prompt": "Weather in Paris?"}))
    eid = started["executionId"]
    assert started["agentName"] == "e2e_weather" and started["requiredWorkers"] == ["get_weather"]
    cluster.run()  # turn 1: the model asks for get_weather
    ok(api.post(f"/agent/{eid}/signal", {"message": "answer in one line"}))
    task = api.poll_one("get_weather")
    assert task["inputData"]["city"] == "Paris"
    status = ok(api.get(f"/agent/{eid}/status"))
    assert status["status"] == "RUNNING" and status["isRunning"] and not status["isComplete"]
    assert not status["isWaiting"] and status["output"] is None
    api.complete(task, {"result": "18C and sunny in Paris"})
    cluster.run()  # turn 2
    second = llm.chats()[-1]["messages"]
    assert {"role": "system", "content": "[SIGNALS]\nanswer in one line\n[/SIGNALS]"} in second
    status = ok(api.get(f"/agent/{eid}/status"))
    assert status["isComplete"] and status["status"] == "COMPLETED", status
    assert status["output"] == {"result": "Forecast: 18C and sunny in Paris", "finishReason": "STOP"}
    run = ok(api.get(f"/agent/execution/{eid}"))
    assert run["agentName"] == "e2e_weather" and run["tokenUsage"]["totalTokens"] > 0
    events = events_of(eid)
    kinds = [e["type"] for _i, e in events]
    assert kinds == ["thinking", "tool_call", "tool_result", "thinking", "done"]
    assert events[1][1]["args"] == {"city": "Paris"} and events[-1][1]["output"] == status["output"]
    ids = [i for i, _e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    # resuming after any event gives exactly the events after it
    for k, (event_id, _e) in enumerate(events):
        assert [e["type"] for _i, e in events_of(eid, event_id)] == kinds[k + 1:] or kinds[k] == "done"


def test_the_stream_frames_are_server_sent_events(api, cluster, llm, ai_settings):
    llm.chat_handler = lambda req: {"text": "hello"}
    cfg = config(agent_defs.greeter_agent())
    eid = ok(api.post("/agent/start", {"agentConfig": cfg, "prompt": "hi"}))["executionId"]
    cluster.run()

    async def collect():
        return [frame async for frame in stream.frames(eid, 0, max_seconds=5)]

    frames = asyncio.run(collect())
    assert frames[0] == b": connected\n\n"
    text = b"".join(frames[1:]).decode()
    blocks = [b for b in text.split("\n\n") if b]
    assert [b.split("\n")[1] for b in blocks] == ["event: thinking", "event: done"]
    done = json.loads(blocks[-1].split("\n")[2][len("data: "):])
    assert done["output"]["result"] == "hello" and done["executionId"] == eid


def test_respond_completes_the_pending_human_task(api, cluster, llm, ai_settings):
    llm.chat_handler = agent_defs.script
    eid = ok(api.post("/agent/start", {"agentConfig": config(agent_defs.clerk_agent()), "prompt": "trip"}))[
        "executionId"]
    cluster.run()
    status = ok(api.get(f"/agent/{eid}/status"))
    assert status["isWaiting"] and status["pendingTool"]["tool_name"] == "ask_user"
    assert [e["type"] for _i, e in events_of(eid)][-1] == "waiting"
    assert "must be a JSON object" in api.refused(api.post(f"/agent/{eid}/respond", raw="[1]"), 400)["message"]
    ok(api.post(f"/agent/{eid}/respond", {"answer": "Oslo"}))
    cluster.run()
    status = ok(api.get(f"/agent/{eid}/status"))
    assert status["status"] == "COMPLETED" and status["output"]["result"] == "Booked a trip to Oslo"
    assert api.refused(api.post(f"/agent/{eid}/respond", {"answer": "Rome"}), 409)["message"] == \
        f"No pending HUMAN task found in execution {eid}"


def test_stop_ends_the_loop_after_the_current_turn(api, cluster, llm, ai_settings):
    llm.chat_handler = agent_defs.script
    cfg = config(agent_defs.looper_agent())
    eid = ok(api.post("/agent/start", {"agentConfig": cfg, "prompt": "count"}))["executionId"]
    cluster.run()
    first = api.poll_one("tick")
    api.complete(first, {"ticked": 0})
    cluster.run()
    second = api.poll_one("tick")  # the model keeps asking
    ok(api.post(f"/agent/{eid}/stop"))
    assert ok(api.get(f"/agent/{eid}/status"))["status"] == "RUNNING"
    api.complete(second, {"ticked": 1})
    cluster.run()
    wf = api.workflow(eid)
    assert wf["status"] == "COMPLETED" and wf["variables"]["_stop_requested"] is True
    assert sum(1 for t in wf["tasks"] if t["taskType"] == "LLM_CHAT_COMPLETE") == 2
    assert api.poll("tick") == []


def test_executions_lists_agent_runs_only_and_tasks_are_updated_by_reference(api, cluster, llm, ai_settings):
    from tests.factories import simple_task, workflow_def

    llm.chat_handler = agent_defs.script
    api.register_workflow(workflow_def("plain_wf", [simple_task("x")]))
    api.start("plain_wf", {})
    weather_id = ok(api.post("/agent/start", {"agentConfig": weather(), "prompt": "Paris?"}))["executionId"]
    clerk_id = ok(api.post("/agent/start", {"agentConfig": config(agent_defs.clerk_agent()),
                                            "prompt": "trip", "sessionId": "sess-42"}))["executionId"]
    listed = ok(api.get("/agent/executions"))
    assert listed["totalHits"] == 2 and {r["executionId"] for r in listed["results"]} == {weather_id, clerk_id}
    only = ok(api.get("/agent/executions", {"agentName": "e2e_clerk"}))
    assert [(r["executionId"], r["agentName"], r["status"]) for r in only["results"]] == [
        (clerk_id, "e2e_clerk", "RUNNING")]
    assert [r["executionId"] for r in ok(api.get("/agent/executions", {"sessionId": "sess-42"}))["results"]] == [
        clerk_id]
    cluster.run()
    ref = ok(api.get(f"/agent/{clerk_id}/status"))["pendingTool"]["taskRefName"]
    ok(api.post(f"/agent/tasks/{clerk_id}/{ref}/COMPLETED", {"answer": "Lima"}))
    cluster.run()
    assert ok(api.get(f"/agent/{clerk_id}/status"))["output"]["result"] == "Booked a trip to Lima"
    assert api.refused(api.post(f"/agent/tasks/{clerk_id}/{ref}/COMPLETED", {}), 404)["message"] == \
        f"No pending task {ref} found in execution {clerk_id}"


def test_the_operator_ui_shows_an_agent_run(api, cluster, llm, ai_settings, client):
    from tests.ui.conftest import make_user

    llm.chat_handler = agent_defs.script
    eid = ok(api.post("/agent/start", {"agentConfig": weather(), "prompt": "Paris?"}))["executionId"]
    cluster.run()
    api.complete(api.poll_one("get_weather"), {"result": "18C and sunny in Paris"})
    cluster.run()
    client.force_login(make_user("agent-viewer", "view_executions"))
    page = client.get(f"/execution/{eid}")
    assert page.status_code == 200
    assert "e2e_weather" in page.content.decode()
    live = client.get(f"/execution/{eid}/live.json")
    assert live.status_code == 200
    text = live.content.decode()
    assert "e2e_weather_llm__2" in text and "get_weather" in text and "COMPLETED" in text


def test_a_regex_guardrail_runs_on_the_server_and_asks_for_a_retry(api, cluster, llm, ai_settings):
    from conductor.ai.agents import Agent, RegexGuardrail

    llm.chat_handler = agent_defs.script
    poet = Agent(name="regex_poet", model=agent_defs.MODEL, instructions="POET: write one line.",
                 guardrails=[RegexGuardrail(patterns=[r"\d"], name="no_digits_re", on_fail="retry",
                                            message="no digits, please")])
    started = ok(api.post("/agent/start", {"agentConfig": config(poet), "prompt": "roses"}))
    assert started["requiredWorkers"] == []  # nothing for a worker to run
    eid = started["executionId"]
    for _ in range(3):
        cluster.run()
    status = ok(api.get(f"/agent/{eid}/status"))
    assert status["status"] == "COMPLETED", status
    assert status["output"]["result"] == "roses are red and violets are blue"
    assert "no digits, please" in llm.chats()[-1]["messages"][-1]["content"]
    kinds = [(e["type"], e.get("guardrailName")) for _i, e in events_of(eid)]
    assert ("message", "no_digits_re") in kinds and ("guardrail_pass", "no_digits_re") in kinds
