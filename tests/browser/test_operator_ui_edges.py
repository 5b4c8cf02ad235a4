"""The operator UI's rough edges (issue #13) in real headless chromium: the view state
lives in the URL and survives a reload and an action, the graph is reachable and usable
by keyboard, the wheel scrolls the page (Ctrl + wheel zooms), Fit keeps labels readable,
tabs are WAI-ARIA tabs, status colours pass WCAG AA in light and dark schemes, the
timeline zooms, a dynamic fork's member shows its details at the top of the panel with a
status filter, failure clusters select their rows, favicon and styled 404 pages."""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_operator_ui import chain, click_node, open_new_chain, unique, wait_node, watch_errors

pytestmark = pytest.mark.browser

CONTRAST_JS = """(selector) => {
  function lum(rgb) {
    const c = rgb.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number).map(v => v / 255)
      .map(v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }
  function background(el) {  // the first ancestor that paints a background
    for (let e = el; e; e = e.parentElement) {
      const bg = getComputedStyle(e).backgroundColor;
      if (!/rgba\\(.*,\\s*0\\)$/.test(bg) && bg !== 'transparent') return bg;
    }
    return 'rgb(255, 255, 255)';
  }
  const out = {};
  document.querySelectorAll(selector).forEach(el => {
    const a = lum(getComputedStyle(el).color), b = lum(background(el));
    out[el.textContent.trim()] = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  });
  return out;
}"""


def test_view_state_is_in_the_url_and_survives_reload_and_actions(page, ui_server):
    errors = watch_errors(page)
    wf_id = open_new_chain(page, ui_server)
    click_node(page, "a")
    page.wait_for_function("document.getElementById('panel-body').textContent.includes('Task id')")
    task_id = ui_server.workflow(wf_id)["tasks"][0]["taskId"]
    assert f"task={task_id}" in page.url and "node=a" in page.url
    page.click("#tabbtn-timeline")
    assert "tab=timeline" in page.url

    page.reload()
    page.wait_for_selector("#tab-timeline:not([hidden]) .tl-row")
    assert page.get_attribute("#tabbtn-timeline", "aria-selected") == "true"
    assert page.is_visible("#task-panel") is False  # the panel belongs to the graph tab
    page.click("#tabbtn-graph")
    page.wait_for_function("document.getElementById('panel-body').textContent.includes('Task id')")
    assert page.evaluate("window.conductorGraph.cy.$(':selected').map(n => n.id())") == ["a"]

    # an action comes back to the same view
    page.click("#tabbtn-tasks")
    page.click("#actions-menu summary")
    page.click("#actions-menu a[data-action=pause]")
    page.wait_for_url(re.compile(r".*/action/pause\?back=.*"))
    page.click("#confirm-button")
    page.wait_for_url(re.compile(rf".*/execution/{wf_id}\?.*tab=tasks.*"))
    page.wait_for_function("document.getElementById('wf-status').textContent === 'PAUSED'")
    page.wait_for_function("document.getElementById('tabbtn-tasks').getAttribute('aria-selected') === 'true'")
    page.wait_for_function("window.conductorLive.state() !== null")
    assert f"task={task_id}" in page.url
    assert errors == []


def test_graph_keyboard_wheel_zoom_and_fit(page, ui_server):
    errors = watch_errors(page)
    name = chain(ui_server, refs=tuple(f"t{i}" for i in range(19)))
    wf_id = ui_server.start(name, {"order_id": 2})
    sign_in(page, ui_server)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    wait_node(page, "t0", "SCHEDULED")
    # the canvas ends above the fold
    box = page.locator("#graph").bounding_box()
    assert box["y"] + box["height"] <= 900

    # the wheel scrolls the page and leaves the zoom alone; Ctrl + wheel zooms
    zoom = page.evaluate("window.conductorGraph.cy.zoom()")
    page.mouse.move(box["x"] + 200, box["y"] + 100)
    page.mouse.wheel(0, 300)
    page.wait_for_function("window.scrollY > 0")
    assert page.evaluate("window.conductorGraph.cy.zoom()") == zoom
    page.keyboard.down("Control")
    page.mouse.wheel(0, -200)
    page.keyboard.up("Control")
    page.wait_for_function("(z) => window.conductorGraph.cy.zoom() > z", arg=zoom)

    # Fit keeps 19 nodes readable
    page.click("#fit-graph")
    assert page.evaluate("window.conductorGraph.cy.zoom()") >= 0.55 - 1e-6

    # keyboard: focus the canvas, walk to the second task, open it
    page.focus("#graph")
    for _ in range(3):  # start, t0, t1
        page.keyboard.press("ArrowDown")
    assert "t1" in page.get_attribute("#graph", "aria-label")
    page.keyboard.press("Enter")
    page.wait_for_selector("#task-panel:not([hidden])")
    assert page.inner_text("#panel-title").startswith("t1")
    page.keyboard.press("+")
    assert errors == []


def test_tabs_are_aria_tabs_with_arrow_keys(page, ui_server):
    open_new_chain(page, ui_server, 3)
    assert page.locator("[role=tablist] [role=tab]").count() == 7
    assert page.locator("[role=tabpanel]").count() == 7
    page.focus("#tabbtn-graph")
    page.keyboard.press("ArrowRight")
    assert page.get_attribute("#tabbtn-tasks", "aria-selected") == "true"
    assert page.evaluate("document.activeElement.id") == "tabbtn-tasks"
    page.keyboard.press("End")
    assert page.is_visible("#tab-history")
    assert page.get_attribute("#tabbtn-graph", "tabindex") == "-1"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_status_colours_pass_wcag_aa_and_dark_mode_follows_the_browser(page, ui_server, scheme):
    page.emulate_media(color_scheme=scheme)
    open_new_chain(page, ui_server, 4)
    ratios = page.evaluate(CONTRAST_JS, ".legend .status")
    assert len(ratios) >= 6 and min(ratios.values()) >= 4.5, ratios
    text_ratios = page.evaluate(CONTRAST_JS, "main h1 .muted, .facts dt, .facts dd, .tabs button, .hint, a#definition-link")
    assert len(text_ratios) >= 5 and min(text_ratios.values()) >= 4.5, text_ratios
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    level = sum(int(v) for v in re.findall(r"\d+", background)[:3])
    assert (level < 150) if scheme == "dark" else (level > 600)
    node_bg = page.evaluate("window.conductorGraph.cy.getElementById('b').style('background-color')")
    node_level = sum(int(v) for v in re.findall(r"\d+", node_bg)[:3])
    assert (node_level < 200) if scheme == "dark" else (node_level > 600)
    if scheme == "dark":
        screenshot(page, "execution-dark")


def test_timeline_zooms(page, ui_server):
    name = chain(ui_server)
    wf_id = ui_server.start(name, {"order_id": 5})
    task = ui_server.poll(f"{name}_a")
    ui_server.complete(task)
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}?tab=timeline")
    page.wait_for_selector(".tl-row")
    width = page.evaluate("document.querySelector('.tl-inner').getBoundingClientRect().width")
    page.click("#tl-zoom-in")
    page.click("#tl-zoom-in")
    assert page.inner_text("#tl-zoom-level") == "4×"
    wider = page.evaluate("document.querySelector('.tl-inner').getBoundingClientRect().width")
    assert wider > 3.5 * width
    page.check("#tl-runs-only")
    page.wait_for_selector(".tl-row")


def test_dynamic_fork_member_details_at_the_top_with_a_status_filter(page, ui_server):
    errors = watch_errors(page)
    name = unique("ui_dyn")
    worker = f"{name}_work"
    ui_server.register(
        [{"name": worker, "retryCount": 0, "timeoutSeconds": 0, "responseTimeoutSeconds": 600,
          "ownerEmail": "ui@example.com"}],
        {"name": name, "version": 1, "schemaVersion": 2, "ownerEmail": "ui@example.com", "tasks": [
            {"name": "fan", "taskReferenceName": "fan", "type": "FORK_JOIN_DYNAMIC",
             "dynamicForkTasksParam": "tasks", "dynamicForkTasksInputParamName": "inputs",
             "inputParameters": {"tasks": "${workflow.input.tasks}", "inputs": "${workflow.input.inputs}"}},
            {"name": "join", "taskReferenceName": "join", "type": "JOIN"}]})
    n = 60
    tasks = [{"name": worker, "taskReferenceName": f"m{i}", "type": "SIMPLE"} for i in range(n)]
    wf_id = ui_server.start(name, {"tasks": tasks, "inputs": {f"m{i}": {"i": i} for i in range(n)}})
    for _ in range(5):
        ui_server.complete(ui_server.poll(worker))
    ui_server.fail(ui_server.poll(worker), "member failed")  # the fork fails: the others are CANCELED
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    page.wait_for_function("window.conductorGraph && window.conductorGraph.cy.nodes('.kind-dynamic').length === 1")
    dyn = page.evaluate("window.conductorGraph.cy.nodes('.kind-dynamic')[0].id()")
    page.wait_for_function("(id) => (window.conductorGraph.nodes[id].members || []).length === 60", arg=dyn)
    click_node(page, dyn)
    page.wait_for_selector("#dyn-status")
    # the status strip: one cell per member, failures one click away
    assert page.locator("#member-strip .cell").count() == 60
    assert page.locator("#member-strip .cell.st-FAILED").count() == 1
    assert page.locator("#member-strip .cell.st-COMPLETED").count() == 5
    page.click("#first-failed-member")
    page.wait_for_function("""() => { const t = document.getElementById('panel-body').textContent;
        return t.includes('Task id') && (t.includes('member failed') || t.includes('CANCELED')); }""")
    page.select_option("#dyn-status", "COMPLETED")
    page.wait_for_function("document.querySelectorAll('#dyn-members tr').length === 5")
    page.click("#dyn-members a[data-open-task]")
    page.wait_for_function("document.getElementById('panel-body').textContent.includes('Task id')")
    # the member's details start at the top of the panel, the list follows
    top = page.evaluate("""() => {
        const body = document.getElementById('panel-body').getBoundingClientRect().top;
        const summary = [...document.querySelectorAll('#panel-body details summary')].find(s => s.textContent === 'Summary');
        return summary.getBoundingClientRect().top - body; }""")
    assert 0 <= top < 120
    assert page.locator("#dyn-members").count() == 1
    assert errors == []


def test_failure_cluster_selects_its_rows(page, ui_server):
    name = chain(ui_server)
    correlation = unique("cluster")
    ids = [ui_server.start(name, {"order_id": i}, correlation) for i in range(3)]
    for _ in ids[:2]:
        ui_server.fail(ui_server.poll(f"{name}_a"), "connection refused by 10.0.0.1:5432")
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/executions/?correlation_id={correlation}")
    page.wait_for_selector("#failure-clusters")
    assert "2" in page.inner_text("#failure-clusters tbody tr:first-child td.num")
    page.click("#failure-clusters .cluster-select")
    assert page.inner_text("#selected-count") == "2 selected"
    screenshot(page, "failure-clusters")


def test_favicon_and_styled_404(page, ui_server):
    sign_in(page, ui_server)
    status = page.evaluate("async () => (await fetch('/favicon.ico')).status")
    assert status == 200
    resp = page.goto(f"{ui_server.base}/execution/does-not-exist")
    assert resp.status == 404
    assert page.is_visible("#error-page") and page.is_visible("header.topbar")


def test_retry_confirmation_shows_the_dry_run(page, ui_server):
    errors = watch_errors(page)
    name = chain(ui_server)
    wf_id = ui_server.start(name, {"order_id": 8})
    ui_server.complete(ui_server.poll(f"{name}_a"))
    ui_server.fail(ui_server.poll(f"{name}_b"), "card declined")
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    page.wait_for_function("document.getElementById('wf-status').textContent === 'FAILED'")
    assert page.inner_text("#wf-failed-ref") == "b"
    page.click("#actions-menu summary")
    page.click("#actions-menu a[data-action=retry]")
    page.wait_for_selector("#dry-run")
    assert "1 failed task reference(s) get a new attempt" in page.inner_text("#dry-run-summary")
    assert page.locator("#dry-run-again tbody tr").count() == 1 and "b" in page.inner_text("#dry-run-effects")
    screenshot(page, "dry-run")
    page.click("#confirm-button")
    page.wait_for_url(re.compile(rf".*/execution/{wf_id}$"))
    wait_node(page, "b", "SCHEDULED")
    assert errors == []


def test_definition_version_diff_with_graph_overlay(page, ui_server):
    errors = watch_errors(page)
    name = chain(ui_server)
    wf_id = ui_server.start(name, {"order_id": 9})
    v1 = ui_server.http.get(f"{ui_server.api}/metadata/workflow/{name}", params={"version": 1}).json()
    v2 = {**v1, "version": 2, "tasks": v1["tasks"] + [{**v1["tasks"][0], "taskReferenceName": "c"}]}
    ui_server.register([], v2)
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    page.click("#newer-definition")
    page.wait_for_function("window.conductorGraph && window.conductorGraph.cy.nodes().length > 3")
    assert page.evaluate("window.conductorGraph.cy.nodes('.diff-added').map(n => n.id())") == ["c"]
    assert "added 1 task: c" in " ".join(page.inner_text("#diff-summary").split())
    assert page.locator("#diff-text .d-add").count() >= 3
    screenshot(page, "definition-diff")
    assert errors == []


def test_bulk_by_query_job_with_progress(page, ui_server):
    errors = watch_errors(page)
    name = chain(ui_server)
    correlation = unique("bulkq")
    ids = [ui_server.start(name, {"order_id": i}, correlation) for i in range(12)]
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/executions/?correlation_id={correlation}&size=10")
    page.select_option("#bulk-query-action", "pause")
    page.fill("#bulk-query-reason", "browser maintenance")
    page.click("#bulk-query-button")
    page.wait_for_selector("#bulk-dry-run")
    assert page.inner_text("#dry-total") == "12" and page.inner_text("#dry-act") == "12"
    page.click("#confirm-button")
    page.wait_for_url(re.compile(r".*/bulk-jobs/[0-9a-f-]{36}$"))
    # the cluster runs it; the page follows without a reload
    page.wait_for_function("document.getElementById('job-status').textContent === 'DONE'", timeout=60_000)
    assert page.inner_text("#n-succeeded") == "12" and page.locator("#job-results tr[data-outcome=succeeded]").count() == 12
    screenshot(page, "bulk-job")
    assert all(ui_server.workflow(i)["status"] == "PAUSED" for i in ids)
    assert errors == []


def test_loop_iteration_strip_picks_iterations(page, ui_server):
    errors = watch_errors(page)
    name = unique("ui_loop")
    body = [{"name": "step", "taskReferenceName": "step", "type": "INLINE",
             "inputParameters": {"evaluatorType": "javascript", "expression": "1"}}]
    ui_server.register([], {"name": name, "version": 1, "schemaVersion": 2, "ownerEmail": "ui@example.com",
                            "tasks": [{"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
                                       "loopCondition": "$.loop['iteration'] < 4", "loopOver": body}]})
    wf_id = ui_server.start(name, {})
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    wait_node(page, "loop", "COMPLETED")
    click_node(page, "loop")
    page.wait_for_selector("#iteration-strip")
    assert page.locator("#iteration-strip .cell.st-COMPLETED").count() == 4
    assert page.locator("#next-failure").count() == 0
    page.click("#iteration-strip .cell >> nth=1")
    page.wait_for_function("document.getElementById('pick-iteration').value === '__2'")
    assert "iter=loop%3A__2" in page.url or "iter=loop:__2" in page.url
    assert errors == []
