"""Backfill of a schedule (``POST /api/scheduler/schedules/{name}/backfill``, ours) and
its past/upcoming runs (``GET .../runs``): a dry run lists the slots, a run starts each
missed slot once (twice run, or run over slots the loop fired, starts nothing again),
the bound is refused whole with the count, bad input is a 400 naming the field."""
from __future__ import annotations

import pytest

from apps.engine.models import WorkflowExecution
from apps.scheduler import firing
from apps.scheduler.models import ScheduleExecution
from tests.scheduler.conftest import FRIDAY_NOON_UTC as T0
from tests.scheduler.test_firing import register, save

HOUR = 3_600_000


def backfill(api, name, start, end, dry_run=False, status=200):
    resp = api.post(f"/scheduler/schedules/{name}/backfill", {"startTime": start, "endTime": end, "dryRun": dry_run})
    assert resp.status_code == status, resp.content[:500]
    return resp.json()


@pytest.mark.django_db
def test_dry_run_lists_then_run_starts_each_missed_slot_once(api, clock):
    wf = register(api)
    name = save(api, wf, cron="0 0 * * * *")  # hourly, saved at T0 (noon): the morning slots never ran
    clock.advance(3 * 3600 + 1)  # 15:00:01: the loop fires its pending slot (13:00)
    assert firing.fire_due() == 1
    fired = {r.scheduled_time for r in ScheduleExecution.objects.filter(schedule_name=name)}
    assert fired == {T0 + HOUR}

    dry = backfill(api, name, T0 - 3 * HOUR, T0 + 2 * HOUR, dry_run=True)
    slots = {s["scheduledTime"]: s["state"] for s in dry["slots"]}
    assert slots == {T0 - 3 * HOUR: "WOULD_START", T0 - 2 * HOUR: "WOULD_START", T0 - HOUR: "WOULD_START",
                     T0: "WOULD_START", T0 + HOUR: "ALREADY_RUN", T0 + 2 * HOUR: "WOULD_START"}
    assert dry["started"] == 0 and dry["skipped"] == 1
    assert ScheduleExecution.objects.filter(schedule_name=name).count() == 1  # a dry run starts nothing

    before = WorkflowExecution.objects.filter(workflow_name=wf).count()
    run = backfill(api, name, T0 - 3 * HOUR, T0 + 2 * HOUR)
    assert run["started"] == 5 and run["skipped"] == 1
    started = [s for s in run["slots"] if s["state"] == "EXECUTED"]
    assert len({s["workflowId"] for s in started}) == 5
    assert WorkflowExecution.objects.filter(workflow_name=wf).count() == before + 5
    one = api.workflow(started[0]["workflowId"])
    assert one["input"]["_backfill"] is True and one["input"]["_startedByScheduler"] == name
    assert one["input"]["_scheduledTime"] == started[0]["scheduledTime"]

    again = backfill(api, name, T0 - 3 * HOUR, T0 + 2 * HOUR)  # idempotent: nothing new
    assert again["started"] == 0 and again["skipped"] == 6
    assert WorkflowExecution.objects.filter(workflow_name=wf).count() == before + 5

    runs = api.ok(api.get(f"/scheduler/schedules/{name}/runs", {"size": 3})).json()
    assert runs["totalPast"] == 6 and len(runs["past"]) == 3
    assert [r["scheduledTime"] for r in runs["past"]] == [T0 + 2 * HOUR, T0 + HOUR, T0]
    assert {r["workflowStatus"] for r in runs["past"]} == {"RUNNING"}
    assert runs["upcoming"][:2] == [T0 + 4 * HOUR, T0 + 5 * HOUR]


@pytest.mark.django_db
def test_over_the_bound_is_refused_whole_and_bad_input_names_the_field(api, clock, settings):
    name = save(api, register(api), cron="0 * * * * *")  # every minute
    clock.advance(3600)
    settings.CONDUCTOR = {**settings.CONDUCTOR, "SCHEDULER_BACKFILL_MAX_SLOTS": 10}
    body = backfill(api, name, T0 - HOUR, T0, status=400)
    assert "more than 10 slots" in str(body) and body["validationErrors"][0]["path"] == "endTime"
    assert len(backfill(api, name, T0 - 9 * 60_000, T0, dry_run=True)["slots"]) == 10
    assert not ScheduleExecution.objects.filter(schedule_name=name).exists()
    assert backfill(api, name, T0, T0 - 1, status=400)["validationErrors"][0]["path"] == "endTime"
    assert backfill(api, name, "yesterday", T0, status=400)["validationErrors"][0]["path"] == "startTime"
    future = backfill(api, name, T0, T0 + 2 * HOUR, status=400)
    assert "future" in future["validationErrors"][0]["message"]
    resp = api.post(f"/scheduler/schedules/{name}/backfill", {"startTime": T0, "endTime": T0, "dryRun": "yes"})
    assert resp.status_code == 400 and resp.json()["validationErrors"][0]["path"] == "dryRun"
    # a missing field: named, with no null invalidValue (the documents type it as a string;
    # schemathesis over our /api-docs found the null)
    missing = api.post(f"/scheduler/schedules/{name}/backfill", {"endTime": T0})
    assert missing.status_code == 400 and missing.json()["validationErrors"] == [
        {"path": "startTime", "message": "must be epoch milliseconds (an integer)"}]
    assert api.post("/scheduler/schedules/nope/backfill", {"startTime": T0, "endTime": T0}).status_code == 404
    assert api.get("/scheduler/schedules/nope/runs").status_code == 404
    assert api.get(f"/scheduler/schedules/{name}/runs", {"size": 0}).status_code == 400


@pytest.mark.django_db
def test_backfill_page_lists_then_starts_and_read_only_users_only_see(api, clock):
    from django.test import Client

    from apps.ui.models import AuditLog
    from tests.ui.conftest import make_user

    name = save(api, register(api), cron="0 0 * * * *")
    clock.advance(3600 * 2 + 1)
    operator, viewer = Client(), Client()
    operator.force_login(make_user("bf-operator", "operate_workflows"))
    viewer.force_login(make_user("bf-viewer", "view_executions"))
    form = {"startTime": T0 - 2 * HOUR, "endTime": T0, "mode": "preview"}
    page = operator.post(f"/schedules/{name}/backfill", form).content.decode()
    assert page.count('data-state="WOULD_START"') == 3 and "Start 3 slot(s)" in page
    assert ScheduleExecution.objects.filter(schedule_name=name).count() == 0
    page = operator.post(f"/schedules/{name}/backfill", {**form, "mode": "run"}, follow=True).content.decode()
    assert page.count('data-state="EXECUTED"') == 3 and "3 slot(s) started, 0 already run" in page
    assert AuditLog.objects.filter(action="schedule_backfill", target=name).count() == 1
    page = operator.get(f"/schedules/{name}").content.decode()
    assert page.count('class="badge">backfill') == 3 and 'id="backfill-form"' in page
    bad = operator.post(f"/schedules/{name}/backfill", {"startTime": "x", "endTime": T0, "mode": "preview"})
    assert bad.status_code == 200 and "startTime" in bad.content.decode()
    seen = viewer.get(f"/schedules/{name}").content.decode()
    assert 'id="backfill-form"' not in seen and seen.count('class="badge">backfill') == 3
    assert viewer.post(f"/schedules/{name}/backfill", {**form, "mode": "run"}).status_code == 403
    assert ScheduleExecution.objects.filter(schedule_name=name).count() == 3
