"""The Overview (``/``) in headless chromium against a real server, with data made by real
SDK workers (``conductor-python``'s TaskHandler): the page renders their throughput, a
click on a failure bar opens exactly the failed executions of that interval, the live
refresh shows a new failure without a reload, a read-only user sees it all, and no
uncaught JavaScript error happens. Screenshots: ``overview`` and ``overview-dark``."""
from __future__ import annotations

import uuid

import pytest

from tests.browser import overview_workers as ow
from tests.browser.conftest import screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.e2e,
              pytest.mark.filterwarnings("ignore:Call to deprecated function:DeprecationWarning")]


@pytest.fixture
def sdk(ui_server, monkeypatch):
    """``(Configuration, OrkesClients)`` from the server's SDK environment (its access key)."""
    from conductor.client.configuration.configuration import Configuration
    from conductor.client.orkes_clients import OrkesClients

    for name, value in ui_server.server.sdk_env().items():
        monkeypatch.setenv(name, value)
    config = Configuration()
    return config, OrkesClients(configuration=config)


def register(clients, suffix: str) -> tuple[str, str]:
    """Two workflows: ``overview_ship_<suffix>`` (pack) and ``overview_pay_<suffix>`` (pack
    then charge, which always fails)."""
    from conductor.client.http.models.task_def import TaskDef
    from conductor.client.workflow.conductor_workflow import ConductorWorkflow

    metadata = clients.get_metadata_client()
    for name in (ow.PACK_TASK, ow.CHARGE_TASK):
        metadata.register_task_def(TaskDef(name=name, retry_count=0, timeout_seconds=120, response_timeout_seconds=60))
    executor = clients.get_workflow_executor()
    ship, pay = f"overview_ship_{suffix}", f"overview_pay_{suffix}"
    wf = ConductorWorkflow(executor=executor, name=ship, version=1)
    wf >> ow.pack_order(task_ref_name="pack", order_id=wf.input("order_id"))
    wf.register(overwrite=True)
    wf = ConductorWorkflow(executor=executor, name=pay, version=1)
    wf >> ow.pack_order(task_ref_name="pack", order_id=wf.input("order_id")) \
        >> ow.charge_card(task_ref_name="charge", order_id=wf.input("order_id"))
    wf.register(overwrite=True)
    return ship, pay


def start(clients, name: str, order_id: str) -> str:
    from conductor.client.http.models.start_workflow_request import StartWorkflowRequest

    return clients.get_workflow_client().start_workflow(
        StartWorkflowRequest(name=name, version=1, input={"order_id": order_id}))


def finished(config, clients, ids: list[str]) -> dict[str, str]:
    from tests.e2e.sdk_helpers import wait_for_workflow

    executor = clients.get_workflow_executor()
    return {i: wait_for_workflow(executor, config, i).status for i in ids}


def cell(page, workflow: str, measure: str) -> str:
    return page.locator(f'#ov-workflow-table tr[data-workflow="{workflow}"] td[data-measure="{measure}"] , '
                        f'#ov-workflow-table tr[data-workflow="{workflow}"] [data-measure="{measure}"]').first.inner_text()


def test_overview_with_sdk_workers(ui_server, sdk, chromium):
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    from tests.e2e.sdk_helpers import running_workers

    config, clients = sdk
    ship, pay = register(clients, uuid.uuid4().hex[:6])
    with running_workers(config, [ow.PACK_TASK, ow.CHARGE_TASK]):
        shipped = [start(clients, ship, f"S{i}") for i in range(3)]
        declined = [start(clients, pay, f"P{1000 + i}") for i in range(2)]  # ids masked: one group
        status = finished(config, clients, shipped + declined)
        assert sorted(status.values()) == ["COMPLETED"] * 3 + ["FAILED"] * 2, status

        for scheme in ("dark", "light"):  # the light pass adds a failure
            context = chromium.new_context(viewport={"width": 1440, "height": 1100}, color_scheme=scheme,
                                           timezone_id="Europe/Paris")
            page = context.new_page()
            page.set_default_timeout(60_000)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            try:
                sign_in(page, ui_server, "watcher")  # read-only: sees the page
                page.goto(ui_server.base + "/")
                page.wait_for_function(
                    "([s, p]) => { const d = window.conductorOverview.data; return d &&"
                    " d.workflows.some(w => w.name === s && w.totals.COMPLETED === 3) &&"
                    " d.workflows.some(w => w.name === p && w.totals.FAILED === 2); }", arg=[ship, pay])
                assert cell(page, ship, "COMPLETED") == "3" and cell(page, pay, "FAILED") == "2"
                assert cell(page, pay, "failureRate") == "100 %"
                tasks = page.evaluate("window.conductorOverview.data.tasks")
                charge = next(t for t in tasks if t["name"] == ow.CHARGE_TASK)
                assert charge["totals"]["FAILED_WITH_TERMINAL_ERROR"] >= 2 and charge["workers"], charge
                # the reason, its order id masked, is among the top failure reasons
                reasons = page.evaluate("window.conductorOverview.data.reasons")
                mine = [r for r in reasons if any(w["name"] == pay for w in r["workflows"])]
                assert len(mine) == 1 and mine[0]["count"] == 2 and "card declined for order P…" in mine[0]["key"], reasons
                assert page.locator("#ov-reason-table a", has_text="card declined for order P…").count() >= 1
                # nothing here changes state: no form posts but signing out
                assert page.locator("main form[method=post], main button.primary").count() == 0
                # a chart's table view (its text alternative) lists the same figures
                chart = f"wf-{pay}"
                page.locator(f"#chart-{chart}").focus()
                page.keyboard.press("ArrowLeft")  # keyboard focus works on the chart
                toggle = page.locator(f'button[aria-controls="table-{chart}"]')
                toggle.click()
                assert toggle.get_attribute("aria-expanded") == "true"
                assert page.locator(f"#table-{chart} td a").filter(has_text="2").count() >= 1
                toggle.click()
                screenshot(page, "overview" if scheme == "light" else "overview-dark")
                if scheme == "dark":
                    # local time, then a custom range (the last hour and a half, as the inputs show it)
                    page.select_option("#ov-tz", "local")
                    page.wait_for_function("document.getElementById('ov-window').textContent.includes('Europe/Paris')")
                    page.check("input[name=range][value=custom]")
                    page.click("#ov-controls button[type=submit]")
                    page.wait_for_url("**range=custom**")
                    page.wait_for_function("window.conductorOverview.data && window.conductorOverview.data.window.key === 'custom'"
                                           " && window.conductorOverview.data.workflows.length > 0")
                    assert not errors, errors
                    continue

                # a click on the failure bar opens exactly the failed executions of its interval
                # (the point is read again if the chart was redrawn under the pointer: the page
                # refreshes itself, and counts written by another process arrive up to a second later)
                for attempt in range(3):
                    # the chart in the viewport (a click at a point outside it reaches nothing)
                    page.locator(f"#chart-{chart}").scroll_into_view_if_needed()
                    point = page.evaluate(
                        """(id) => { const d = window.conductorOverview.data;
                           const row = d.workflows.find(w => 'wf-' + w.name === id);
                           const i = row.series.FAILED.findIndex(n => n > 0);
                           return Object.assign(window.conductorOverview.barPoint(id, 'FAILED', i),
                                                {n: row.series.FAILED[i]}); }""", chart)
                    page.mouse.click(point["x"], point["y"])
                    try:
                        page.wait_for_url("**/executions/**", timeout=15_000)
                        break
                    except PlaywrightTimeoutError:
                        if attempt == 2:
                            raise
                listed = set(page.locator("table.executions tbody tr[data-workflow-id]").evaluate_all(
                    "rows => rows.map(r => r.dataset.workflowId)"))
                assert listed and listed <= set(declined) and len(listed) == point["n"], (listed, declined)
                assert "end_from" in page.url and "status=FAILED" in page.url

                # live: a new failure shows without a reload
                page.goto(ui_server.base + "/")
                page.wait_for_function("window.conductorOverview.data && window.conductorOverview.loads >= 1")
                page.evaluate("window.notReloaded = true")
                declined.append(start(clients, pay, "P1009"))
                assert finished(config, clients, declined[-1:]) == {declined[-1]: "FAILED"}
                page.wait_for_function(
                    "(p) => document.querySelector(`#ov-workflow-table tr[data-workflow='${p}'] [data-measure='FAILED']`)"
                    "?.textContent === '3'", arg=pay, timeout=90_000)
                assert page.evaluate("window.notReloaded === true")
                assert not errors, errors
            finally:
                context.close()
