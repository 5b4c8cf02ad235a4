"""The operator UI in real headless chromium against a real server (uvicorn + qcluster):
sign in, search, open an execution, watch a node change colour live while a worker
completes its task through the API, run actions (terminate, restart, bulk pause) and
check their result; a read-only account sees no actions. Screenshots of the main pages
go to ``$UI_SCREENSHOT_DIR`` when set."""
from __future__ import annotations

import re
import time
import uuid

import pytest

from tests.browser.conftest import screenshot, sign_in

pytestmark = pytest.mark.browser

# status colours of static/ui/app.css (light scheme): white text on each passes WCAG AA
GREEN = "rgb(6,118,71)"  # COMPLETED
PURPLE = "rgb(105,65,198)"  # SCHEDULED, told apart from IN_PROGRESS
BLUE = "rgb(23,92,211)"  # IN_PROGRESS


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def chain(ui_server, refs=("a", "b")) -> str:
    """Register a workflow of SIMPLE tasks ``name_<ref>`` and return its name."""
    name = unique("ui_chain")
    ui_server.register(
        [{"name": f"{name}_{r}", "retryCount": 0, "timeoutSeconds": 0, "responseTimeoutSeconds": 600,
          "ownerEmail": "ui@example.com"} for r in refs],
        {"name": name, "version": 1, "schemaVersion": 2, "ownerEmail": "ui@example.com",
         "inputParameters": ["order_id"],
         "tasks": [{"name": f"{name}_{r}", "taskReferenceName": r, "type": "SIMPLE",
                    "inputParameters": {"order_id": "${workflow.input.order_id}"}} for r in refs]})
    return name


def open_new_chain(page, ui_server, order_id: int = 1) -> str:
    """Start a new two-task chain, sign in and open its execution page at node ``a``
    SCHEDULED; returns the workflow id."""
    wf_id = ui_server.start(chain(ui_server), {"order_id": order_id})
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    wait_node(page, "a", "SCHEDULED")
    return wf_id


def node_state(page, node_id: str) -> dict:
    return page.evaluate("""(id) => {
        const el = window.conductorGraph.cy.getElementById(id);
        if (el.empty()) return null;
        return {status: el.data('status') || null, colour: el.style('background-color').replace(/ /g, ''),
                classes: el.classes().join(' ')};
    }""", node_id)


def wait_node(page, node_id: str, status: str, timeout_ms: int = 60_000) -> None:
    """Wait (bounded, ``timeout_ms`` milliseconds) until the graph's node ``node_id`` has
    ``status``."""
    page.wait_for_function(
        "([id, st]) => window.conductorGraph && !window.conductorGraph.cy.getElementById(id).empty()"
        " && window.conductorGraph.cy.getElementById(id).data('status') === st",
        arg=[node_id, status], timeout=timeout_ms)


def click_node(page, node_id: str) -> None:
    """Bring the node into view (as an operator scrolls to it) and click it."""
    pos = page.evaluate("""(id) => { const cy = window.conductorGraph.cy; const n = cy.getElementById(id);
        cy.center(n); return n.renderedPosition(); }""", node_id)
    box = page.locator("#graph").bounding_box()
    page.mouse.click(box["x"] + pos["x"], box["y"] + pos["y"])


def watch_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def test_sign_in_search_open_and_watch_a_node_turn_green(page, ui_server):
    errors = watch_errors(page)
    name = chain(ui_server)
    correlation = unique("corr")
    wf_id = ui_server.start(name, {"order_id": 7}, correlation)

    sign_in(page, ui_server)
    page.fill("input[name=correlation_id]", correlation)
    page.click("#search-button")
    page.wait_for_url(re.compile(r".*correlation_id=" + correlation))
    rows = page.locator("tr[data-workflow-id]")
    assert rows.count() == 1
    assert "RUNNING" in rows.first.inner_text() and ">a<" in rows.first.inner_html()
    page.click(f"a[href='/execution/{wf_id}']")
    page.wait_for_url(f"**/execution/{wf_id}")

    wait_node(page, "a", "SCHEDULED")
    page.wait_for_function("document.getElementById('live-state').textContent === 'live'")
    assert page.evaluate("window.conductorLive.mode()") == "websocket"
    before = node_state(page, "a")
    assert before["colour"] == PURPLE and "dimmed" in node_state(page, "b")["classes"]

    task = ui_server.poll(f"{name}_a")
    assert task and task["referenceTaskName"] == "a"
    wait_node(page, "a", "IN_PROGRESS")
    assert node_state(page, "a")["colour"] == BLUE
    ui_server.complete(task, {"amount": 12})
    wait_node(page, "a", "COMPLETED")
    assert node_state(page, "a")["colour"] == GREEN
    wait_node(page, "b", "SCHEDULED")
    assert "dimmed" not in node_state(page, "b")["classes"]

    # a missed delta (a gap in seq) is not applied: the page asks for a fresh snapshot
    seq = page.evaluate("window.conductorLive.seq()")
    page.evaluate("""(seq) => window.conductorLive.inject({type: 'delta', seq: seq + 5,
        data: {header: Object.assign({}, window.conductorLive.state().header, {status: 'BOGUS'})}})""", seq)
    page.wait_for_function("(s) => window.conductorLive.seq() === s + 1", arg=seq)
    assert page.inner_text("#wf-status") == "RUNNING"

    # the task list followed too, and the task panel opens on a click
    page.click(".tabs button[data-tab=tasks]")
    page.wait_for_selector("#task-table tbody tr[data-task-id]")
    assert page.locator("#task-table tbody tr").count() == 2
    page.click(".tabs button[data-tab=graph]")
    click_node(page, "a")
    page.wait_for_selector("#task-panel:not([hidden])")
    page.wait_for_function("document.getElementById('panel-body').textContent.includes('browser-test-worker')")
    assert '"amount": 12' in page.inner_text("#panel-body")
    assert errors == []


def test_terminate_then_restart_from_the_actions_menu(page, ui_server):
    errors = watch_errors(page)
    wf_id = open_new_chain(page, ui_server)

    page.click("#actions-menu summary")
    assert page.locator("#actions-menu a[data-action=pause]").is_visible()
    assert not page.locator("#actions-menu a[data-action=restart]").is_visible()
    page.click("#actions-menu a[data-action=terminate]")
    page.wait_for_url(f"**/execution/{wf_id}/action/terminate?back=*")
    page.fill("#id_reason", "stopped from the browser test")
    page.click("#confirm-button")
    page.wait_for_url(f"**/execution/{wf_id}")
    page.wait_for_function("document.getElementById('wf-status').textContent === 'TERMINATED'")
    assert "Terminate: done." in page.inner_text(".messages")
    assert "stopped from the browser test" in page.inner_text("#wf-reason")
    wait_node(page, "a", "CANCELED")
    wf = ui_server.workflow(wf_id)
    assert wf["status"] == "TERMINATED" and wf["reasonForIncompletion"] == "stopped from the browser test"

    # the menu now offers what a terminated execution allows
    page.click("#actions-menu summary")
    assert page.locator("#actions-menu a[data-action=restart]").is_visible()
    assert not page.locator("#actions-menu a[data-action=terminate]").is_visible()
    page.click("#actions-menu a[data-action=restart]")
    page.click("#confirm-button")
    page.wait_for_url(f"**/execution/{wf_id}")
    page.wait_for_function("document.getElementById('wf-status').textContent === 'RUNNING'")
    wait_node(page, "a", "SCHEDULED")
    assert ui_server.workflow(wf_id)["status"] == "RUNNING"

    page.goto(f"{ui_server.base}/audit/?target={wf_id}")
    audit = page.inner_text("table.data")
    assert "terminate" in audit and "restart" in audit and "admin" in audit
    assert errors == []


def test_bulk_pause_from_the_search(page, ui_server):
    name = chain(ui_server)
    correlation = unique("bulk")
    ids = [ui_server.start(name, {"order_id": i}, correlation) for i in range(2)]
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/executions/?correlation_id={correlation}")
    page.check("#select-all")
    page.select_option("#bulk-action", "pause")
    assert page.inner_text("#selected-count") == "2 selected"
    page.click("#bulk-button")
    page.wait_for_selector("#confirm-count")
    assert page.inner_text("h1") == "Pause 2 executions?"
    screenshot(page, "bulk-confirm")
    page.click("#confirm-button")
    page.wait_for_selector("#bulk-results")
    assert "2 succeeded, 0 failed" in page.inner_text("h1")
    assert all(ui_server.workflow(i)["status"] == "PAUSED" for i in ids)


def test_read_only_account_sees_no_actions(page, ui_server):
    name = chain(ui_server)
    wf_id = ui_server.start(name, {"order_id": 3})
    sign_in(page, ui_server, "watcher")
    assert page.locator("#bulk-action").count() == 0
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    wait_node(page, "a", "SCHEDULED")
    assert page.locator("#actions-menu").count() == 0
    click_node(page, "a")
    page.wait_for_function("document.getElementById('panel-body').textContent.includes('Task id')")
    assert page.locator("#panel-body [data-task-action]").count() == 0
    status = page.evaluate("""async (url) => {
        const r = await fetch(url, {method: 'POST', credentials: 'same-origin',
            headers: {'X-CSRFToken': document.cookie.replace(/.*csrftoken=([^;]+).*/, '$1')}});
        return r.status; }""", f"/execution/{wf_id}/action/terminate")
    assert status == 403
    assert ui_server.workflow(wf_id)["status"] == "RUNNING"


DEMO_TASKS = ["fetch_order", "check_stock", "ship_express"]


def demo_definition(name: str) -> dict:
    def simple(task, ref):
        return {"name": task, "taskReferenceName": ref, "type": "SIMPLE", "inputParameters": {"order": "${workflow.input.order_id}"}}

    return {
        "name": name, "version": 1, "schemaVersion": 2, "ownerEmail": "ui@example.com",
        "description": "Operator UI demo: fork/join, switch, loop, wait",
        "inputParameters": ["order_id", "route"],
        "tasks": [
            simple("ui_demo_fetch_order", "fetch"),
            {"name": "fork", "taskReferenceName": "fork", "type": "FORK_JOIN", "forkTasks": [
                [{"name": "price", "taskReferenceName": "price", "type": "INLINE", "inputParameters": {
                    "evaluatorType": "javascript", "expression": "42"}}],
                [simple("ui_demo_check_stock", "stock")]]},
            {"name": "join", "taskReferenceName": "join", "type": "JOIN", "joinOn": ["price", "stock"]},
            {"name": "route", "taskReferenceName": "route", "type": "SWITCH", "evaluatorType": "value-param",
             "expression": "route", "inputParameters": {"route": "${workflow.input.route}"},
             "decisionCases": {"express": [simple("ui_demo_ship_express", "ship_express")], "standard": []},
             "defaultCase": [{"name": "reject", "taskReferenceName": "reject", "type": "TERMINATE",
                              "inputParameters": {"terminationStatus": "FAILED"}}]},
            {"name": "pack", "taskReferenceName": "pack", "type": "DO_WHILE",
             "loopCondition": "$.pack['iteration'] < 3", "loopOver": [
                {"name": "box", "taskReferenceName": "box", "type": "INLINE",
                 "inputParameters": {"evaluatorType": "javascript", "expression": "'box'"}},
                {"name": "label", "taskReferenceName": "label", "type": "INLINE",
                 "inputParameters": {"evaluatorType": "javascript", "expression": "'label'"}}]},
            {"name": "approve", "taskReferenceName": "approve", "type": "WAIT", "inputParameters": {}},
        ],
    }


def test_main_pages_render_without_errors(page, ui_server):
    """Walks the main pages of a richer execution (and saves the screenshots for docs/)."""
    errors = watch_errors(page)
    name = unique("ui_demo")
    ui_server.register([{"name": f"ui_demo_{t}", "retryCount": 1, "retryDelaySeconds": 0, "timeoutSeconds": 0,
                         "responseTimeoutSeconds": 600, "ownerEmail": "ui@example.com"} for t in DEMO_TASKS],
                       demo_definition(name))
    wf_id = ui_server.start(name, {"order_id": 42, "route": "express"}, "order-42")
    ui_server.start(name, {"order_id": 43, "route": "express"}, "order-43")
    fetch = ui_server.poll("ui_demo_fetch_order")
    ui_server.complete(fetch, {"amount": 99})
    stock = ui_server.poll("ui_demo_check_stock")
    ui_server.fail(stock, "stock service timed out")  # retried once: "2 attempts"
    stock = ui_server.poll("ui_demo_check_stock")
    ui_server.complete(stock, {"in_stock": True})
    ship = ui_server.poll("ui_demo_ship_express")
    assert ship is not None
    ui_server.complete(ship, {"carrier": "fast"})

    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/executions/?name={name}")
    assert page.locator("tr[data-workflow-id]").count() == 2
    screenshot(page, "executions")

    page.goto(f"{ui_server.base}/execution/{wf_id}")
    wait_node(page, "approve", "IN_PROGRESS")
    assert "2 attempts" in page.evaluate("window.conductorGraph.cy.getElementById('stock').data('label')")
    assert node_state(page, "ship_express")["colour"] == GREEN
    assert "dimmed" in node_state(page, "reject")["classes"]
    edge_classes = page.evaluate("""() => {
        const out = {};
        window.conductorGraph.cy.edges().forEach(e => { out[e.data('source') + '>' + e.data('target')] = e.classes().join(' '); });
        return out; }""")
    assert edge_classes["route>ship_express"] == "" and "dimmed" in edge_classes["route>reject"]
    page.click("#fit-graph")
    screenshot(page, "execution-graph")

    click_node(page, "pack")
    page.wait_for_selector("#pick-iteration")
    assert page.locator("#pick-iteration option").count() == 3
    page.select_option("#pick-iteration", "__1")
    assert "iteration 1 of 3" in page.evaluate("window.conductorGraph.cy.getElementById('pack').data('label')")
    click_node(page, "approve")
    page.wait_for_selector("#panel-body [data-task-action=complete_task]")
    screenshot(page, "task-panel")

    page.click(".tabs button[data-tab=timeline]")
    page.wait_for_selector(".tl-row")
    assert page.locator(".tl-row").count() >= 10
    screenshot(page, "timeline")
    page.click(".tabs button[data-tab=tasks]")
    screenshot(page, "task-list")
    page.click(".tabs button[data-tab=summary]")
    assert "order-42" in page.inner_text("#summary")

    # complete the WAIT task from the panel's action: the whole execution completes
    page.click(".tabs button[data-tab=graph]")
    page.click("#panel-body [data-task-action=complete_task]")
    page.fill("#id_output", '{"approved_by": "browser"}')
    page.click("#confirm-button")
    page.wait_for_function("document.getElementById('wf-status').textContent === 'COMPLETED'")
    wait_node(page, "approve", "COMPLETED")

    page.goto(f"{ui_server.base}/queues/")
    assert page.locator("tr[data-task-type=ui_demo_fetch_order]").count() == 1
    assert "browser-test-worker" in page.inner_text("#queues")
    screenshot(page, "queues")

    page.goto(f"{ui_server.base}/definitions/{name}/1")
    page.wait_for_function("window.conductorGraph && window.conductorGraph.cy.nodes().length > 10")
    screenshot(page, "definition")
    page.goto(f"{ui_server.base}/start/?name={name}")
    assert page.locator("input[name='input.order_id']").count() == 1
    screenshot(page, "start")
    page.fill("input[name='input.order_id']", "77")
    page.fill("input[name='input.route']", "standard")
    page.click("#start-button")
    page.wait_for_url(re.compile(r".*/execution/[0-9a-f-]{36}$"))
    wait_node(page, "fetch", "SCHEDULED")
    assert errors == []


def test_an_execution_of_2000_tasks_opens_and_stays_usable(page, ui_server):
    """A DO_WHILE of 500 iterations x 4 INLINE tasks plus a 100 kB input: the graph stays
    the size of the definition (iterations behind a picker), the task list and timeline
    are paginated, the payload is cut with a download link."""
    errors = watch_errors(page)
    name = unique("ui_big")
    body = [{"name": f"step{i}", "taskReferenceName": f"step{i}", "type": "INLINE",
             "inputParameters": {"evaluatorType": "javascript", "expression": str(i)}} for i in range(4)]
    ui_server.register([], {"name": name, "version": 1, "schemaVersion": 2, "ownerEmail": "ui@example.com",
                            "tasks": [{"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
                                       "loopCondition": "$.loop['iteration'] < 500", "loopOver": body}]})
    wf_id = ui_server.start(name, {"blob": "x" * 100_000})
    deadline = time.monotonic() + 120
    while ui_server.http.get(f"{ui_server.api}/workflow/{wf_id}", params={"includeTasks": "false"}).json()["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the 2,000-task execution did not finish"
        # one decide runs a bounded number of steps; ask for the next ones now rather
        # than waiting for the sweeper
        ui_server.http.put(f"{ui_server.api}/workflow/decide/{wf_id}", timeout=120)

    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    page.wait_for_function("window.conductorGraph && window.conductorGraph.cy.nodes().length > 0")
    wait_node(page, "loop", "COMPLETED")
    assert page.inner_text("#wf-task-count") == "2001"
    assert page.evaluate("window.conductorGraph.cy.nodes().length") == 9
    assert "iteration 500 of 500" in page.evaluate("window.conductorGraph.cy.getElementById('loop').data('label')")
    click_node(page, "loop")
    page.wait_for_selector("#pick-iteration")
    assert page.locator("#pick-iteration option").count() == 500
    page.select_option("#pick-iteration", "__7")
    assert "iteration 7 of 500" in page.evaluate("window.conductorGraph.cy.getElementById('loop').data('label')")

    page.click(".tabs button[data-tab=tasks]")
    assert page.inner_text("#task-count") == "2001 of 2001 task executions"
    assert page.locator("#task-table tbody tr").count() == 50
    assert "Page 1 of 41" in page.inner_text("#task-pager")
    page.fill("#task-filter", "step3__250")
    page.wait_for_function("document.querySelectorAll('#task-table tbody tr').length === 1")
    page.click(".tabs button[data-tab=timeline]")
    assert "Page 1 of 34" in page.inner_text("#timeline-pager")
    page.click(".tabs button[data-tab=data]")
    note = page.inner_text("[data-trunc=input]")
    assert "Showing the first 20000 of" in note
    assert len(page.inner_text("#payload-input")) <= 20_000
    assert errors == []


def test_polling_fallback_when_websockets_fail(page, ui_server):
    """With WebSocket unusable the page polls live.json and still follows the execution."""
    page.add_init_script("window.WebSocket = function () { throw new Error('blocked by the test'); };")
    name = chain(ui_server)
    wf_id = ui_server.start(name, {"order_id": 5})
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    wait_node(page, "a", "SCHEDULED")
    assert page.evaluate("window.conductorLive.mode()") == "polling"
    assert page.inner_text("#live-state") == "live (polling)"
    task = ui_server.poll(f"{name}_a")
    ui_server.complete(task)
    wait_node(page, "a", "COMPLETED")
    wait_node(page, "b", "SCHEDULED")
