"""Every API write lands in the audit log with the application that made it (issue #10):
a sample of write endpoints called with API keys, through Django and the ASGI fast path."""
from __future__ import annotations

import json

import pytest

from tests.asgi_client import asgi_request
from tests.auth.conftest import TokenApi, make_key, token_for
from tests.factories import simple_task, task_def, unique, workflow_def


def _rows(**filters):
    from apps.ui.models import AuditLog

    return list(AuditLog.objects.filter(**filters).order_by("id"))


def test_api_writes_are_audited_with_the_application(auth_on, transactional_db):
    admin = TokenApi(token_for(*make_key("admin", unique("audit_admin"))))
    operator_key = make_key("operator", unique("audit_ops"))
    operator = TokenApi(token_for(*operator_key))
    worker = TokenApi(token_for(*make_key("worker", unique("audit_worker"))))
    name = unique("audit_wf")

    admin.register_task_defs(task_def(name))
    admin.register_workflow(workflow_def(name, [simple_task(name, "a")]))
    wid = operator.ok(operator.post(f"/workflow/{name}", {})).content.decode()
    operator.ok(operator.put(f"/workflow/{wid}/pause"))
    assert operator.put(f"/workflow/{wid}/pause").status_code in (200, 409)
    operator.ok(operator.put(f"/workflow/{wid}/resume"))
    assert operator.put(f"/workflow/{wid}/resume").status_code == 409  # refused: audited as failed
    # a start through the ASGI fast path
    status, out = asgi_request("POST", "/api/workflow", {"name": name},
                               headers=[(b"x-authorization", operator.token.encode())])
    assert status == 200, out
    fast_wid = out.decode()
    operator.ok(operator.delete(f"/workflow/{fast_wid}", params={"reason": "audit"}))
    # reads and a worker's task result are not audit rows
    before = len(_rows())
    admin.ok(admin.get(f"/workflow/{wid}"))
    admin.ok(admin.get("/metadata/taskdefs"))
    task = worker.poll_one(name)
    worker.complete(task)
    assert len(_rows()) == before

    admin_rows = _rows(username__startswith="app:audit_admin")
    assert [r.action for r in admin_rows] == ["api:POST /api/metadata/taskdefs", "api:POST /api/metadata/workflow"]
    assert all(r.ok and r.message == "200" and r.user is None for r in admin_rows)
    assert admin_rows[1].params["overwrite"] in ("true", "True")

    ops = _rows(username__startswith="app:audit_ops")
    actions = [(r.action, r.target, r.ok) for r in ops]
    assert ("api:POST /api/workflow/{name_or_id}", f"/api/workflow/{name}", True) in actions
    assert ("api:PUT /api/workflow/{workflow_id}/pause", f"/api/workflow/{wid}/pause", True) in actions
    assert ("api:POST /api/workflow", "/api/workflow", True) in actions
    assert ("api:DELETE /api/workflow/{name_or_id}", f"/api/workflow/{fast_wid}", True) in actions
    failed = [r for r in ops if not r.ok]
    assert failed and failed[-1].action == "api:PUT /api/workflow/{workflow_id}/resume"
    assert failed[-1].message.startswith("409 ")
    assert all(r.params["keyId"] == operator_key[0] for r in ops)


def test_a_fast_path_refusal_is_audited_as_failed(auth_on, transactional_db):
    operator = TokenApi(token_for(*make_key("operator", unique("audit_refused"))))
    status, out = asgi_request("POST", "/api/workflow", {"name": unique("no_such_wf")},
                               headers=[(b"x-authorization", operator.token.encode())])
    assert status == 404, out
    (row,) = _rows(username__startswith="app:audit_refused")
    assert not row.ok and row.message.startswith("404 ") and json.loads(out)["message"] in row.message


def test_worker_writes_are_audited_when_asked(auth_on, settings, monkeypatch, transactional_db):
    monkeypatch.setitem(settings.CONDUCTOR, "AUDIT_WORKER_WRITES", True)
    admin = TokenApi(token_for(*make_key("admin", unique("audit_wadm"))))
    worker = TokenApi(token_for(*make_key("worker", unique("audit_w"))))
    name = unique("audit_wwf")
    admin.register_task_defs(task_def(name))
    admin.register_workflow(workflow_def(name, [simple_task(name, "a")]))
    admin.start(name)
    task = worker.poll_one(name)
    worker.complete(task)
    rows = _rows(username__startswith="app:audit_w_")
    assert [r.action for r in rows] == ["api:POST /api/tasks"] and rows[0].ok


@pytest.mark.django_db
def test_with_auth_off_writes_are_audited_as_anonymous():
    from tests.factories import Api

    api = Api()
    name = unique("audit_anon")
    api.register_task_defs(task_def(name))
    (row,) = _rows(target="/api/metadata/taskdefs", username="anonymous")
    assert row.action == "api:POST /api/metadata/taskdefs" and row.ok


@pytest.mark.django_db
def test_api_rows_show_on_the_audit_page(client):
    from tests.factories import Api
    from tests.ui.conftest import make_user

    name = unique("audit_page")
    Api().register_task_defs(task_def(name))
    client.force_login(make_user("audit_viewer", "view_executions"))
    page = client.get("/audit/").content.decode()
    assert "api:POST /api/metadata/taskdefs" in page and "anonymous" in page


def test_an_audit_row_commits_in_its_change_s_transaction(auth_on, transactional_db, monkeypatch):
    """The process dies right after a write was answered (the step after the answer never
    runs): the change and its audit row were committed together, through Django and the
    ASGI fast path alike; a refused write, which changed nothing, is recorded after."""
    from apps.api import audit
    from apps.metadata.models import TaskDef

    admin_key = make_key("admin", unique("durable_admin"))
    admin = TokenApi(token_for(*admin_key))
    name = unique("durable")
    with monkeypatch.context() as crash:
        crash.setattr(audit, "record_api_write", lambda *args, **kwargs: None)
        admin.register_task_defs(task_def(name))
        admin.register_workflow(workflow_def(name, [simple_task(name, "a")]))
        status, out = asgi_request("POST", "/api/workflow", {"name": name},
                                   headers=[(b"x-authorization", admin.token.encode())])
    assert status == 200, out
    assert TaskDef.objects.filter(pk=name).exists()
    rows = _rows(username__startswith="app:durable_admin")
    assert [(r.action, r.ok, r.message) for r in rows] == [
        ("api:POST /api/metadata/taskdefs", True, "200"), ("api:POST /api/metadata/workflow", True, "200"),
        ("api:POST /api/workflow", True, "200")]
    assert rows[0].params["keyId"] == admin_key[0]

    auth_on_again = TokenApi(token_for(*make_key("admin", unique("durable_admin2"))))
    refused = auth_on_again.post("/metadata/workflow", {"name": ""})
    assert refused.status_code == 400
    (row,) = _rows(username__startswith="app:durable_admin2", action="api:POST /api/metadata/workflow")
    assert not row.ok and row.message.startswith("400")
