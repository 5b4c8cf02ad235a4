"""The History tab in real headless chromium: an execution fails, the operator reruns it
from its first task in the UI, and the History tab lists every event (the rerun by
``user:admin``); the scrubber redraws the graph, the task list and the timeline as they
were before the rerun, with the moment in the URL (a deep link that opens a task at that
moment), and "Back to live" returns to the present."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_operator_ui import chain, wait_node, watch_errors
from tests.browser.test_operator_ui_edges import CONTRAST_JS

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


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_past_moment_shows_the_header_and_payloads_of_then(page, ui_server, scheme):
    """After a rerun from the start with a new input: the header links no execution to
    itself but says when it was rerun (a link to that moment); at the moment before, the
    header (status, start and end, reason, badge), the banner and the input are those of
    then, live updates do not overwrite them, the scrubber works from the keyboard, and
    the banner and badge are readable in both colour schemes."""
    errors = watch_errors(page)
    page.emulate_media(color_scheme=scheme)
    name = chain(ui_server)
    wf_id = ui_server.start(name, {"order_id": 7}, correlation_id="before-rerun")
    ui_server.complete(ui_server.poll(f"{name}_a"), {"first": "answer"})
    ui_server.fail(ui_server.poll(f"{name}_b"), "card declined")
    first = ui_server.workflow(wf_id)
    ui_server.http.post(f"{ui_server.api}/workflow/{wf_id}/rerun", json={
        "reRunFromWorkflowId": wf_id, "workflowInput": {"order_id": 8}, "correlationId": "after-rerun"}).raise_for_status()
    now = ui_server.workflow(wf_id)
    assert now["status"] == "RUNNING" and now.get("reRunFromWorkflowId") is None and now["startTime"] > first["endTime"]

    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    wait_node(page, "a", "SCHEDULED")
    page.wait_for_function("window.conductorLive.mode() !== 'connecting'")
    header = page.inner_text("section.header")
    assert "Rerun of" not in header and page.locator(f"section.header a[href='/execution/{wf_id}']").count() == 0
    assert page.inner_text("#wf-rerun-label") == "Rerun" and page.inner_text("#wf-rerun").startswith("rerun at ")
    assert page.inner_text("#wf-correlation") == "after-rerun" and page.inner_text("#wf-end") == "—"

    # "see history": the moment of the rerun, as it was just before it took effect
    page.click("#wf-rerun a")
    page.wait_for_function("window.conductorLive.moment() !== null")
    seq = page.evaluate("window.conductorLive.moment()")
    assert f"at={seq}" in page.url and "tab=history" in page.url
    page.wait_for_function("document.getElementById('wf-status').textContent === 'FAILED'")
    assert page.inner_text("#live-state") == f"history · #{seq}"
    banner = page.inner_text("#moment-banner")
    assert banner.startswith("Viewing history at ") and f"seq {seq}." in banner
    assert "Just after: Rerun by app:" in banner and "Back to live" in banner
    assert page.inner_text("#wf-start") == fmt(first["startTime"]) and page.inner_text("#wf-end") == fmt(first["endTime"])
    assert page.inner_text("#wf-correlation") == "before-rerun"
    assert "card declined" in page.inner_text("#wf-reason") and page.is_visible("#wf-reason-box")
    assert page.locator(f"section.header a[href='/execution/{wf_id}']").count() == 0
    screenshot(page, f"history-header-{scheme}")

    # a live update arriving now does not overwrite the past shown
    before = page.evaluate("window.conductorLive.seq()")
    ui_server.complete(ui_server.poll(f"{name}_a"), {"second": "answer"})
    if page.evaluate("window.conductorLive.mode()") == "websocket":
        page.wait_for_function("(n) => window.conductorLive.seq() > n", arg=before)
    page.evaluate("""window.conductorLive.inject({type: 'snapshot', seq: window.conductorLive.seq() + 1,
        data: {header: {status: 'COMPLETED'}}})""")
    assert page.inner_text("#wf-status") == "FAILED" and page.evaluate("window.conductorLive.moment()") == seq
    assert page.evaluate("window.conductorLive.state().tasks.map(t => t.ref + ':' + t.status).join(',')") == \
        "a:COMPLETED,b:FAILED"

    # input, output and variables as they were then
    page.click("#tabbtn-data")
    assert '"order_id": 7' in page.inner_text("#payload-input") and page.is_visible("#data-past")
    assert not page.is_visible("#tab-data a.live-only")

    # the scrubber from the keyboard: arrows step through the events, each announced
    page.click("#tabbtn-history")
    page.focus("#moment-range")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("(n) => window.conductorLive.moment() !== null && window.conductorLive.moment() < n", arg=seq)
    assert page.get_attribute("#moment-range", "aria-valuetext").startswith("#")
    assert page.evaluate("document.activeElement.id") == "moment-range"
    page.keyboard.press("End")
    page.wait_for_function("(n) => window.conductorLive.moment() > n", arg=seq)

    # readable: the banner, the badge and the banner's button
    ratios = page.evaluate(CONTRAST_JS, "#moment-title, #moment-text, #live-state, #moment-back")
    assert len(ratios) == 4 and min(ratios.values()) >= 4.5, ratios

    page.click("#moment-back")
    page.wait_for_function("window.conductorLive.moment() === null")
    page.wait_for_function("document.getElementById('wf-status').textContent === 'RUNNING'")
    page.wait_for_function("document.getElementById('live-state').textContent.indexOf('live') === 0")
    assert page.inner_text("#wf-correlation") == "after-rerun" and page.inner_text("#wf-end") == "—"
    assert page.inner_text("#wf-start") == fmt(now["startTime"]) and page.is_visible("#wf-rerun-box")
    page.click("#tabbtn-data")
    page.wait_for_function("document.getElementById('payload-input').textContent.indexOf('8') > 0")
    assert errors == []


def fmt(ms: int) -> str:
    """Epoch ms as the page shows it (UTC, to the second)."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
