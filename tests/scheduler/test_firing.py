"""Firing on the engine's clock: once per slot, Conductor's input fields, missed slots
skipped unless catch-up, failed starts recorded, pause and bounds honoured."""
from __future__ import annotations

import threading

import pytest

from apps.engine.models import WorkflowExecution
from apps.scheduler import firing
from apps.scheduler.models import ScheduleExecution
from tests.factories import simple_task, task_def, unique, workflow_def
from tests.scheduler.conftest import FRIDAY_NOON_UTC as T0


def register(api) -> str:
    name = unique("scheduled_wf")
    api.register_task_defs(task_def(f"{name}_task"))
    api.register_workflow(workflow_def(name, [simple_task(f"{name}_task")]))
    return name


def save(api, workflow: str, cron: str = "*/2 * * * * *", **extra) -> str:
    name = extra.pop("name", None) or unique("every_2s")
    body = {"name": name, "cronExpression": cron,
            "startWorkflowRequest": {"name": workflow, "input": {"region": "eu"}, "correlationId": "nightly"}}
    body.update(extra)
    api.ok(api.post("/scheduler/schedules", body))
    return name


def records(name: str) -> list[ScheduleExecution]:
    return list(ScheduleExecution.objects.filter(schedule_name=name).order_by("scheduled_time"))


@pytest.mark.django_db
def test_a_slot_fires_once_with_conductors_input_fields(api, clock):
    wf = register(api)
    name = save(api, wf)
    assert firing.fire_due() == 0
    clock.advance(1.999)
    assert firing.fire_due() == 0
    clock.advance(ms=1)
    assert firing.fire_due() == 1
    assert firing.fire_due() == 0  # the same slot never fires twice
    [run] = records(name)
    assert (run.state, run.scheduled_time, run.execution_time) == ("EXECUTED", T0 + 2000, T0 + 2000)
    execution = api.workflow(run.workflow_id)
    assert execution["status"] == "RUNNING" and execution["correlationId"] == "nightly"
    assert execution["input"] == {"region": "eu", "_startedByScheduler": name, "_scheduledTime": T0 + 2000,
                                  "_executedTime": T0 + 2000, "_executionId": run.execution_id,
                                  "_schedulerCron": "*/2 * * * * * UTC"}
    assert api.ok(api.get(f"/scheduler/schedules/{name}")).json()["nextRunTime"] == T0 + 4000
    clock.advance(2)
    assert firing.fire_due() == 1
    assert [r.scheduled_time for r in records(name)] == [T0 + 2000, T0 + 4000]


@pytest.mark.django_db
def test_missed_slots_are_skipped_without_catch_up(api, clock):
    name = save(api, register(api))
    clock.advance(60.5)
    assert firing.fire_due() == 1 and firing.fire_due() == 0
    assert [r.scheduled_time for r in records(name)] == [T0 + 2000]  # the pending slot, late, once
    assert api.ok(api.get(f"/scheduler/schedules/{name}")).json()["nextRunTime"] == T0 + 62_000


@pytest.mark.django_db
def test_catch_up_replays_every_missed_slot(api, clock):
    name = save(api, register(api), runCatchupScheduleInstances=True)
    clock.advance(10)
    for _ in range(10):
        firing.fire_due()
    assert [r.scheduled_time for r in records(name)] == [T0 + s * 1000 for s in (2, 4, 6, 8, 10)]
    assert len({r.workflow_id for r in records(name)}) == 5


@pytest.mark.django_db
def test_a_failed_start_is_recorded_with_its_reason(api, clock):
    name = save(api, "not_registered_workflow")
    clock.advance(2)
    assert firing.fire_due() == 1
    [run] = records(name)
    assert run.state == "FAILED" and run.workflow_id is None
    assert run.reason == "No such workflow defined. name=not_registered_workflow, version=null"
    assert not WorkflowExecution.objects.filter(workflow_name="not_registered_workflow").exists()
    clock.advance(2)
    assert firing.fire_due() == 1  # the schedule goes on


@pytest.mark.django_db
def test_paused_schedules_and_the_server_switch_stop_firing(api, clock):
    name = save(api, register(api))
    api.ok(api.put(f"/scheduler/schedules/{name}/pause"))
    clock.advance(10)
    assert firing.fire_due() == 0
    api.ok(api.put(f"/scheduler/schedules/{name}/resume"))
    api.ok(api.get("/scheduler/admin/pause"))
    clock.advance(10)
    assert firing.fire_due() == 0
    api.ok(api.get("/scheduler/admin/resume"))
    assert firing.fire_due() == 1
    assert len(records(name)) == 1


@pytest.mark.django_db
def test_start_and_end_bounds(api, clock):
    name = save(api, register(api), scheduleStartTime=T0 + 10_000, scheduleEndTime=T0 + 14_000)
    assert api.ok(api.get(f"/scheduler/schedules/{name}")).json()["nextRunTime"] == T0 + 10_000
    for _ in range(20):
        clock.advance(1)
        firing.fire_due()
    assert [r.scheduled_time for r in records(name)] == [T0 + 10_000, T0 + 12_000, T0 + 14_000]
    assert "nextRunTime" not in api.ok(api.get(f"/scheduler/schedules/{name}")).json()


@pytest.mark.django_db
def test_search_executions_with_conductors_query_syntax(api, clock):
    wf = register(api)
    good, bad = save(api, wf), save(api, "missing_wf")
    clock.advance(2)
    firing.fire_due()
    clock.advance(2)
    firing.fire_due()
    found = api.ok(api.get("/scheduler/search/executions", {"query": f"scheduleName IN ({good},{bad}) AND state IN (FAILED)"})).json()
    assert found["totalHits"] == 2 and {r["scheduleName"] for r in found["results"]} == {bad}
    assert all(r["state"] == "FAILED" and r["reason"] for r in found["results"])
    found = api.ok(api.get("/scheduler/search/executions", {"query": f"scheduleName IN ({good}) AND scheduledTime>{T0 + 2000}"})).json()
    assert [r["scheduledTime"] for r in found["results"]] == [T0 + 4000]
    newest_first = api.ok(api.get("/scheduler/search/executions", {"freeText": good})).json()["results"]
    assert [r["scheduledTime"] for r in newest_first] == [T0 + 4000, T0 + 2000]
    assert newest_first[0]["workflowName"] == wf and newest_first[0]["startWorkflowRequest"]["name"] == wf
    asc = api.ok(api.get("/scheduler/search/executions", {"freeText": good, "sort": "scheduledTime:ASC", "size": 1})).json()
    assert asc["totalHits"] == 2 and [r["scheduledTime"] for r in asc["results"]] == [T0 + 2000]
    assert api.get("/scheduler/search/executions", {"query": "scheduledTime>soon"}).status_code == 400
    # a bare word is a schedule name; anything else malformed is refused as the workflow search does
    assert api.ok(api.get("/scheduler/search/executions", {"query": good})).json()["totalHits"] == 2
    for malformed in ("state = FAILED AND", "scheduleName IN (x", "foo bar baz", "workflowType='x'", "((("):
        resp = api.get("/scheduler/search/executions", {"query": malformed})
        assert resp.status_code == 400, (malformed, resp.content)
        body = resp.json()
        assert body["status"] == 400 and body["message"].startswith("Incorrectly formatted query string"), body


@pytest.mark.django_db(transaction=True)
def test_concurrent_firers_start_each_slot_once(api, clock, monkeypatch):
    """Two firers (as two clusters would) both read the same due slots before either
    claims them: each slot starts exactly one workflow, whichever wins."""
    from django.db import connection

    from apps.scheduler import services

    wf = register(api)
    names = [save(api, wf) for _ in range(3)]
    clock.advance(2)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []
    next_slot = services.next_slot

    def in_step(*args, **kwargs):  # between reading a schedule and claiming its slot
        barrier.wait(timeout=20)
        return next_slot(*args, **kwargs)

    monkeypatch.setattr(services, "next_slot", in_step)

    def firer():
        try:
            firing.fire_due()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=firer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    for name in names:
        assert len(records(name)) == 1
    assert WorkflowExecution.objects.filter(workflow_name=wf).count() == 3
