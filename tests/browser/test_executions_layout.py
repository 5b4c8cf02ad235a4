"""The executions list fits the window (#32) in real headless chromium: at 1280 and 1366
px the page and the table need no horizontal scroll, workflow ids are shortened to one
line with a copy button that copies the whole id; at 390 px the page still needs no
horizontal scroll, the nav is on screen, rows become labelled cards; at both widths the
filters (a searchable picker of workflow names, status chips) narrow the search. And a 404
page keeps the signed-in admin's nav."""
from __future__ import annotations

import re

import pytest

from tests.browser.conftest import PASSWORD, screenshot
from tests.browser.test_operator_ui import chain, unique, watch_errors

pytestmark = pytest.mark.browser

NO_PAGE_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"


@pytest.fixture(scope="module")
def runs(ui_server):
    """Two chains: one with a RUNNING and a FAILED execution (a 400-character reason and a
    long correlation id), the other with one RUNNING execution."""
    name = chain(ui_server)
    other = chain(ui_server)
    correlation = unique("layout-correlation-id-that-is-rather-long")
    running = ui_server.start(name, {"order_id": 1}, correlation)
    failed = ui_server.start(name, {"order_id": 2}, correlation)
    task = ui_server.poll(f"{name}_a")
    while task["workflowInstanceId"] != failed:  # the queue gives no order: fail the right one
        ui_server.complete(task)
        task = ui_server.poll(f"{name}_a")
    ui_server.fail(task, "the payment provider refused the card: " + "a very long explanation " * 16)
    ui_server.start(other, {"order_id": 3}, correlation)
    return {"name": name, "other": other, "running": running, "failed": failed, "correlation": correlation}


def open_page(chromium, ui_server, width: int):
    context = chromium.new_context(viewport={"width": width, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=ui_server.base)
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(ui_server.base + "/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/executions/**")
    return context, page


def search_with_the_filters(page, runs) -> None:
    """Pick the first chain's name by typing in the name filter, tick FAILED, search."""
    picker = page.locator("#name-picker")
    page.fill("#name-picker .picker-filter", runs["name"][-10:])
    visible = [t.strip() for t in picker.locator("label.chip:visible").all_inner_texts()]
    assert visible == [runs["name"]], visible  # the other chains' names are filtered out
    page.press("#name-picker .picker-filter", "Enter")  # ticks the one name left
    assert picker.locator(f"input[value='{runs['name']}']").is_checked()
    page.locator("#status-picker label.chip", has_text=re.compile(r"^\s*FAILED\s*$")).click()
    page.click("#search-button")
    page.wait_for_url(re.compile(r".*status=FAILED"))
    assert f"name={runs['name']}" in page.url
    assert page.locator("tr[data-workflow-id]").evaluate_all("rs => rs.map(r => r.dataset.workflowId)") \
        == [runs["failed"]]
    assert page.locator("#status-picker label.chip.on").all_inner_texts() == ["FAILED"]


@pytest.mark.parametrize("width", [1280, 1366])
def test_the_list_fits_a_laptop_window(chromium, ui_server, runs, width):
    context, page = open_page(chromium, ui_server, width)
    errors = watch_errors(page)
    try:
        page.goto(f"{ui_server.base}/executions/?correlation_id={runs['correlation']}")
        assert page.locator("tr[data-workflow-id]").count() == 3
        assert page.evaluate(NO_PAGE_SCROLL), page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        fit = page.evaluate("(() => { const w = document.querySelector('.table-fit');"
                            " return [w.scrollWidth, w.clientWidth]; })()")
        assert fit[0] <= fit[1], fit  # the table itself fits: no scroll bar of its own
        for header in ("Reason", "Started", "Status", "Running tasks"):
            assert page.locator("table.executions th", has_text=header).is_visible()
        row = page.locator(f"tr[data-workflow-id='{runs['failed']}']")
        link = row.locator("td.col-id a")
        assert link.inner_text() == runs["failed"][:8] + "…" and link.get_attribute("title") == runs["failed"]
        assert link.evaluate("a => a.getClientRects().length") == 1  # the id is on one line
        reason = row.locator("td.col-reason")
        assert reason.evaluate("td => td.scrollWidth > td.clientWidth")  # cut with an ellipsis...
        assert "the payment provider refused the card" in reason.get_attribute("title")  # ...whole on hover
        row.locator("button.copy-id").click()
        page.wait_for_function("document.querySelector('button.copy-id.copied') !== null")
        assert page.evaluate("navigator.clipboard.readText()") == runs["failed"]
        if width == 1280:
            screenshot(page, "executions-1280")
        search_with_the_filters(page, runs)
        assert page.evaluate(NO_PAGE_SCROLL)
        assert errors == []
    finally:
        context.close()


def test_the_list_works_on_a_phone(chromium, ui_server, runs):
    context, page = open_page(chromium, ui_server, 390)
    errors = watch_errors(page)
    try:
        page.goto(f"{ui_server.base}/executions/?correlation_id={runs['correlation']}")
        assert page.evaluate(NO_PAGE_SCROLL), page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        rights = page.locator("header.topbar nav a").evaluate_all(
            "as => as.map(a => a.getBoundingClientRect().right)")
        assert rights and max(rights) <= 390, rights  # every nav link is on screen
        assert page.locator("#search-button").is_visible() and page.locator("#status-picker").is_visible()
        row = page.locator(f"tr[data-workflow-id='{runs['failed']}']")
        box = row.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        assert row.locator("td.col-status").evaluate("td => getComputedStyle(td, '::before').content") == '"Status"'
        assert row.locator("td.col-reason").is_visible()
        row.scroll_into_view_if_needed()
        screenshot(page, "executions-390")
        search_with_the_filters(page, runs)
        assert page.evaluate(NO_PAGE_SCROLL)
        assert errors == []
    finally:
        context.close()


def test_a_404_in_the_browser_keeps_the_admin_nav(chromium, ui_server):
    context, page = open_page(chromium, ui_server, 1280)
    try:
        resp = page.goto(f"{ui_server.base}/nope")
        assert resp.status == 404 and resp.headers["content-type"].startswith("text/html")
        nav = page.inner_text("header.topbar")
        assert "Start a workflow" in nav and "Admin" in nav and "read-only" not in nav
        assert page.inner_text("#error-page").count("There is no page at /nope.") == 1
        assert "Resolver404" not in page.content()
    finally:
        context.close()
