"""The task panel of an LLM task in real chromium: the conversation is shown message by
message (role and text), beside the failure reason (this server has no LLM provider, so
the task fails with ``Unknown LLM provider``)."""
from __future__ import annotations

import time
import uuid

import pytest

from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_operator_ui import click_node, wait_node, watch_errors

pytestmark = pytest.mark.browser


def test_llm_task_panel_shows_the_conversation(page, ui_server):
    name = f"ai_panel_{uuid.uuid4().hex[:8]}"
    ui_server.register([], {"name": name, "version": 1, "schemaVersion": 2, "tasks": [
        {"name": "ask", "taskReferenceName": "ask", "type": "LLM_CHAT_COMPLETE",
         "inputParameters": {"llmProvider": "nowhere", "model": "m1", "instructions": "Answer in one word.",
                             "messages": [{"role": "user", "message": "Capital of <France>?"}]}}]})
    wf_id = ui_server.start(name)
    deadline = time.monotonic() + 60
    while ui_server.workflow(wf_id)["status"] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.2)
    errors = watch_errors(page)
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    wait_node(page, "ask", "FAILED_WITH_TERMINAL_ERROR")
    click_node(page, "ask")
    page.wait_for_selector("#ai-panel .ai-msg")
    roles = page.locator("#ai-panel .ai-role").all_inner_texts()
    assert [r.lower() for r in roles] == ["system", "user"]
    texts = page.locator("#ai-panel .ai-msg pre").all_inner_texts()
    assert texts == ["Answer in one word.", "Capital of <France>?"]  # escaped, shown as text
    assert "nowhere / m1" in page.inner_text("#ai-panel")
    assert "Unknown LLM provider 'nowhere'" in page.inner_text("#panel-body")
    screenshot(page, "task-panel-llm")
    assert errors == []
