"""Issue #31, parts 5-7, in headless chromium against the real server (uvicorn + qcluster)
with real SDK workers (``tests/browser/ops_workers.py``):

* task logs: the log viewer of the task panel follows a running task's new lines live,
  searches, wraps, copies and downloads;
* schedules: a backfill's dry run lists the missed slots, the run starts them once (a
  second run starts nothing), a range over the bound is refused with the count; past runs
  (with their workflow's status) and upcoming firings;
* alert rules: made in the UI, an SDK worker's failure fires one incident to a loopback
  webhook and by e-mail (Django's file backend in the server), a later success resolves
  it; read-only users see and cannot change;
* times switch between UTC and the browser's zone.
"""
from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_operator_ui import click_node, unique, wait_node, watch_errors

pytestmark = pytest.mark.browser

WAIT_SECONDS = 90
STEPS = 4  # log lines the log test writes


def wait_for(what: str, check, seconds: float = WAIT_SECONDS):
    """Poll ``check()`` until it returns something truthy (bounded); returns it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def sdk_workers(ui_server):
    """The ops workers polling the session's server (one process each, spawned)."""
    from conductor.client.configuration.configuration import Configuration

    from tests.browser import ops_workers
    from tests.e2e.sdk_helpers import running_workers

    saved = {k: os.environ.get(k) for k in ui_server.server.sdk_env()}
    os.environ.update(ui_server.server.sdk_env())
    try:
        ui_server.register([{"name": n, "retryCount": 0, "timeoutSeconds": 0, "responseTimeoutSeconds": 600,
                             "ownerEmail": "ops@example.com"} for n in (ops_workers.ALERT_TASK, ops_workers.HELD_TASK)],
                           {"name": "ops_noop", "version": 1, "schemaVersion": 2, "ownerEmail": "ops@example.com",
                            "tasks": [{"name": ops_workers.ALERT_TASK, "taskReferenceName": "t", "type": "SIMPLE"}]})
        with running_workers(Configuration(), [ops_workers.ALERT_TASK]):
            yield ops_workers
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def zoned_page(chromium):
    """A page whose browser zone is not UTC (the zone switch shows a difference)."""
    context = chromium.new_context(viewport={"width": 1440, "height": 1000}, timezone_id="America/New_York")
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        yield page
    finally:
        context.close()


def one_task_workflow(ui_server, task: str, input_parameters: dict) -> str:
    name = unique("ops_wf")
    ui_server.register([], {"name": name, "version": 1, "schemaVersion": 2, "ownerEmail": "ops@example.com",
                            "tasks": [{"name": task, "taskReferenceName": "work", "type": "SIMPLE",
                                       "inputParameters": input_parameters}]})
    return name


def test_task_log_viewer_follows_searches_wraps_copies_and_downloads(chromium, ui_server, sdk_workers):
    from conductor.client.configuration.configuration import Configuration
    from conductor.client.http.models.task_result import TaskResult
    from conductor.client.orkes_clients import OrkesClients

    context = chromium.new_context(viewport={"width": 1440, "height": 1000}, accept_downloads=True,
                                   timezone_id="America/New_York")
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ui_server.base)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        errors = watch_errors(page)
        name = one_task_workflow(ui_server, sdk_workers.HELD_TASK, {"job": "${workflow.input.job}"})
        tasks = OrkesClients(configuration=Configuration()).get_task_client()
        sign_in(page, ui_server)
        wf_id = ui_server.start(name, {"job": "nightly-export"})
        page.goto(f"{ui_server.base}/execution/{wf_id}")
        held = wait_for("the SDK's poll", lambda: tasks.poll_task(sdk_workers.HELD_TASK, worker_id="ops-log-worker"))

        def log(step: int) -> None:
            tasks.add_task_log(held.task_id, f"nightly-export step {step}: processed batch <{step}> of {STEPS} " + "x" * 160)

        log(1)
        wait_node(page, "work", "IN_PROGRESS")
        click_node(page, "work")
        page.wait_for_selector("#log-viewer .log-line")
        # follow live: each new line arrives while the task runs, without a reload
        for step in range(2, STEPS + 1):
            log(step)
            page.wait_for_function(f"document.querySelectorAll('#log-viewer .log-line').length === {step}")
        assert "task running" in page.inner_text("#log-viewer .log-count")
        assert "step 4" in page.inner_text("#log-viewer .log-lines")
        tasks.update_task(TaskResult(workflow_instance_id=wf_id, task_id=held.task_id, status="COMPLETED",
                                     worker_id="ops-log-worker", output_data={"steps": STEPS}))
        wait_node(page, "work", "COMPLETED")
        page.wait_for_function(f"document.querySelector('#log-viewer .log-count').textContent === '{STEPS} lines'")
        # search: only the matching line, the match marked
        page.fill("#log-viewer .log-search", "step 2")
        assert page.locator("#log-viewer .log-line").count() == 1
        assert page.inner_text("#log-viewer .log-line mark") == "step 2"
        assert page.inner_text("#log-viewer .log-count").startswith(f"1 of {STEPS} lines")
        # wrap toggle
        assert "nowrap-lines" not in page.get_attribute("#log-viewer .log-lines", "class")
        page.uncheck("#log-viewer .log-wrap")
        assert "nowrap-lines" in page.get_attribute("#log-viewer .log-lines", "class")
        # copy: the lines shown
        page.click("#log-viewer .log-copy")
        page.wait_for_function("document.querySelector('#log-viewer .log-copy').textContent !== 'Copy'")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert "nightly-export step 2" in copied and "step 3" not in copied
        # times: UTC, then the browser's zone
        utc_text = page.inner_text("#log-viewer .log-time")
        assert utc_text.endswith("UTC")
        page.click("#log-viewer [data-zone-toggle]")
        assert page.inner_text("#log-viewer .log-time").endswith("America/New_York")
        page.click("#log-viewer [data-zone-toggle]")
        # download: the whole log as text
        with page.expect_download() as info:
            page.click("#log-viewer .log-download")
        text = open(info.value.path(), encoding="utf-8").read()
        assert text.count("nightly-export step") == STEPS and text.splitlines()[0].startswith("20")
        page.fill("#log-viewer .log-search", "batch")
        page.check("#log-viewer .log-wrap")
        page.evaluate("document.querySelectorAll('#panel-body details:not(#log-details)').forEach(d => d.open = false)")
        page.locator("#log-viewer").scroll_into_view_if_needed()
        screenshot(page, "task-logs")
        assert errors == []
    finally:
        context.close()


def test_schedule_backfill_dry_run_then_once_and_past_and_upcoming_runs(zoned_page, ui_server, sdk_workers):
    page = zoned_page
    errors = watch_errors(page)
    name = one_task_workflow(ui_server, sdk_workers.ALERT_TASK, {"fail": False})
    schedule = unique("monthly")
    ui_server.http.post(f"{ui_server.api}/scheduler/schedules", json={
        "name": schedule, "cronExpression": "0 0 0 1 * *",  # monthly: no slot of its own fires during the test
        "startWorkflowRequest": {"name": name, "input": {}}}).raise_for_status()
    today = datetime.now(timezone.utc)
    months = [(today.year * 12 + today.month - 1 - k) for k in (2, 1, 0)]
    first = datetime(months[0] // 12, months[0] % 12 + 1, 1, tzinfo=timezone.utc)
    last = datetime(months[2] // 12, months[2] % 12 + 1, 1, tzinfo=timezone.utc)
    range_from, range_to = (first.replace(day=1).strftime("%Y-%m-%dT00:00"), last.strftime("%Y-%m-%dT00:00"))
    # three slots: the first day of this month and of the two before, at 00:00 UTC

    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/schedules/{schedule}")
    assert page.locator("#next-runs time").count() >= 3  # upcoming firings
    page.fill("#backfill-from", range_from)
    page.fill("#backfill-to", range_to)
    page.click("#backfill-preview")
    page.wait_for_selector("#backfill-slots")
    states = page.locator("#backfill-slots tbody tr").evaluate_all("rows => rows.map(r => r.dataset.state)")
    assert states == ["WOULD_START"] * 3
    assert page.inner_text("#backfill-run") == "Start 3 slot(s)"
    page.click("#backfill-run")
    page.wait_for_selector(".messages")
    assert "3 slot(s) started, 0 already run" in page.inner_text(".messages")
    assert page.locator("#backfill-slots tr[data-state=EXECUTED] a").count() == 3
    # past runs: the three, each linked, with the status of its workflow (the SDK worker completes them)
    page.goto(f"{ui_server.base}/schedules/{schedule}")

    def all_completed():
        page.reload()
        return page.locator("#schedule-executions td[data-workflow-status=COMPLETED]").count() == 3
    wait_for("the backfilled runs to complete", all_completed)
    assert page.locator("#schedule-executions .badge").count() == 3  # marked as backfilled
    screenshot(page, "schedule-backfill")
    # twice: nothing new
    page.fill("#backfill-from", range_from)
    page.fill("#backfill-to", range_to)
    page.click("#backfill-preview")
    page.wait_for_selector("#backfill-slots")
    assert page.locator("#backfill-slots tr[data-state=ALREADY_RUN]").count() == 3
    assert page.locator("#backfill-run").count() == 0
    runs = ui_server.http.get(f"{ui_server.api}/scheduler/schedules/{schedule}/runs").json()
    assert runs["totalPast"] == 3 and {r["workflowStatus"] for r in runs["past"]} == {"COMPLETED"}
    # over the bound: refused whole, with the count
    page.fill("#backfill-from", "2010-01-01T00:00")
    page.fill("#backfill-to", "2020-01-01T00:00")  # 121 monthly slots
    page.click("#backfill-preview")
    assert "more than 100 slots" in page.inner_text(".messages")
    # times: UTC, then the browser's zone
    first_firing = page.locator("#next-runs time >> nth=0")
    ms = int(first_firing.get_attribute("data-ms"))
    assert first_firing.inner_text() == datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    page.click("[data-zone-toggle]")
    assert page.inner_text("[data-zone-toggle]").endswith("America/New_York")
    new_york = datetime.fromtimestamp(ms / 1000, ZoneInfo("America/New_York")).strftime("%Y-%m-%d %H:%M:%S")
    assert first_firing.inner_text() == new_york
    page.click("[data-zone-toggle]")
    # read-only: sees the runs, no backfill form
    page.context.clear_cookies()
    sign_in(page, ui_server, "watcher")
    page.goto(f"{ui_server.base}/schedules/{schedule}")
    assert page.locator("#schedule-executions tbody tr").count() == 3
    assert page.locator("#backfill-form").count() == 0
    assert errors == []


def test_alert_rule_fires_once_to_webhook_and_mail_and_resolves(page, ui_server, sdk_workers, tmp_path):
    from tests.listeners.receiver import Receiver

    errors = watch_errors(page)
    name = one_task_workflow(ui_server, sdk_workers.ALERT_TASK, {"fail": "${workflow.input.fail}"})
    rule = unique("payments failing")
    mail_dir = ui_server.server.workdir / "mail"
    with Receiver() as hook:
        sign_in(page, ui_server)
        page.goto(f"{ui_server.base}/alerts/")
        form = page.locator("#new-rule")
        form.locator("input[name=name]").fill(rule)
        form.locator("input[name=workflowName]").fill(name)
        form.locator("select[name=condition]").select_option("FAILURE")
        form.locator("input[name=webhookUrl]").fill(hook.url + "/alerts")
        form.locator("input[name=emails]").fill("oncall@example.com")
        form.locator("#alert-save").click()
        page.wait_for_url("**/alerts/*")
        assert "saved" in page.inner_text(".messages")
        rule_url = page.url

        failed = ui_server.start(name, {"fail": True})
        wait_for("the failure", lambda: ui_server.workflow(failed)["status"] == "FAILED")
        opened = wait_for("the OPENED webhook", lambda: [r for r in hook.delivered() if r["body"]["event"] == "OPENED"])
        assert opened[0]["body"]["alert"] == rule and opened[0]["body"]["details"]["workflowId"] == failed
        assert "payment provider refused" in opened[0]["body"]["summary"]

        def opened_mail():  # the file backend writes one file per connection: read until the message is whole
            texts = [p.read_text() for p in mail_dir.glob("*.log")] if mail_dir.exists() else []
            return [t for t in texts if "event: OPENED" in t and f"subject: {name}" in t]
        [message] = wait_for("the OPENED e-mail", opened_mail)
        assert "To: oncall@example.com" in message and "payment provider refused" in message

        again = ui_server.start(name, {"fail": True})  # still failing: the same incident
        wait_for("the second failure", lambda: ui_server.workflow(again)["status"] == "FAILED")
        page.goto(rule_url)
        assert page.locator("#alert-incidents tr[data-state=OPEN]").count() == 1
        screenshot(page, "alerts")

        ok = ui_server.start(name, {"fail": False})
        wait_for("the success", lambda: ui_server.workflow(ok)["status"] == "COMPLETED")
        wait_for("the RESOLVED webhook", lambda: [r for r in hook.delivered() if r["body"]["event"] == "RESOLVED"])
        assert [r["body"]["event"] for r in hook.delivered()] == ["OPENED", "RESOLVED"]  # once per incident
        page.goto(rule_url)
        assert page.locator("#alert-incidents tr[data-state=RESOLVED]").count() == 1
        assert page.locator("#alert-incidents tr[data-state=OPEN]").count() == 0
        page.goto(f"{ui_server.base}/alerts/")
        assert rule in page.inner_text("#alert-rules")

    # read-only: sees the rules and the history, no form; its key cannot change a rule
    page.context.clear_cookies()
    sign_in(page, ui_server, "watcher")
    page.goto(f"{ui_server.base}/alerts/")
    assert rule in page.inner_text("#alert-rules") and page.locator("#alert-incidents tr[data-state=RESOLVED]").count() >= 1
    assert page.locator("#new-rule").count() == 0 and page.locator("#alert-form").count() == 0
    page.goto(rule_url)
    assert page.locator("#edit-rule").count() == 0 and page.locator("#alert-delete").count() == 0
    key = ui_server.server.create_key(unique("viewer"), "read_only")
    token = httpx.post(f"{ui_server.api}/token", json={"keyId": key["CONDUCTOR_AUTH_KEY"],
                                                        "keySecret": key["CONDUCTOR_AUTH_SECRET"]}).json()["token"]
    refused = httpx.post(f"{ui_server.api}/alerts/rules", headers={"X-Authorization": token},
                         json={"name": "x", "condition": "FAILURE", "webhookUrl": "http://127.0.0.1:9/"})
    assert refused.status_code == 403
    assert httpx.get(f"{ui_server.api}/alerts/rules", headers={"X-Authorization": token}).status_code == 200
    assert errors == []
