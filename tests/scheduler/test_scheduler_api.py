"""``/api/scheduler``: Conductor's paths, fields, messages and answers."""
from __future__ import annotations

import pytest

from tests.factories import unique
from tests.scheduler.conftest import FRIDAY_NOON_UTC

pytestmark = pytest.mark.django_db


def schedule(name: str, cron: str = "0 */5 * * * *", **extra) -> dict:
    body = {"name": name, "cronExpression": cron,
            "startWorkflowRequest": {"name": "nightly_report", "version": 1, "input": {"region": "eu"}}}
    body.update(extra)
    return body


def test_save_answers_the_stored_schedule_with_its_next_run(api, clock):
    name = unique("sched")
    saved = api.ok(api.post("/scheduler/schedules", schedule(name, description="every five minutes"))).json()
    assert saved["name"] == name
    assert saved["cronExpression"] == "0 */5 * * * *"
    assert saved["zoneId"] == "UTC" and saved["cronSchedules"] == []
    assert saved["paused"] is False and saved["runCatchupScheduleInstances"] is False
    assert saved["createTime"] == saved["updatedTime"] == FRIDAY_NOON_UTC
    assert saved["nextRunTime"] == FRIDAY_NOON_UTC + 5 * 60_000
    assert saved["startWorkflowRequest"]["input"] == {"region": "eu"}
    assert api.ok(api.get(f"/scheduler/schedules/{name}")).json() == saved


def test_save_is_an_upsert_by_name_keeping_the_creation(api, clock):
    name = unique("sched")
    api.ok(api.post("/scheduler/schedules", schedule(name)))
    clock.advance(60)
    updated = api.ok(api.post("/scheduler/schedules", schedule(name, "0 0 * * * *"))).json()
    assert updated["createTime"] == FRIDAY_NOON_UTC
    assert updated["updatedTime"] == FRIDAY_NOON_UTC + 60_000
    assert updated["nextRunTime"] == FRIDAY_NOON_UTC + 3600_000
    listed = api.ok(api.get("/scheduler/schedules")).json()
    assert [s["cronExpression"] for s in listed if s["name"] == name] == ["0 0 * * * *"]


def test_get_missing_is_404_with_conductors_message(api):
    resp = api.get("/scheduler/schedules/no_such_schedule")
    assert resp.status_code == 404
    assert resp.json()["message"] == "Schedule 'no_such_schedule' not found"


def test_list_filters_by_workflow_name(api, clock):
    a, b = unique("a"), unique("b")
    api.ok(api.post("/scheduler/schedules", schedule(a)))
    other = schedule(b)
    other["startWorkflowRequest"]["name"] = "other_workflow"
    api.ok(api.post("/scheduler/schedules", other))
    names = [s["name"] for s in api.ok(api.get("/scheduler/schedules", {"workflowName": "other_workflow"})).json()]
    assert names == [b]


@pytest.mark.parametrize("body,path", [
    ({"cronExpression": "0 * * * * *", "startWorkflowRequest": {"name": "w"}}, "name"),
    ({"name": "x", "startWorkflowRequest": {"name": "w"}}, "cronExpression"),
    ({"name": "x", "cronExpression": "* * * * *", "startWorkflowRequest": {"name": "w"}}, "cronExpression"),
    ({"name": "x", "cronExpression": "0 * * * * *"}, "startWorkflowRequest"),
    ({"name": "x", "cronExpression": "0 * * * * *", "startWorkflowRequest": {"input": {}}}, "startWorkflowRequest.name"),
    ({"name": "x", "cronExpression": "0 * * * * *", "zoneId": "Nowhere/City", "startWorkflowRequest": {"name": "w"}},
     "zoneId"),
    ({"name": "x", "cronSchedules": [{"cronExpression": "0 * * * * *"}, {"cronExpression": "bad"}],
      "startWorkflowRequest": {"name": "w"}}, "cronSchedules[1].cronExpression"),
    ({"name": "x", "cronExpression": "0 * * * * *", "scheduleStartTime": "soon", "startWorkflowRequest": {"name": "w"}},
     "scheduleStartTime"),
    # beyond what a date holds: 500 "year 33658 is out of range" / OSError before
    ({"name": "x", "cronExpression": "0 * * * * *", "scheduleStartTime": 10**15, "startWorkflowRequest": {"name": "w"}},
     "scheduleStartTime"),
    ({"name": "x", "cronExpression": "0 * * * * *", "scheduleEndTime": 2**70, "startWorkflowRequest": {"name": "w"}},
     "scheduleEndTime"),
    # too long for its column: every slot failed later with no field named
    ({"name": "x", "cronExpression": "0 * * * * *", "startWorkflowRequest": {"name": "w", "correlationId": "c" * 300}},
     "startWorkflowRequest.correlationId"),
    ({"name": "x", "cronExpression": "0 * * * * *", "startWorkflowRequest": {"name": "w", "correlationId": 7}},
     "startWorkflowRequest.correlationId"),
])
def test_bad_schedules_are_400_naming_the_field_and_store_nothing(api, body, path):
    resp = api.post("/scheduler/schedules", body)
    assert resp.status_code == 400, resp.content
    assert path in [e["path"] for e in resp.json()["validationErrors"]]
    assert api.ok(api.get("/scheduler/schedules")).json() == []


def test_multi_cron_schedules_take_precedence(api, clock):
    name = unique("regional")
    body = schedule(name, cronSchedules=[{"cronExpression": "0 0 9 * * MON-FRI", "zoneId": "America/New_York"},
                                         {"cronExpression": "0 0 9 * * MON-FRI", "zoneId": "Europe/London"}])
    saved = api.ok(api.post("/scheduler/schedules", body)).json()
    # Friday 12:00 UTC: London's 09:00 has passed, New York's (14:00 UTC) is next
    assert saved["nextRunTime"] == FRIDAY_NOON_UTC + 2 * 3600_000
    assert saved["cronSchedules"][1] == {"cronExpression": "0 0 9 * * MON-FRI", "zoneId": "Europe/London"}


@pytest.mark.parametrize("verb", ["put", "get"])
def test_pause_and_resume_answer_put_and_get(api, clock, verb):
    name = unique("sched")
    api.ok(api.post("/scheduler/schedules", schedule(name)))
    call = getattr(api, verb)
    resp = call(f"/scheduler/schedules/{name}/pause", params={"reason": "maintenance"}) if verb == "get" else \
        call(f"/scheduler/schedules/{name}/pause", None, params={"reason": "maintenance"})
    assert resp.status_code == 200 and resp.content == b""
    got = api.ok(api.get(f"/scheduler/schedules/{name}")).json()
    assert got["paused"] is True and got["pausedReason"] == "maintenance"
    clock.advance(3600)
    api.ok(call(f"/scheduler/schedules/{name}/resume"))
    got = api.ok(api.get(f"/scheduler/schedules/{name}")).json()
    assert got["paused"] is False and "pausedReason" not in got
    # resumed: counted from now, the missed slots are not replayed
    assert got["nextRunTime"] == FRIDAY_NOON_UTC + 3600_000 + 5 * 60_000


def test_pause_missing_and_resume_of_a_running_schedule_are_404(api, clock):
    assert api.put("/scheduler/schedules/ghost/pause").status_code == 404
    name = unique("sched")
    api.ok(api.post("/scheduler/schedules", schedule(name)))
    resp = api.put(f"/scheduler/schedules/{name}/resume")
    assert resp.status_code == 404 and resp.json()["message"] == f"Schedule '{name}' not found"


def test_delete_is_silent_for_a_missing_schedule(api, clock):
    name = unique("sched")
    api.ok(api.post("/scheduler/schedules", schedule(name)))
    api.ok(api.delete(f"/scheduler/schedules/{name}"))
    assert api.get(f"/scheduler/schedules/{name}").status_code == 404
    api.ok(api.delete(f"/scheduler/schedules/{name}"))


def test_bulk_pause_and_resume_answer_a_bulk_response(api, clock):
    a, b = unique("a"), unique("b")
    for n in (a, b):
        api.ok(api.post("/scheduler/schedules", schedule(n)))
    out = api.ok(api.put("/scheduler/bulk/pause", [a, b, "ghost"])).json()
    assert out == {"bulkErrorResults": {"ghost": "Schedule 'ghost' not found"}, "bulkSuccessfulResults": [a, b]}
    assert all(api.ok(api.get(f"/scheduler/schedules/{n}")).json()["paused"] for n in (a, b))
    out = api.ok(api.put("/scheduler/bulk/resume", [a])).json()
    assert out == {"bulkErrorResults": {}, "bulkSuccessfulResults": [a]}
    assert api.post("/scheduler/bulk/pause", [a]).status_code == 405
    assert api.put("/scheduler/bulk/pause", {"names": [a]}).status_code == 400


def test_next_few_schedules_in_the_server_zone_capped_at_five(api, clock):
    got = api.ok(api.get("/scheduler/nextFewSchedules", {"cronExpression": "0 0 * * * *", "limit": 10})).json()
    assert got == [FRIDAY_NOON_UTC + h * 3600_000 for h in range(1, 6)]
    got = api.ok(api.get("/scheduler/nextFewSchedules", {
        "cronExpression": "0 0 * * * *", "scheduleStartTime": FRIDAY_NOON_UTC + 10 * 3600_000,
        "scheduleEndTime": FRIDAY_NOON_UTC + 12 * 3600_000})).json()
    assert got == [FRIDAY_NOON_UTC + h * 3600_000 for h in (10, 11, 12)]
    bad = api.get("/scheduler/nextFewSchedules", {"cronExpression": "* * *"})
    assert bad.status_code == 400 and "Invalid cron expression" in bad.json()["message"]
    assert api.get("/scheduler/nextFewSchedules").status_code == 400
    far = api.get("/scheduler/nextFewSchedules", {"cronExpression": "0 0 9 * * *", "scheduleStartTime": 10**15})
    assert far.status_code == 400 and far.json()["validationErrors"][0]["path"] == "scheduleStartTime"


def test_search_schedules(api, clock):
    names = [unique("search_me"), unique("search_me"), unique("other")]
    for n in names:
        api.ok(api.post("/scheduler/schedules", schedule(n)))
    api.ok(api.put(f"/scheduler/schedules/{names[1]}/pause"))
    found = api.ok(api.get("/scheduler/schedules/search", {"scheduleName": "SEARCH_ME", "paused": "false"})).json()
    assert found["totalHits"] == 1 and [s["name"] for s in found["results"]] == [names[0]]
    page = api.ok(api.get("/scheduler/schedules/search", {"size": 2, "sort": "name:DESC"})).json()
    assert page["totalHits"] == 3
    assert [s["name"] for s in page["results"]] == sorted(names, reverse=True)[:2]
    assert api.get("/scheduler/schedules/search", {"sort": "color"}).status_code == 400


def test_tags(api, clock):
    name = unique("sched")
    api.ok(api.post("/scheduler/schedules", schedule(name)))
    api.ok(api.put(f"/scheduler/schedules/{name}/tags", [{"key": "team", "value": "ops"}]))
    assert api.ok(api.get(f"/scheduler/schedules/{name}/tags")).json() == [{"key": "team", "value": "ops"}]
    api.ok(api.post("/scheduler/schedules", schedule(name)))  # a save without tags keeps them
    api.ok(api.delete(f"/scheduler/schedules/{name}/tags", [{"key": "team", "value": "ops"}]))
    assert api.ok(api.get(f"/scheduler/schedules/{name}/tags")).json() == []


def test_admin_switch_and_requeue(api):
    assert api.ok(api.get("/scheduler/admin/pause")).json() == {"status": "done"}
    assert api.ok(api.get("/scheduler/admin/resume")).json() == {"status": "done"}
    assert api.ok(api.get("/scheduler/admin/requeue")).json() == {"recordIds.size": 0, "sampleIds": []}
