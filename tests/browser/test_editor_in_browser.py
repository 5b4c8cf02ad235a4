"""The definitions editor in real headless chromium (issue #13, item 5): typing invalid JSON
or an invalid definition shows the error naming the field (and marks its line), the graph
preview follows the text, saving a valid change stores the next version, and executions
on the old version still link to it; the version diff overlay from that execution."""
from __future__ import annotations

import json

import pytest

from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_operator_ui import chain, watch_errors

pytestmark = pytest.mark.browser


def wait_checked(page, status: str) -> None:
    """Wait until the editor's last check answered with ``status`` ("valid", "invalid JSON", "N errors")."""
    page.wait_for_function(
        """(want) => document.getElementById('definition-editor').dataset.checked === '1'
            && document.getElementById('editor-status').textContent === want""", arg=status)


def set_text(page, text: str) -> None:
    page.evaluate("(t) => window.conductorEditor.editor.setValue(t, -1)", text)


def test_editor_new_version_flow(page, ui_server):
    errors = watch_errors(page)
    name = chain(ui_server)
    wf_id = ui_server.start(name, {"order_id": 1})
    v1 = ui_server.http.get(f"{ui_server.api}/metadata/workflow/{name}", params={"version": 1}).json()
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/definitions/{name}/1")
    page.click("#edit-definition")
    page.wait_for_selector("#editor .ace_content")
    wait_checked(page, "valid")
    # syntax highlighting: Ace's JSON mode tokens are in the DOM
    assert page.locator("#editor .ace_variable").count() > 0 and page.locator("#editor .ace_string").count() > 0
    # an execution ran on v1: it cannot be overwritten, only saved as v2
    assert page.is_disabled("#overwrite") and "used by 1 execution" in page.inner_text("#overwrite-hint")
    assert page.inner_text("#next-version") == "v2"

    # typing a stray character breaks the JSON: the error names line and column
    page.click("#editor .ace_content")
    page.keyboard.press("Control+End")
    page.keyboard.type(",")
    wait_checked(page, "invalid JSON")
    assert "invalid JSON" in page.inner_text("#editor-errors")
    assert page.locator("#editor-errors code.path").first.inner_text().startswith("line ")
    page.keyboard.press("Backspace")
    wait_checked(page, "valid")

    # a definition Conductor refuses: the field is named and its line marked in the gutter
    broken = json.loads(json.dumps(v1))
    del broken["tasks"][1]["taskReferenceName"]
    set_text(page, json.dumps(broken, indent=2))
    page.wait_for_function("""() => document.getElementById('definition-editor').dataset.checked === '1'
        && /error/.test(document.getElementById('editor-status').textContent)""")
    listed = page.inner_text("#editor-errors")
    assert "create.workflowDef.tasks[1].taskReferenceName" in listed or "taskReferenceName" in listed, listed
    assert page.locator("#editor .ace_gutter-cell.ace_error").count() >= 1

    # a valid change: the preview grows a node, saving stores v2
    changed = json.loads(json.dumps(v1))
    changed["description"] = "edited in the browser"
    changed["tasks"] = [v1["tasks"][0], {**v1["tasks"][0], "taskReferenceName": "c"}]  # b removed, c added
    set_text(page, json.dumps(changed, indent=2))
    wait_checked(page, "valid")
    page.wait_for_function("window.conductorGraph.cy.getElementById('c').length === 1")
    # the preview marks the change against v1: c added, b removed
    assert page.evaluate("window.conductorGraph.cy.nodes('.diff-added').map(n => n.id())") == ["c"]
    assert page.evaluate("window.conductorGraph.cy.nodes('.diff-removed').map(n => n.id())") == ["b"]
    changes = " ".join(page.inner_text("#preview-changes").split())
    assert "added c" in changes and "removed b" in changes, changes
    screenshot(page, "editor")
    page.click("#save-definition")
    page.wait_for_url(f"**/definitions/{name}/2")
    saved = ui_server.http.get(f"{ui_server.api}/metadata/workflow/{name}", params={"version": 2}).json()
    assert saved["description"] == "edited in the browser" and [t["taskReferenceName"] for t in saved["tasks"]] == ["a", "c"]
    again = ui_server.http.get(f"{ui_server.api}/metadata/workflow/{name}", params={"version": 1}).json()
    assert [t["taskReferenceName"] for t in again["tasks"]] == ["a", "b"] and again.get("description") == v1.get("description")

    # the execution on v1 still links to v1, and offers the difference to the latest
    page.goto(f"{ui_server.base}/execution/{wf_id}")
    page.click("#definition-link")
    page.wait_for_url(f"**/definitions/{name}/1")
    assert page.title().startswith(f"{name} v1")
    page.go_back()
    page.click("#newer-definition")
    page.wait_for_function("window.conductorGraph && window.conductorGraph.cy.nodes('.diff-added').length === 1")
    assert page.evaluate("window.conductorGraph.cy.nodes('.diff-added').map(n => n.id())") == ["c"]
    # the removed task is drawn where it stood, joined by dashed edges
    assert page.evaluate("window.conductorGraph.cy.nodes('.diff-removed').map(n => n.id())") == ["b"]
    assert page.evaluate("window.conductorGraph.cy.edges('.diff-removed').length") == 2
    screenshot(page, "definition-overlay")
    assert errors == []


def test_overwrite_of_an_unused_version_and_a_taskdef(page, ui_server):
    errors = watch_errors(page)
    name = chain(ui_server)
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/definitions/{name}/1/edit")
    wait_checked(page, "valid")
    assert not page.is_disabled("#overwrite")
    text = page.evaluate("window.conductorEditor.editor.getValue()")
    set_text(page, text.replace('"schemaVersion": 2', '"description": "fixed in place",\n  "schemaVersion": 2'))
    wait_checked(page, "valid")
    page.check("#overwrite")
    page.click("#save-definition")
    page.wait_for_url(f"**/definitions/{name}/1")
    versions = ui_server.http.get(f"{ui_server.api}/metadata/workflow/{name}/versions")
    latest = ui_server.http.get(f"{ui_server.api}/metadata/workflow/{name}").json()
    assert latest["version"] == 1 and latest["description"] == "fixed in place", versions.text

    page.goto(f"{ui_server.base}/definitions/")
    page.click(f"#taskdefs a:text-is('{name}_a')")
    wait_checked(page, "valid")
    text = page.evaluate("window.conductorEditor.editor.getValue()")
    set_text(page, text.replace('"retryCount": 0', '"retryCount": -2'))
    wait_checked(page, "1 error")
    assert "retryCount" in page.inner_text("#editor-errors")
    set_text(page, text.replace('"retryCount": 0', '"retryCount": 5'))
    wait_checked(page, "valid")
    with page.expect_navigation():  # saved: the editor reloads on the stored TaskDef
        page.click("#save-definition")
    wait_checked(page, "valid")
    assert '"retryCount": 5' in page.evaluate("window.conductorEditor.editor.getValue()")
    assert ui_server.http.get(f"{ui_server.api}/metadata/taskdefs/{name}_a").json()["retryCount"] == 5
    assert errors == []


def test_editor_follows_dark_mode(page, ui_server):
    errors = watch_errors(page)
    name = chain(ui_server)
    page.emulate_media(color_scheme="dark")
    sign_in(page, ui_server)
    page.goto(f"{ui_server.base}/definitions/{name}/1/edit")
    page.wait_for_selector("#editor.ace-tomorrow-night .ace_content")  # the theme came from static/vendor/ace
    wait_checked(page, "valid")
    assert errors == []
