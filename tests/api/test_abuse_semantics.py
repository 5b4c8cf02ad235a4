"""Input that is well-formed JSON but means nothing Conductor would run (issue #10): each is
a 400 naming the field at the time it is given, instead of being accepted and failing (or
misbehaving) later."""
from __future__ import annotations

import json

import pytest

from apps.engine.models import TaskExecution
from apps.metadata.models import EventHandler, WorkflowDef
from apps.scheduler.models import WorkflowSchedule
from tests.factories import Api, unique, workflow_def

pytestmark = pytest.mark.django_db


def error(resp, field=None):
    body = Api.refused(resp)
    if field:
        assert field in json.dumps(body), body
    return body


@pytest.mark.parametrize("mock,field", [({"status": "BOGUS"}, "status"), ({"status": 5}, "status"),
                                        ({"output": [1]}, "output"), ({"executionTime": "soon"}, "executionTime"),
                                        ({"queueWaitTime": -1}, "queueWaitTime")])
def test_workflow_test_mock_must_be_a_task_result(api, flow, mock, field):
    name, _ = flow
    body = error(api.post("/workflow/test", {"name": name, "taskRefToMockOutput": {"t1": [mock]}}), field)
    assert body["validationErrors"][0]["path"] == f"taskRefToMockOutput.t1[0].{field}"


def test_workflow_test_accepts_every_task_result_status(api, flow):
    name, _ = flow
    for status in ("COMPLETED", "FAILED", "FAILED_WITH_TERMINAL_ERROR"):
        out = api.ok(api.post("/workflow/test", {"name": name, "taskRefToMockOutput": {"t1": [{"status": status}]}}))
        assert out.json()["tasks"][0]["status"] == status


def wait_def(name, **params):
    return workflow_def(name, [{"name": "w", "taskReferenceName": "w", "type": "WAIT", "inputParameters": params}])


@pytest.mark.parametrize("params", [{"duration": "bogus"}, {"duration": "10 parsecs"}, {"duration": "1h 30"},
                                    {"until": "tomorrow"}, {"until": "2030-13-45 10:00"},
                                    {"until": "2030-01-01 10:00 Not/AZone"}, {"duration": {"s": 1}},
                                    {"wait_until": "soon"}])
def test_wait_constants_that_cannot_parse_are_refused(api, params):
    name = unique("sem_wait")
    body = error(api.post("/metadata/workflow", wait_def(name, **params)))
    key = next(iter(params))
    assert any(e["path"].endswith(f"inputParameters.{key}") for e in body["validationErrors"]), body
    assert not WorkflowDef.objects.filter(name=name).exists()


@pytest.mark.parametrize("until_key", ["until", "wait_until"])
def test_wait_with_both_duration_and_until_is_refused(api, until_key):
    name = unique("sem_wait")
    body = error(api.post("/metadata/workflow", wait_def(name, duration="10s", **{until_key: "2030-01-01 10:00"})))
    assert any("Both 'duration' and 'until'" in e["message"] for e in body["validationErrors"]), body
    assert not WorkflowDef.objects.filter(name=name).exists()


@pytest.mark.parametrize("params", [{"duration": "1h 30m"}, {"duration": "10s"}, {"duration": "2 days"},
                                    {"duration": "${workflow.input.d}"}, {"until": "2030-01-01 10:00"},
                                    {"until": "2030-01-01 10:00 Europe/Paris"}, {"until": "2030-01-01 10:00 UTC"},
                                    {"until": "${workflow.input.u}"}, {"wait_until": "2030-01-01 10:00 UTC"}, {}])
def test_wait_constants_of_conductor_formats_are_accepted(api, params):
    api.register_workflow(wait_def(unique("sem_wait"), **params))


def test_a_wait_failed_with_terminal_error_names_the_workflow_status(api):
    """The tester expected FAILED_WITH_TERMINAL_ERROR in the workflow's reason; Conductor's
    DeciderService.retry writes the workflow status there (CANCELED -> TERMINATED,
    TIMED_OUT -> TIMED_OUT, anything else FAILED): this pins its wording."""
    name = unique("sem_wait")
    api.register_workflow(wait_def(name))
    wid = api.start(name)
    task_id = api.workflow(wid)["tasks"][0]["taskId"]
    api.ok(api.post("/tasks", {"workflowInstanceId": wid, "taskId": task_id, "status": "FAILED_WITH_TERMINAL_ERROR",
                               "reasonForIncompletion": "no way"}))
    wf = api.workflow(wid)
    assert wf["tasks"][0]["status"] == "FAILED_WITH_TERMINAL_ERROR"
    assert (wf["status"], wf["reasonForIncompletion"]) == (
        "FAILED", f"Task {task_id} failed with status: FAILED and reason: 'no way'")


def test_an_unknown_zone_at_run_time_fails_the_task_with_a_reason(api):
    name = unique("sem_wait")
    api.register_workflow(wait_def(name, until="${workflow.input.u}"))
    wid = api.start(name, {"u": "2030-01-01 10:00 Not/AZone"})
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED", wf
    assert "Invalid/Unsupported Wait Until format" in wf["tasks"][0]["reasonForIncompletion"]


@pytest.mark.parametrize("body", [[], [1], 0, "x"])
def test_rerun_body_must_be_an_object(api, flow, body):
    name, _ = flow
    wid = api.start(name)
    api.ok(api.delete(f"/workflow/{wid}"))
    error(api.post(f"/workflow/{wid}/rerun", body), "RerunWorkflowRequest")
    assert api.workflow(wid)["status"] == "TERMINATED"


def test_workflow_test_mocks_must_be_a_map(api, flow):
    name, _ = flow
    error(api.post("/workflow/test", {"name": name, "taskRefToMockOutput": []}), "taskRefToMockOutput")


def test_workflow_test_mocks_must_name_tasks_of_the_definition(api, flow):
    """A mock for a reference the workflow does not have was never used, silently."""
    name, _ = flow
    body = error(api.post("/workflow/test", {"name": name, "taskRefToMockOutput": {
        "t1": [{"status": "COMPLETED"}], "nope": [{"status": "COMPLETED"}], "t9__2": [{}]}}))
    assert [e["path"] for e in body["validationErrors"]] == ["taskRefToMockOutput.nope", "taskRefToMockOutput.t9__2"]
    # a loop iteration's runtime reference (ref__N) names its task
    api.ok(api.post("/workflow/test", {"name": name, "taskRefToMockOutput": {"t1__1": [{}]}}))


@pytest.mark.parametrize("raw", ["null", ""])
def test_rerun_needs_a_body(api, flow, raw):
    """Conductor's RerunWorkflowRequest is a required @RequestBody: none, or null, is no
    request (it was taken as an empty one and reran the workflow from the start)."""
    name, _ = flow
    wid = api.start(name)
    api.ok(api.delete(f"/workflow/{wid}"))
    error(api.post(f"/workflow/{wid}/rerun", raw=raw), "RerunWorkflowRequest")
    assert api.workflow(wid)["status"] == "TERMINATED"


@pytest.mark.parametrize("field,value", [("taskInput", "x"), ("taskInput", [1, 2]), ("workflowInput", []),
                                         ("workflowInput", 1), ("correlationId", {"a": 1})])
def test_rerun_fields_are_checked_by_the_engine(api, flow, field, value):
    """Every caller of the rerun (the UI, the CLI, event actions) meets the API's rule."""
    from apps.core.errors import InvalidInput
    from apps.engine import recovery

    name, _ = flow
    wid = api.start(name)
    api.ok(api.delete(f"/workflow/{wid}"))
    task_id = api.workflow(wid)["tasks"][0]["taskId"]
    kwargs = {"taskInput": "task_input", "workflowInput": "workflow_input", "correlationId": "correlation_id"}
    with pytest.raises(InvalidInput) as raised:
        recovery.workflow_rerun(workflow_id=wid, rerun_from_task_id=task_id, **{kwargs[field]: value})
    assert raised.value.status == 400
    assert [e["path"] for e in raised.value.validation_errors] == [field]
    assert api.workflow(wid)["status"] == "TERMINATED"


@pytest.mark.parametrize("field,value", [("taskInput", "x"), ("taskInput", [1, 2]), ("workflowInput", []),
                                         ("workflowInput", 1), ("correlationId", {"a": 1})])
def test_rerun_inputs_must_be_objects(api, flow, field, value):
    """A list or text as taskInput reached the worker as the task's inputData (or failed a
    WAIT with a 500); as workflowInput it became the execution's input."""
    name, _ = flow
    wid = api.start(name)
    api.ok(api.delete(f"/workflow/{wid}"))
    task_id = api.workflow(wid)["tasks"][0]["taskId"]
    body = error(api.post(f"/workflow/{wid}/rerun", {"reRunFromTaskId": task_id, field: value}))
    assert [e["path"] for e in body["validationErrors"]] == [field], body
    assert api.workflow(wid)["status"] == "TERMINATED"


@pytest.mark.parametrize("count", [-1, 0])
def test_batch_poll_count_below_one(api, flow, count):
    name, task = flow
    api.start(name)
    error(api.get(f"/tasks/poll/batch/{task}", {"count": count, "workerid": "w"}), "count")
    assert list(TaskExecution.objects.filter(task_def_name=task).values_list("status", flat=True)) == ["SCHEDULED"]


@pytest.mark.parametrize("condition", ["$.a ==", "function (", "$.a === 'x"])
def test_event_handler_condition_must_parse(api, condition):
    handler = {"name": unique("sem_eh"), "event": "conductor:x:y", "condition": condition, "active": True,
               "actions": [{"action": "start_workflow", "start_workflow": {"name": "x"}}]}
    body = error(api.post("/event", handler), "condition")
    assert not EventHandler.objects.filter(name=handler["name"]).exists()
    error(api.put("/event", handler), "condition")
    assert "condition" in body["validationErrors"][0]["path"]


def test_event_handler_conditions_that_parse_are_accepted(api):
    for condition, evaluator in (("$.a == 1", None), ("$.a > 0 && $.b != 'x'", "javascript"),
                                 ("not a script", "value-param")):
        handler = {"name": unique("sem_eh"), "event": "conductor:x:y", "condition": condition, "active": True,
                   "actions": [{"action": "start_workflow", "start_workflow": {"name": "x"}}]}
        if evaluator:
            handler["evaluatorType"] = evaluator
        api.ok(api.post("/event", handler))


@pytest.mark.parametrize("expression", ["0 0 0 30 2 *", "0 0 0 31 4 *", "0 0 0 31 2,4,6 *"])
def test_a_schedule_that_never_fires_is_refused(api, flow, expression):
    name, _ = flow
    schedule = {"name": unique("sem_sched"), "cronExpression": expression, "startWorkflowRequest": {"name": name}}
    body = error(api.post("/scheduler/schedules", schedule), "cronExpression")
    assert "never" in body["message"]
    assert not WorkflowSchedule.objects.filter(name=schedule["name"]).exists()
    # a leap day fires (every four years); the preview of a never-firing one is empty
    api.ok(api.post("/scheduler/schedules", {**schedule, "cronExpression": "0 0 0 29 2 *"}))
    assert api.ok(api.get("/scheduler/nextFewSchedules", {"cronExpression": expression})).json() == []
