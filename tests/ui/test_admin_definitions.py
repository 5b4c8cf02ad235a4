"""Definitions in the Django admin (issue #13): a changed version is saved as a new
version (the old one, which executions link to, is untouched), the JSON is edited
indented, times read as UTC dates, and every admin edit is in the operator audit log."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from apps.metadata.models import WorkflowDef
from apps.ui.models import AuditLog
from tests.ui.conftest import register_chain

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def change_url(row: WorkflowDef) -> str:
    return f"/admin/metadata/workflowdef/{row.pk}/change/"


def test_changing_the_version_saves_a_new_version(admin_client):
    name = register_chain()
    old = WorkflowDef.objects.get(name=name, version=1)
    before = (old.definition, old.update_time)
    page = admin_client.get(change_url(old)).content.decode()
    assert "\n  &quot;name&quot;" in page or '\n  "name"' in page  # indented JSON, not one line
    assert "save your edit as a new version beside this one" in page
    definition = {**old.definition, "description": "v2 from the admin"}
    resp = admin_client.post(change_url(old), {"name": name, "version": 2, "definition": json.dumps(definition)})
    assert resp.status_code == 302, resp.content.decode()[:3000]
    old.refresh_from_db()
    assert (old.definition, old.update_time) == before and old.version == 1
    new = WorkflowDef.objects.get(name=name, version=2)
    assert new.pk != old.pk and new.definition["description"] == "v2 from the admin" and new.definition["version"] == 2
    entry = AuditLog.objects.get(action="admin_new_version")
    assert entry.target == f"WorkflowDef {name} v2" and entry.params["from"] == f"{name} v1" and entry.username == "root"
    # the audit page lists it without linking it as an execution
    html = admin_client.get("/audit/").content.decode()
    assert f"WorkflowDef {name} v2" in html and f'href="/execution/WorkflowDef' not in html


def test_a_version_that_exists_is_refused(admin_client):
    name = register_chain()
    one = WorkflowDef.objects.get(name=name, version=1)
    admin_client.post(change_url(one), {"name": name, "version": 2, "definition": json.dumps(one.definition)})
    resp = admin_client.post(change_url(one), {"name": name, "version": 2, "definition": json.dumps(one.definition)})
    assert resp.status_code == 200 and "exists already" in resp.content.decode()
    assert WorkflowDef.objects.filter(name=name).count() == 2


def test_plain_edit_and_delete_are_audited_and_times_are_dates(admin_client):
    name = register_chain()
    row = WorkflowDef.objects.get(name=name, version=1)
    definition = {**row.definition, "description": "edited"}
    resp = admin_client.post(change_url(row), {"name": name, "version": 1, "definition": json.dumps(definition)})
    assert resp.status_code == 302
    assert AuditLog.objects.filter(action="admin_change", target=f"WorkflowDef {name} v1").count() == 1
    listing = admin_client.get("/admin/metadata/workflowdef/").content.decode()
    assert " UTC" in listing and str(row.update_time) not in listing
    admin_client.post(f"/admin/metadata/workflowdef/{row.pk}/delete/", {"post": "yes"})
    assert not WorkflowDef.objects.filter(pk=row.pk).exists()
    assert AuditLog.objects.filter(action="admin_delete", target=f"WorkflowDef {name} v1").count() == 1
