"""The History tab in real headless chromium: an execution fails, the operator reruns it
from its first task in the UI, and the History tab lists every event (the rerun by
``user:admin``); the scrubber redraws the graph, the task list and the timeline as they
were before the rerun, with the moment in the URL (a deep link that opens a task at that
moment), and "Back to live" returns to the present."""
from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_operator_ui import chain, wait_node, watch_errors

pytestmark = pytest.mark.browser


def test_history_tab_and_scrubber_show_the_execution_before_a_rerun(page, ui_server):
    errors = watch_errors(page)
    name = chain(ui_server)
    wf_id = ui_server.start(name, {"order_id": 7})
    a = ui_server.poll(f"{name}_a")
    ui_server.complete(a, {"first": "answer"})
    b = ui_server.poll(f"{name}_b")
    ui_server.fail(b, "card declined")
    assert ui_server.workflow(wf_id)["status"] == "FAILED"

    # rerun from a, in the UI (audited, and recorded in the history with who)
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}/task-action/rerun?task={a['taskId']}")
    page.click("#confirm-button")
    page.wait_for_url(f"**/execution/{wf_id}*")
    page.wait_for_function("document.getElementById('wf-status').textContent === 'RUNNING'")
    wait_node(page, "a", "SCHEDULED")
    assert page.evaluate("window.conductorLive.state().tasks.length") == 1  # b's attempt is gone

    page.click("#tabbtn-history")
    assert page.get_attribute("#tabbtn-history", "role") == "tab"
    assert page.get_attribute("#tabbtn-history", "aria-selected") == "true"
    page.wait_for_function("document.querySelectorAll('#history-table tbody tr').length >= 10")
    text = page.inner_text("#history-table")
    assert "Rerun by user:admin" in text and "card declined" in text and "b polled by browser-test-worker" in text
    assert "attempt removed" in text
    assert "tab=history" in page.url

    # the last event before the rerun: workflow RUNNING -> FAILED
    failed_row = page.locator("#history-table tbody tr", has_text="Workflow RUNNING → FAILED")
    seq = int(failed_row.get_attribute("data-seq"))
    failed_row.locator("a[data-moment]").first.click()
    page.wait_for_function("(n) => window.conductorLive.moment() === n", arg=seq)
    assert f"at={seq}" in page.url
    assert page.is_visible("#moment-banner") and "FAILED" in page.inner_text("#moment-banner")
    assert page.inner_text("#wf-status") == "FAILED"
    assert not page.is_visible("#actions-menu")  # actions act on the present, not the past
    assert page.evaluate("window.conductorLive.state().tasks.map(t => t.ref + ':' + t.status).join(',')") == \
        "a:COMPLETED,b:FAILED"
    screenshot(page, "history")

    # the graph and the task list as they were
    page.click("#tabbtn-graph")
    wait_node(page, "b", "FAILED")
    wait_node(page, "a", "COMPLETED")
    page.click("#tabbtn-tasks")
    rows = page.inner_text("#task-table tbody")
    assert "card declined" in rows and "FAILED" in rows
    page.click("#tabbtn-timeline")
    assert page.locator("#timeline").inner_text().count("b") >= 1

    # step back with the scrubber: b FAILED (the workflow not yet), then b still IN_PROGRESS
    page.click("#tabbtn-history")
    page.click("#moment-prev")
    page.wait_for_function("(n) => window.conductorLive.moment() !== null && window.conductorLive.moment() < n", arg=seq)
    step = page.evaluate("window.conductorLive.moment()")
    assert page.inner_text("#wf-status") == "RUNNING"
    page.click("#moment-prev")
    page.wait_for_function("(n) => window.conductorLive.moment() < n", arg=step)
    page.wait_for_function("window.conductorLive.state().tasks.map(t => t.status).join(',') === 'COMPLETED,IN_PROGRESS'")
    assert page.input_value("#moment-range") == str(page.evaluate(
        "Array.from(document.querySelectorAll('#history-table tbody tr')).findIndex(r => r.classList.contains('current'))"))

    # a deep link: this execution, at the moment it failed, with b's task open
    page.goto(f"{ui_server.base}/execution/{wf_id}?at={seq}&task={b['taskId']}&node=b")
    page.wait_for_function("(n) => window.conductorLive && window.conductorLive.moment() === n", arg=seq)
    page.wait_for_selector("#panel-past")
    assert "card declined" in page.inner_text("#panel-body") and "FAILED" in page.inner_text("#panel-body")

    # back to the present
    page.click("#moment-back")
    page.wait_for_function("window.conductorLive.moment() === null")
    page.wait_for_function("document.getElementById('wf-status').textContent === 'RUNNING'")
    wait_node(page, "a", "SCHEDULED")
    assert "at=" not in page.url and page.is_hidden("#moment-banner")
    assert errors == []
