"""The execution page's Agent tab in real chromium: an agent written with the Python SDK's
``conductor.ai.agents`` (a ``@tool`` worker run by the SDK's own worker process) runs
against the server's loopback LLM stub (``tests.agents.agent_defs.script``); a read-only
user then sees the run as a conversation: the prompt (escaped), the model's tool call,
the tool call with its argument and result, the token counts the LLM tasks reported and
the final answer."""
from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_operator_ui import watch_errors

pytestmark = pytest.mark.browser
WAIT_SECONDS = 60


@pytest.fixture(scope="module")
def agent_runtime(ui_server):
    """One AgentRuntime signed in with the session's admin key through the environment."""
    from conductor.ai.agents import AgentRuntime

    with pytest.MonkeyPatch.context() as mp:
        for name, value in ui_server.server.sdk_env().items():
            mp.setenv(name, value)
        with AgentRuntime() as runtime:
            yield runtime


def test_agent_tab_shows_the_run_as_a_conversation(page, ui_server, agent_runtime):
    from tests.agents import agent_defs

    prompt = "What is the weather in <b>Paris</b>?"
    result = agent_runtime.run(agent_defs.weather_agent(), prompt, timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    wf = ui_server.http.get(f"{ui_server.api}/workflow/{result.execution_id}", params={"includeTasks": "true"}).json()
    llm_tasks = [t for t in wf["tasks"] if t["taskType"] == "LLM_CHAT_COMPLETE"]
    assert len(llm_tasks) == 2
    total = sum(t["outputData"]["tokenUsed"] for t in llm_tasks)
    prompt_tokens = sum(t["outputData"]["promptTokens"] for t in llm_tasks)
    assert total > 0

    errors = watch_errors(page)
    sign_in(page, ui_server, "watcher")  # read-only: sees the run, changes nothing
    page.goto(f"{ui_server.base}/execution/{result.execution_id}")
    page.click("#tabbtn-agent")
    page.wait_for_selector("#agent-run [data-entry=done]")
    entries = page.locator("#agent-run [data-entry]").evaluate_all("els => els.map(e => e.dataset.entry)")
    assert entries == ["user", "assistant", "tool", "assistant", "done"]
    assert page.locator("#agent-run [data-entry=user] pre").inner_text() == prompt  # escaped, shown as text
    assert page.locator("#agent-run b").count() == 0
    first_turn = page.locator("#agent-run [data-entry=assistant]").first
    assert "asks for get_weather" in first_turn.inner_text()
    tool = page.locator("#agent-run [data-entry=tool]")
    assert tool.locator(".ai-role code").inner_text() == "get_weather"
    assert '"city": "Paris"' in tool.locator(".agent-args pre").inner_text()
    assert "18C and sunny in Paris" in tool.locator(".agent-result pre").inner_text()
    assert page.locator("#agent-run [data-entry=done] pre").inner_text() == "Forecast: 18C and sunny in Paris"
    assert page.inner_text("#agent-total-tokens") == str(total)
    assert page.inner_text("#agent-prompt-tokens") == str(prompt_tokens)
    assert page.inner_text("#agent-turns") == "2"
    turn_tokens = page.locator("#agent-run [data-tokens]").all_inner_texts()
    assert [f"{t['outputData']['tokenUsed']} total" in text for t, text in zip(llm_tasks, turn_tokens)] == [True, True]
    screenshot(page, "agent-run", full_page=True)
    # a tool call's task link opens that task's panel on the graph
    tool.locator("a[data-open-task]").click()
    page.wait_for_selector("#task-panel:not([hidden])")
    # the panel opens at once and fills its body when the task's JSON arrives
    page.wait_for_function("document.getElementById('panel-body').textContent.includes('get_weather')")
    assert errors == []

    # the tab is only on an agent's execution; agent.json answers 404 for any other
    name = f"not_an_agent_{result.execution_id[:8]}"
    ui_server.register([], {"name": name, "version": 1, "schemaVersion": 2, "tasks": [
        {"name": "one", "taskReferenceName": "one", "type": "INLINE",
         "inputParameters": {"evaluatorType": "graaljs", "expression": "1"}}]})
    other = ui_server.start(name)
    page.goto(f"{ui_server.base}/execution/{other}")
    page.wait_for_selector("#tabbtn-graph")
    assert page.locator("#tabbtn-agent").count() == 0
    assert page.request.get(f"{ui_server.base}/execution/{other}/agent.json").status == 404
    assert page.request.get(f"{ui_server.base}/execution/{result.execution_id}/agent.json").status == 200
    assert errors == []


def test_agent_tab_follows_a_human_step_live_shows_guardrails_and_links_a_handoff(page, ui_server, agent_runtime):
    import time

    from tests.agents import agent_defs

    handle = agent_runtime.start(agent_defs.clerk_agent(), "Book me a trip")
    deadline = time.monotonic() + WAIT_SECONDS
    while not handle.get_status().is_waiting and time.monotonic() < deadline:
        time.sleep(0.3)
    errors = watch_errors(page)
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{handle.execution_id}?tab=agent")
    human = page.locator("#agent-run [data-entry=human]")
    human.wait_for()
    assert human.locator(".ai-role code").inner_text() == "ask_user"
    assert '"question": "Where to?"' in human.locator("pre").first.inner_text()
    assert "waiting for an answer" in human.inner_text()
    assert page.locator("#agent-run [data-entry=done]").count() == 0
    handle.respond({"answer": "Oslo"})
    # the live channel redraws the tab: the answer and the final answer appear without a reload
    page.wait_for_selector("#agent-run [data-entry=done]")
    assert '"answer": "Oslo"' in human.locator("pre").nth(1).inner_text()
    assert page.locator("#agent-run [data-entry=done] pre").inner_text() == "Booked a trip to Oslo"

    # a guardrail that rejects the first answer and passes the second
    result = agent_runtime.run(agent_defs.poet_agent(), "A line about roses", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    page.goto(f"{ui_server.base}/execution/{result.execution_id}?tab=agent")
    page.wait_for_selector("#agent-run [data-entry=done]")
    verdicts = page.locator("#agent-run .ai-guardrail .ai-role").all_inner_texts()
    assert [v.lower().rsplit("· ", 1)[1] for v in verdicts] == ["rejected, the model answers again", "passed"]
    assert "the answer must not contain digits" in page.locator("#agent-run .ai-guardrail pre").first.inner_text()
    turns = page.locator("#agent-run [data-entry=assistant] > pre").all_inner_texts()
    assert turns == ["there are 3 roses", "roses are red and violets are blue"]

    result = agent_runtime.run(agent_defs.triage_agent(), "My invoice is wrong", timeout=WAIT_SECONDS)
    assert result.status == "COMPLETED", result.error
    page.goto(f"{ui_server.base}/execution/{result.execution_id}?tab=agent")
    link = page.locator("#agent-run [data-entry=handoff] a[data-handoff]")
    link.wait_for()
    assert page.locator("#agent-run [data-entry=handoff] .ai-role code").inner_text() == "e2e_billing"
    link.click()
    page.wait_for_url("**/execution/" + link_target(ui_server, result.execution_id))
    page.click("#tabbtn-agent")  # the sub-agent's execution is an agent's too
    page.wait_for_selector("#agent-run [data-entry=done]")
    assert page.locator("#agent-run [data-entry=done] pre").inner_text() == "billing: your refund is on its way"
    assert errors == []


def link_target(ui_server, execution_id: str) -> str:
    """The execution id of the handoff's SUB_WORKFLOW task, read through the API."""
    wf = ui_server.workflow(execution_id)
    return next(t["subWorkflowId"] for t in wf["tasks"] if t["taskType"] == "SUB_WORKFLOW")
