"""Names are one URL path segment (issue #10): a WorkflowDef, TaskDef, schedule or event handler name with
'/' is refused with a 400 naming the field wherever it can be registered (the API, the
UI's editor, the admin, start-with-definition, /workflow/test), by the one rule of
``apps.core.fields.name_errors``; rows stored before the rule keep working pages in the UI
and can be deleted through the API."""
from __future__ import annotations

import json

import pytest

from apps.core.clock import now_ms
from apps.engine import executor
from apps.metadata.models import TaskDef, WorkflowDef
from apps.ui.models import AuditLog
from tests.factories import Api, simple_task, task_def, unique, workflow_def
from tests.ui.conftest import make_user

pytestmark = pytest.mark.django_db


error = Api.refused


def names_the_field(body, field="name"):
    paths = [e["path"] for e in body.get("validationErrors") or []]
    assert any(p == field or p.endswith("." + field) for p in paths), body
    assert "'/'" in json.dumps(body) or "at most" in json.dumps(body), body


@pytest.fixture
def task(api):
    name = unique("nm_task")
    api.register_task_defs(task_def(name))
    return name


@pytest.mark.parametrize("where", ["register", "update", "validate", "start", "test"])
def test_workflow_name_with_a_slash_is_refused(api, task, where):
    name = unique("nm") + "/x"
    d = workflow_def(name, [simple_task(task, "t1")])
    resp = {"register": lambda: api.post("/metadata/workflow", d),
            "update": lambda: api.put("/metadata/workflow", [d]),
            "validate": lambda: api.post("/metadata/workflow/validate", d),
            "start": lambda: api.post("/workflow", {"name": name, "workflowDef": d}),
            "test": lambda: api.post("/workflow/test", {"name": name, "workflowDef": d,
                                                        "taskRefToMockOutput": {}})}[where]()
    names_the_field(error(resp))
    assert not WorkflowDef.objects.filter(name=name).exists()


def test_task_def_name_with_a_slash_is_refused(api):
    name = unique("nm_td") + "/x"
    names_the_field(error(api.post("/metadata/taskdefs", [task_def(name)])))
    names_the_field(error(api.put("/metadata/taskdefs", task_def(name))))
    assert not TaskDef.objects.filter(name=name).exists()


@pytest.mark.parametrize("verb", ["post", "put"])
def test_event_handler_name_with_a_slash_is_refused(api, verb):
    """DELETE /api/event/{name} could not reach such a handler (404 'No endpoint')."""
    from apps.metadata.models import EventHandler

    name = unique("nm_eh") + "/x"
    handler = {"name": name, "event": "conductor:x:y", "active": True,
               "actions": [{"action": "start_workflow", "start_workflow": {"name": "x"}}]}
    names_the_field(error(getattr(api, verb)("/event", handler)))
    assert not EventHandler.objects.filter(name=name).exists()


@pytest.mark.parametrize("model", ["workflow", "taskdef"])
def test_names_longer_than_their_column_are_refused(api, task, model):
    name = unique("nm_long").ljust(256, "x")
    if model == "workflow":
        resp = api.post("/metadata/workflow", workflow_def(name, [simple_task(task, "t1")]))
    else:
        resp = api.post("/metadata/taskdefs", [task_def(name)])
    body = error(resp)
    names_the_field(body)
    assert "255" in json.dumps(body)
    # exactly 255 fits
    ok = name[:255]
    if model == "workflow":
        api.register_workflow(workflow_def(ok, [simple_task(task, "t1")]))
    else:
        api.register_task_defs(task_def(ok))


def test_the_schedule_rule_is_the_same(api):
    from apps.core.errors import InvalidInput
    from apps.scheduler.services import normalise

    with pytest.raises(InvalidInput) as caught:
        normalise({"name": "a/b", "cronExpression": "0 0 * * * *",
                   "startWorkflowRequest": {"name": "x"}})
    assert caught.value.validation_errors[0]["message"].startswith("must not contain '/'")


def test_ui_editor_and_admin_refuse_a_slash(client, task):
    from apps.ui import editing

    errors = editing.workflow_def_errors(workflow_def("ui/x", [simple_task(task, "t1")]))
    assert any(e["path"].endswith(".name") and "'/'" in e["message"] for e in errors), errors
    errors = editing.task_def_errors(task_def("ui/td"))
    assert any(e["path"].endswith(".name") and "'/'" in e["message"] for e in errors), errors
    client.force_login(make_user("nm_admin", superuser=True))
    resp = client.post("/admin/metadata/workflowdef/add/", {
        "name": "adm/x", "version": 1, "definition": json.dumps(workflow_def("adm/x", [simple_task(task, "t1")]))})
    assert resp.status_code == 200 and "must not contain" in resp.content.decode()
    assert not WorkflowDef.objects.filter(name="adm/x").exists()


def test_rows_stored_before_the_rule_keep_their_pages(api, client, task):
    """A WorkflowDef and TaskDef whose names hold '/' (stored before the rule existed)
    and an execution of that workflow: every UI page that lists or links them answers
    200 (it was 500 NoReverseMatch), and the API deletes them (and reads the TaskDef)."""
    name = unique("old") + "/slash"
    definition = workflow_def(name, [simple_task(task, "t1")])
    now = now_ms()
    WorkflowDef.objects.create(name=name, version=1, definition=definition, create_time=now, update_time=now)
    WorkflowDef.objects.create(name=name, version=2, definition={**definition, "version": 2},
                               create_time=now, update_time=now)
    TaskDef.objects.create(name="old/td", definition=task_def("old/td"), create_time=now, update_time=now)
    wid = executor.workflow_start(name=name, version=1, input={})
    user = make_user("nm_viewer", superuser=True)
    AuditLog.objects.create(user=user, username=user.username, action="definition_save",
                              target=f"WorkflowDef {name} v1", ok=True)
    client.force_login(user)
    for url in ("/definitions/", f"/execution/{wid}", f"/start/?name={name}", "/audit/",
                f"/definitions/{name}/1", f"/definitions/{name}/2/edit", f"/definitions/{name}/diff",
                f"/executions/?name={name}"):
        resp = client.get(url)
        assert resp.status_code == 200, (url, resp.status_code)
    assert f'href="/definitions/{name}/2"' in client.get("/definitions/").content.decode()
    api.ok(api.delete(f"/metadata/workflow/{name}/2"))
    assert list(WorkflowDef.objects.filter(name=name).values_list("version", flat=True)) == [1]
    assert api.ok(api.get("/metadata/taskdefs/old/td")).json()["name"] == "old/td"
    api.ok(api.delete("/metadata/taskdefs/old/td"))
    assert not TaskDef.objects.filter(name="old/td").exists()
