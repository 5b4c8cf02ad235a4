"""The problem views (issue #31 parts 1-4) in Chromium, on data made by a real SDK worker
(``conductor-python``'s ``TaskHandler`` running ``tests/browser/problem_workers.py``):

* the executions list's status counts, one-click views, saved view, export and the search
  as code, and the UTC / browser-zone switch;
* a stuck execution and its reason in two clicks from the home page;
* the run grid of a definition;
* the human-task inbox: the read-only user sees and cannot act, the operator completes a
  task with the form built from its TaskDef's schema.

Screenshots (light theme) go to ``$UI_SCREENSHOT_DIR`` (``docs/``) when it is set.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from tests.browser.conftest import REPO_ROOT, screenshot, sign_in

pytestmark = [pytest.mark.browser]

ORDERS = "pv_orders"
STUCK = "pv_stuck"
NOBODY_TASK = "pv_nobody_polls"
APPROVE_SCHEMA = {"type": "object", "required": ["approved"],
                  "properties": {"approved": {"type": "boolean", "title": "Approved"},
                                 "note": {"type": "string", "title": "Note"}}}


def _wait_status(ui_server, wf_id: str, statuses: tuple, timeout_s: float = 120) -> dict:
    """The execution once its status is one of ``statuses`` ("HUMAN": RUNNING with its
    approval task waiting), polled with a bound."""
    deadline = time.monotonic() + timeout_s
    while True:
        wf = ui_server.workflow(wf_id)
        waiting = any(t["referenceTaskName"] == "approve" and t["status"] in ("SCHEDULED", "IN_PROGRESS")
                      for t in wf.get("tasks", []))
        if wf["status"] in statuses or ("HUMAN" in statuses and waiting):
            return wf
        assert time.monotonic() < deadline, f"{wf_id} stayed {wf['status']}"
        time.sleep(0.3)


@pytest.fixture(scope="module")
def problem_data(ui_server):
    """Definitions, then executions run by the SDK worker: two orders declined (FAILED),
    three charged and waiting at their HUMAN approval (assignees alice, alice, bob), and
    one execution whose task type no worker polls (stuck)."""
    from conductor.client.configuration.configuration import Configuration
    from conductor.client.http.models.start_workflow_request import StartWorkflowRequest
    from conductor.client.orkes_clients import OrkesClients

    from tests.browser import problem_workers as pw
    from tests.e2e.sdk_helpers import running_workers

    ui_server.register(
        [{"name": pw.CHARGE_TASK, "retryCount": 0, "responseTimeoutSeconds": 60, "ownerEmail": "ui@example.com"},
         {"name": "pv_approve", "retryCount": 0, "ownerEmail": "ui@example.com",
          "outputSchema": {"type": "JSON", "data": APPROVE_SCHEMA}},
         {"name": NOBODY_TASK, "retryCount": 2, "responseTimeoutSeconds": 60, "ownerEmail": "ui@example.com"}],
        {"name": ORDERS, "version": 1, "schemaVersion": 2, "ownerEmail": "ui@example.com",
         "tasks": [{"name": pw.CHARGE_TASK, "taskReferenceName": "charge", "type": "SIMPLE",
                    "inputParameters": {"order_id": "${workflow.input.order_id}"}},
                   {"name": "pv_approve", "taskReferenceName": "approve", "type": "HUMAN",
                    "inputParameters": {"assignee": "${workflow.input.assignee}",
                                        "order_id": "${workflow.input.order_id}"}}]})
    ui_server.register([], {"name": STUCK, "version": 1, "schemaVersion": 2, "ownerEmail": "ui@example.com",
                            "tasks": [{"name": NOBODY_TASK, "taskReferenceName": "export_report",
                                       "type": "SIMPLE"}]})
    config = Configuration(server_api_url=ui_server.api, authentication_settings=None)
    key = ui_server.server
    if key.key_id:
        from conductor.client.configuration.settings.authentication_settings import AuthenticationSettings

        config = Configuration(server_api_url=ui_server.api,
                               authentication_settings=AuthenticationSettings(key.key_id, key.key_secret))
    workflows = OrkesClients(config).get_workflow_client()
    orders = [("bad-1", "alice"), ("ok-1", "alice"), ("bad-2", "bob"), ("ok-2", "alice"), ("ok-3", "bob")]
    ids = {}
    with running_workers(config, [pw.CHARGE_TASK]):
        for order_id, who in orders:
            ids[order_id] = workflows.start_workflow(StartWorkflowRequest(
                name=ORDERS, version=1, input={"order_id": order_id, "assignee": who}))
        for order_id, wf_id in ids.items():
            _wait_status(ui_server, wf_id, ("FAILED",) if order_id.startswith("bad") else ("HUMAN",))
    ids["stuck"] = workflows.start_workflow(StartWorkflowRequest(name=STUCK, version=1, input={}))
    return ids


def test_problem_views_on_the_executions_list(page, ui_server, problem_data):
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/executions/?name={ORDERS}")
    counts = page.locator("#status-counts")
    assert counts.locator("[data-status=FAILED]").get_attribute("data-count") == "2"
    running = int(counts.locator("[data-status=RUNNING]").get_attribute("data-count"))
    assert running + int(counts.locator("[data-status=COMPLETED]").get_attribute("data-count")) == 3  # the inbox test may end one
    # one click: the Failed view (across all names)
    page.click("#quick-views [data-view=failed]")
    page.wait_for_url(re.compile(r".*status=FAILED"))
    rows = page.locator("tr[data-workflow-id]")
    shown = {rows.nth(i).get_attribute("data-workflow-id") for i in range(rows.count())}
    assert {problem_data["bad-1"], problem_data["bad-2"]} <= shown and problem_data["ok-1"] not in shown
    assert "card declined for bad-" in page.inner_text("table.executions")
    # sortable columns: by id ascending, then descending
    page.click("th.col-id a")
    page.wait_for_url(re.compile(r".*sort=id"))
    ids = [rows.nth(i).get_attribute("data-workflow-id") for i in range(rows.count())]
    assert ids == sorted(ids)
    # save it, find it by name
    page.fill("#view-name", "declined cards")
    page.click("#save-view")
    page.wait_for_url(re.compile(r".*saved=declined"))
    assert page.locator("#quick-views [data-saved='declined cards']").count() == 1
    # the search as code names the same conditions
    page.click("#as-code summary")
    assert "status IN (FAILED)" in page.inner_text("#code-curl")
    assert "get_workflow_client().search(" in page.inner_text("#code-python")
    # ... and the Python SDK's and the CLI's versions run and find the same executions
    env = {**os.environ, **ui_server.server.sdk_env(), "PATH": f"{REPO_ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}
    for cmd in ([sys.executable, "-c", page.inner_text("#code-python")], ["bash", "-c", page.inner_text("#code-cli")]):
        done = subprocess.run(cmd, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert problem_data["bad-1"] in done.stdout and problem_data["ok-1"] not in done.stdout, cmd[0]
    # export: the CSV holds the failed runs
    with page.expect_download() as download:
        page.click("#export-csv")
    text = open(download.value.path()).read()
    assert problem_data["bad-1"] in text and problem_data["ok-1"] not in text and text.startswith("workflowId,")
    # times: UTC, then the browser's zone on a click (remembered)
    cell = page.locator("tr[data-workflow-id] .when-ms").first
    utc = cell.inner_text()
    page.click(".tz-toggle")
    assert page.locator(".tz-toggle").get_attribute("data-zone") == "local"
    page.reload()
    assert page.locator(".tz-toggle").get_attribute("data-zone") == "local"
    page.click(".tz-toggle")
    assert page.locator("tr[data-workflow-id] .when-ms").first.inner_text() == utc
    page.goto(f"{ui_server.base}/executions/?name={ORDERS}")
    screenshot(page, "ui-problem-views")


def test_a_stuck_execution_and_its_reason_in_two_clicks(page, ui_server, problem_data):
    sign_in(page, ui_server)
    page.goto(ui_server.base + "/")
    page.click("#quick-views [data-view=stuck]")  # click 1
    page.click(f"a[href='/execution/{problem_data['stuck']}']")  # click 2
    page.wait_for_url(f"**/execution/{problem_data['stuck']}")
    panel = page.locator("#stuck-panel")
    task = panel.locator(".stuck-task[data-ref=export_report]")
    assert task.get_attribute("data-level") == "warn"
    assert f"No worker has ever polled the queue '{NOBODY_TASK}'" in task.inner_text()
    assert "2 retries left" in task.inner_text()
    screenshot(page, "ui-stuck")
    # the execution page's times written by script follow the zone switch too
    page.wait_for_function("document.getElementById('wf-start').textContent.length > 10")
    page.evaluate("localStorage.setItem('conductor-web.tz', 'utc')")
    utc_start = page.inner_text("#wf-start")
    shown = page.evaluate("""() => { document.querySelector('.tz-toggle').click();
        return document.getElementById('wf-start').textContent; }""")
    expected = page.evaluate("(ms) => window.conductorTime.format(ms)",
                             ui_server.workflow(problem_data["stuck"])["createTime"])
    assert page.locator(".tz-toggle").get_attribute("data-zone") == "local" and shown == expected
    page.click(".tz-toggle")
    assert page.inner_text("#wf-start") == utc_start
    # the same warning on the queues page, linked to the stuck executions
    page.goto(ui_server.base + "/queues/")
    row = page.locator(f"tr[data-task-type={NOBODY_TASK}]")
    assert "no worker has ever polled" in row.inner_text()
    # a running order waiting at its HUMAN task: the panel says a person must act
    page.goto(f"{ui_server.base}/execution/{problem_data['ok-2']}")
    assert "Waiting for a person" in page.inner_text("#stuck-panel")


def test_run_grid_of_a_definition(page, ui_server, problem_data):
    sign_in(page, ui_server, "watcher")
    page.goto(f"{ui_server.base}/definitions/{ORDERS}/grid")
    grid = page.locator("#run-grid")
    assert grid.locator("th.run-head").count() == 5
    charge = grid.locator("tr[data-ref=charge] a.sq")
    statuses = [charge.nth(i).get_attribute("data-status") for i in range(charge.count())]
    assert statuses.count("FAILED_WITH_TERMINAL_ERROR") == 2 and statuses.count("COMPLETED") == 3
    approved = grid.locator("tr[data-ref=approve] a.sq[data-status=COMPLETED]").count()  # the inbox test may end one
    assert grid.locator("tr[data-ref=approve] a.sq[data-status=IN_PROGRESS]").count() + approved == 3
    assert page.inner_text("#failure-rate") == f"{round(200 / (2 + approved))} %"  # failed / ended
    assert grid.locator("tr.rolling td[data-rolling='100']").count() >= 1  # the first run failed
    screenshot(page, "ui-run-grid")
    grid.locator("tr[data-ref=charge] a.sq[data-status=FAILED_WITH_TERMINAL_ERROR]").first.click()
    page.wait_for_selector("#task-panel:not([hidden])")
    page.wait_for_function("document.getElementById('panel-body').textContent.includes('card declined')")


def test_human_task_inbox(page, ui_server, problem_data, chromium):
    sign_in(page, ui_server, "watcher")
    page.goto(f"{ui_server.base}/inbox/?workflow={ORDERS}")
    items = page.locator(".inbox-item")
    assert items.count() == 3
    assert page.locator(".inbox-form").count() == 0  # read-only: sees, cannot act
    page.fill("#inbox-value", "bob")
    page.click("#inbox-search")
    page.wait_for_url(re.compile(r".*value=bob"))
    assert page.locator(".inbox-item").count() == 1
    assert problem_data["ok-3"] in page.inner_html(".inbox-item")

    context = chromium.new_context(viewport={"width": 1440, "height": 1000}, color_scheme="light")
    op = context.new_page()
    op.set_default_timeout(60_000)
    try:
        sign_in(op, ui_server)
        op.goto(f"{ui_server.base}/inbox/?workflow={ORDERS}&field=assignee&value=alice")
        item = op.locator(f".inbox-item:has(a[href^='/execution/{problem_data['ok-1']}'])")
        assert item.locator("input[name='field.approved'][type=checkbox]").count() == 1
        screenshot(op, "ui-inbox")
        item.locator("input[name='field.approved']").check()
        item.locator("input[name='field.note']").fill("fine by me")
        item.locator("button.complete").click()
        op.wait_for_selector(".msg-success")
        wf = _wait_status(ui_server, problem_data["ok-1"], ("COMPLETED",))
        approve = [t for t in wf["tasks"] if t["referenceTaskName"] == "approve"][0]
        assert approve["outputData"] == {"approved": True, "note": "fine by me"}
        assert op.locator(f"a[href^='/execution/{problem_data['ok-1']}']").count() == 0
    finally:
        context.close()
