"""The operator pages of the scheduler and the listener settings on a definition page."""
from __future__ import annotations

import pytest
from django.test import Client

from apps.scheduler import firing
from apps.ui.models import AuditLog
from tests.factories import simple_task, task_def, unique, workflow_def
from tests.scheduler.conftest import FRIDAY_NOON_UTC as T0
from tests.ui.conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer_client(db):
    client = Client()
    client.force_login(make_user("viewer", "view_executions"))
    return client


@pytest.fixture
def operator_client(db):
    client = Client()
    client.force_login(make_user("operator", "operate_workflows"))
    return client


def setup_schedule(api, clock) -> tuple[str, str]:
    wf = unique("paged_wf")
    api.register_task_defs(task_def(f"{wf}_t"))
    api.register_workflow(workflow_def(wf, [simple_task(f"{wf}_t")], workflowStatusListenerEnabled=True))
    name = unique("hourly")
    api.ok(api.post("/scheduler/schedules", {"name": name, "cronExpression": "0 0 * * * *", "description": "hourly",
                                             "startWorkflowRequest": {"name": wf}}))
    return name, wf


def test_list_shows_next_runs_and_the_last_run_linked(api, clock, viewer_client):
    name, wf = setup_schedule(api, clock)
    clock.advance(3600)
    firing.fire_due()
    page = viewer_client.get("/schedules/").content.decode()
    assert name in page and wf in page and "0 0 * * * *" in page
    for hour in ("14:00:00", "15:00:00", "16:00:00", "17:00:00", "18:00:00"):  # 5 next runs after 13:00
        assert f"2026-03-06 {hour}" in page
    run = api.ok(api.get("/scheduler/search/executions", {"freeText": name})).json()["results"][0]
    assert f'/execution/{run["workflowId"]}' in page
    assert "Pause" not in page  # a viewer cannot operate


def test_detail_lists_the_executions_with_links(api, clock, viewer_client):
    name, _wf = setup_schedule(api, clock)
    clock.advance(3600)
    firing.fire_due()
    page = viewer_client.get(f"/schedules/{name}").content.decode()
    run = api.ok(api.get("/scheduler/search/executions", {"freeText": name})).json()["results"][0]
    assert f'href="/execution/{run["workflowId"]}"' in page and "EXECUTED" in page
    assert "2026-03-06 14:00:00" in page
    assert viewer_client.get("/schedules/nope").status_code == 404


def test_operators_pause_and_resume_with_an_audit_record(api, clock, operator_client, viewer_client):
    name, _wf = setup_schedule(api, clock)
    assert viewer_client.post(f"/schedules/{name}/pause").status_code == 403
    resp = operator_client.post(f"/schedules/{name}/pause", {"reason": "holiday"})
    assert resp.status_code == 302
    got = api.ok(api.get(f"/scheduler/schedules/{name}")).json()
    assert got["paused"] is True and got["pausedReason"] == "holiday" and got["updatedBy"] == "operator"
    assert "holiday" in operator_client.get("/schedules/").content.decode()
    operator_client.post(f"/schedules/{name}/resume")
    assert api.ok(api.get(f"/scheduler/schedules/{name}")).json()["paused"] is False
    audit = list(AuditLog.objects.filter(target=name).order_by("id").values_list("action", "ok"))
    assert audit == [("schedule_pause", True), ("schedule_resume", True)]


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/", "javascript:alert(1)", "schedules"])
def test_pause_returns_only_to_a_page_of_this_site(api, clock, operator_client, target):
    name, _wf = setup_schedule(api, clock)
    resp = operator_client.post(f"/schedules/{name}/pause", {"next": target})
    assert (resp.status_code, resp["Location"]) == (302, "/schedules/")
    resp = operator_client.post(f"/schedules/{name}/resume", {"next": f"/schedules/{name}"})
    assert (resp.status_code, resp["Location"]) == (302, f"/schedules/{name}")


def test_definition_page_shows_the_listener_settings(api, clock, viewer_client, settings):
    _name, wf = setup_schedule(api, clock)
    settings.CONDUCTOR = {**settings.CONDUCTOR, "WORKFLOW_STATUS_LISTENER": "workflow_publisher",
                          "STATUS_NOTIFIER_URL": "http://127.0.0.1:9/hooks", "STATUS_NOTIFIER_ENDPOINT_WORKFLOW": "wf"}
    page = viewer_client.get(f"/definitions/{wf}/1").content.decode()
    assert "Status listener: <strong>enabled</strong>" in page
    assert "http://127.0.0.1:9/hooks/wf" in page and "COMPLETED, TERMINATED" in page
