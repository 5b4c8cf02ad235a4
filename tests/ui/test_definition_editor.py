"""The definitions editor's server side (issue #13, item 5): validation as you type with
Conductor's validationErrors, saving a changed WorkflowDef as the next version, overwrite
only of a version no execution ran on, TaskDefs, permissions and the audit log; the
admin's change form refuses to mutate a version that executions ran on."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from apps.engine import executor
from apps.metadata.models import TaskDef, WorkflowDef
from apps.ui.models import AuditLog
from tests.ui.conftest import register_chain

pytestmark = pytest.mark.django_db


def check(client, definition, kind="workflow"):
    text = definition if isinstance(definition, str) else json.dumps(definition, indent=2)
    return client.post(f"/definitions/check/{kind}", json.dumps({"text": text}), content_type="application/json")


def save(client, definition, mode="new_version", base="", kind="workflow"):
    body = {"text": json.dumps(definition, indent=2), "mode": mode, "base": base}
    return client.post(f"/definitions/save/{kind}", json.dumps(body), content_type="application/json")


def v1_of(name: str) -> dict:
    return WorkflowDef.objects.get(name=name, version=1).definition


def test_editor_page_opens_on_the_version_json(operator_client, chain):
    page = operator_client.get(f"/definitions/{chain}/1/edit").content.decode()
    assert 'id="definition-editor"' in page and "vendor/ace/ace.js" in page and "ui/graph.js" in page
    assert f"&quot;name&quot;: &quot;{chain}&quot;" in page  # the JSON, indented, escaped in the textarea
    assert 'id="next-version">v2<' in page and 'id="overwrite"' in page and "disabled" not in page.split('id="overwrite"')[1][:20]
    assert operator_client.get(f"/definitions/{chain}/7/edit").status_code == 404
    definition_page = operator_client.get(f"/definitions/{chain}/1").content.decode()
    assert f'href="/definitions/{chain}/1/edit"' in definition_page


def test_check_names_the_field_of_each_error_and_draws_the_graph(operator_client, chain):
    good = check(operator_client, v1_of(chain)).json()
    assert good["validationErrors"] == [] and good["nextVersion"] == 2 and good["usedBy"] == 0
    assert {n["ref"] for n in good["graph"]["nodes"] if n.get("ref")} >= {"a", "b"}
    broken = v1_of(chain)
    broken["tasks"][1] = {**broken["tasks"][1], "taskReferenceName": "a"}  # duplicate reference
    del broken["tasks"][0]["name"]
    errors = check(operator_client, broken).json()["validationErrors"]
    paths = {e["path"] for e in errors}
    assert any(p.startswith("create.workflowDef") for p in paths), errors
    assert any("name" in e["path"] or "name" in e["message"] for e in errors), errors
    assert any("taskReferenceName" in e["message"] or "taskReferenceName" in e["path"] for e in errors), errors
    # against the version the editor opened: the preview marks what the save would change
    v1 = v1_of(chain)
    edited = {**v1, "tasks": [v1["tasks"][0], {**v1["tasks"][0], "taskReferenceName": "c"}]}
    body = {"text": json.dumps(edited), "baseName": chain, "baseVersion": 1}
    marked = operator_client.post("/definitions/check/workflow", json.dumps(body), content_type="application/json").json()
    assert marked["changes"] == {"added": ["c"], "changed": [], "removed": ["b"]}
    assert {n["ref"]: n.get("diff") for n in marked["graph"]["nodes"] if n.get("ref")} == {
        "a": None, "c": "added", "b": "removed"}
    # text that is not JSON: 400 with Conductor's body, naming line and column
    bad = check(operator_client, '{\n  "name": "x",\n  "tasks": [\n}')
    assert bad.status_code == 400
    body = bad.json()
    assert body["message"].startswith("Validation failed") and body["validationErrors"][0]["path"] == "line 4, column 1"


def test_save_makes_the_next_version_and_leaves_the_old_one(operator_client, chain):
    wf_id = executor.workflow_start(name=chain, version=1, input={"x": 1})
    before = (v1_of(chain), WorkflowDef.objects.get(name=chain, version=1).update_time)
    changed = {**v1_of(chain), "description": "from the editor", "version": 1, "createTime": 123, "updateTime": 456}
    resp = save(operator_client, changed, base=f"{chain} v1")
    assert resp.status_code == 200, resp.content
    assert resp.json() == {"name": chain, "version": 2, "mode": "new_version", "url": f"/definitions/{chain}/2"}
    old = WorkflowDef.objects.get(name=chain, version=1)
    assert (old.definition, old.update_time) == before
    v2 = WorkflowDef.objects.get(name=chain, version=2).definition
    assert v2["description"] == "from the editor" and "createTime" not in v2 and "updateTime" not in v2
    entry = AuditLog.objects.get(action="definition_new_version")
    assert entry.target == f"WorkflowDef {chain} v2" and entry.params == {"from": f"{chain} v1"}
    assert entry.username == "operator"
    audit = operator_client.get("/audit/").content.decode()
    assert f'<a href="/definitions/{chain}/2">WorkflowDef {chain} v2</a>' in audit and "/execution/WorkflowDef" not in audit
    # the execution still links to the version it ran on
    assert operator_client.get(f"/definitions/{chain}/1").status_code == 200
    assert f'/definitions/{chain}/1"' in operator_client.get(f"/execution/{wf_id}").content.decode()
    # a third save is v3, not a clash with v2
    assert save(operator_client, changed).json()["version"] == 3
    # the definitions list links the latest version's diff
    assert f'href="/definitions/{chain}/diff" class="diff-link">what changed in v3<' in \
        operator_client.get("/definitions/").content.decode()


def test_overwrite_only_a_version_no_execution_ran_on(operator_client, chain):
    edited = {**v1_of(chain), "description": "in place"}
    resp = save(operator_client, edited, mode="overwrite")
    assert resp.status_code == 200 and resp.json()["version"] == 1
    assert v1_of(chain)["description"] == "in place" and WorkflowDef.objects.filter(name=chain).count() == 1
    assert AuditLog.objects.filter(action="definition_overwrite", target=f"WorkflowDef {chain} v1").count() == 1
    executor.workflow_start(name=chain, version=1, input={})
    assert check(operator_client, v1_of(chain)).json()["usedBy"] == 1
    refused = save(operator_client, {**edited, "description": "again"}, mode="overwrite")
    assert refused.status_code == 409
    assert refused.json()["message"] == f"{chain} v1 is used by 1 execution: save it as a new version instead"
    assert v1_of(chain)["description"] == "in place"
    page = operator_client.get(f"/definitions/{chain}/1/edit").content.decode()
    assert 'id="overwrite" disabled' in page and "is used by 1 execution" in page
    missing = save(operator_client, {**edited, "version": 9}, mode="overwrite")
    assert missing.status_code == 404


def test_invalid_definition_is_not_saved(operator_client, chain):
    broken = {**v1_of(chain), "tasks": [{"type": "SIMPLE"}]}
    resp = save(operator_client, broken)
    assert resp.status_code == 400 and resp.json()["validationErrors"]
    assert WorkflowDef.objects.filter(name=chain).count() == 1 and not AuditLog.objects.exists()
    assert save(operator_client, v1_of(chain), mode="rename").status_code == 400


def test_new_workflow_and_taskdef(operator_client):
    assert 'id="definition-editor"' in operator_client.get("/definitions/new").content.decode()
    name = "editor_new_wf"
    definition = {"name": name, "version": 7, "schemaVersion": 2, "ownerEmail": "ops@example.com", "tasks": [
        {"name": "wait", "taskReferenceName": "wait", "type": "WAIT"}]}
    assert save(operator_client, definition).json()["version"] == 1  # a new name starts at v1
    task = {"name": "editor_task", "retryCount": 2, "timeoutSeconds": 60, "responseTimeoutSeconds": 30,
            "ownerEmail": "ops@example.com", "timeoutPolicy": "TIME_OUT_WF"}
    assert check(operator_client, {**task, "retryCount": -1}, kind="task").json()["validationErrors"]
    resp = save(operator_client, task, kind="task")
    assert resp.status_code == 200 and resp.json()["created"] is True
    assert TaskDef.objects.get(pk="editor_task").definition["retryCount"] == 2
    assert save(operator_client, {**task, "retryCount": 4}, kind="task").json()["created"] is False
    assert TaskDef.objects.get(pk="editor_task").definition["retryCount"] == 4
    assert AuditLog.objects.filter(action="taskdef_save", target="TaskDef editor_task").count() == 2
    page = operator_client.get("/definitions/new", {"taskdef": "editor_task"}).content.decode()
    assert "&quot;retryCount&quot;: 4" in page
    listing = operator_client.get("/definitions/").content.decode()
    assert "/definitions/new?taskdef=editor_task" in listing and 'id="new-definition"' in listing


def test_viewers_cannot_edit(viewer_client, chain):
    assert viewer_client.get(f"/definitions/{chain}/1/edit").status_code == 403
    assert save(viewer_client, v1_of(chain)).status_code == 403
    assert check(viewer_client, v1_of(chain)).status_code == 403
    assert "/edit" not in viewer_client.get(f"/definitions/{chain}/1").content.decode()


def test_admin_refuses_to_mutate_a_version_that_executions_ran_on(client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    name = register_chain()
    executor.workflow_start(name=name, version=1, input={})
    row = WorkflowDef.objects.get(name=name, version=1)
    before = row.definition
    url = f"/admin/metadata/workflowdef/{row.pk}/change/"
    resp = client.post(url, {"name": name, "version": 1, "definition": json.dumps({**before, "description": "x"})})
    assert resp.status_code == 200
    assert f"{name} v1 is used by 1 execution: set version 2 to save your change as a new version" in resp.content.decode()
    assert v1_of(name) == before and not AuditLog.objects.exists()
    # following the advice saves v2 beside it, audited
    resp = client.post(url, {"name": name, "version": 2, "definition": json.dumps({**before, "description": "x"})})
    assert resp.status_code == 302 and v1_of(name) == before
    assert AuditLog.objects.filter(action="admin_new_version", target=f"WorkflowDef {name} v2").count() == 1
