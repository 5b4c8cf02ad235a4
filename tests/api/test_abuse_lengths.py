"""Strings longer than the column that stores them (issue #10): PostgreSQL answered 500
"value too long" where SQLite stored them. Each is a 400 naming the field on both
databases, checked against the model's own ``max_length`` (``apps.core.fields``), and
writes nothing; exactly the column's length is accepted. A task value known only at run
time (a DYNAMIC task's name, a dynamic fork's references) fails its workflow with a reason.
"""
from __future__ import annotations

import json

import pytest

from apps.core.fields import max_length
from apps.engine.models import PollData, WorkflowExecution
from apps.metadata.models import EventHandler, WorkflowDef
from tests.asgi_client import asgi_request
from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db


def error(resp, field):
    body = Api.refused(resp)
    paths = [e["path"] for e in body.get("validationErrors") or []]
    assert any(p.endswith(field) for p in paths), body
    assert any("at most" in e["message"] for e in body["validationErrors"]), body
    return body


def over(column: str) -> str:
    """A string one character longer than ``"app.Model.field"`` holds."""
    return "x" * (max_length(column) + 1)


def exactly(column: str) -> str:
    return "y" * max_length(column)


@pytest.mark.parametrize("field,column", [("correlationId", "engine.WorkflowExecution.correlation_id"),
                                          ("idempotencyKey", "engine.WorkflowExecution.idempotency_key"),
                                          ("createdBy", "engine.WorkflowExecution.created_by")])
def test_start_request_strings(api, flow, field, column):
    name, _ = flow
    error(api.post("/workflow", {"name": name, field: over(column)}), field)
    assert not WorkflowExecution.objects.filter(workflow_name=name).exists()
    api.start(name, **{field: exactly(column)})


def test_start_by_name_correlation_id_and_domain(api, flow):
    name, task = flow
    error(api.post(f"/workflow/{name}", {}, params={"correlationId": over("engine.WorkflowExecution.correlation_id")}),
          "correlationId")
    error(api.post("/workflow", {"name": name, "taskToDomain": {task: over("engine.TaskExecution.domain")}}),
          f"taskToDomain.{task}")
    assert not WorkflowExecution.objects.filter(workflow_name=name).exists()


def test_rerun_correlation_id(api, flow):
    name, task = flow
    wid = api.start(name)
    api.ok(api.delete(f"/workflow/{wid}"))
    error(api.post(f"/workflow/{wid}/rerun", {"correlationId": over("engine.WorkflowExecution.correlation_id")}),
          "correlationId")
    assert api.workflow(wid)["status"] == "TERMINATED"


@pytest.mark.parametrize("param,column", [("workerid", "engine.PollData.worker_id"), ("domain", "engine.PollData.domain")])
def test_poll_parameters(api, flow, param, column):
    _, task = flow
    for path in (f"/tasks/poll/batch/{task}", f"/tasks/poll/{task}"):
        error(api.get(path, {param: over(column)}), param)
    assert not PollData.objects.filter(queue_name=task).exists()


def test_poll_task_type(api):
    error(api.get(f"/tasks/poll/batch/{over('engine.PollData.queue_name')}"), "taskType")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("param,column", [("workerid", "engine.PollData.worker_id"), ("domain", "engine.PollData.domain")])
def test_poll_parameters_on_the_fast_path(param, column):
    task = unique("len_fast")
    status, out = asgi_request("GET", f"/api/tasks/poll/batch/{task}", None, query=f"{param}={over(column)}")
    assert status == 400, out
    assert json.loads(out)["validationErrors"][0]["path"] == param
    status, out = asgi_request("GET", f"/api/tasks/poll/batch/{over('engine.PollData.queue_name')}", None)
    assert status == 400, out


def test_task_result_worker_id(api, flow):
    name, task = flow
    api.start(name)
    t = api.poll_one(task)
    error(api.update(t, "COMPLETED", workerId=over("engine.TaskExecution.worker_id")), "workerId")
    assert api.task(t["taskId"])["status"] == "IN_PROGRESS"


@pytest.mark.parametrize("field,column", [("name", "metadata.EventHandler.name"),
                                          ("event", "metadata.EventHandler.event")])
def test_event_handler_strings(api, field, column):
    handler = {"name": unique("len_eh"), "event": "conductor:x:y", "active": True,
               "actions": [{"action": "start_workflow", "start_workflow": {"name": "x"}}]}
    error(api.post("/event", {**handler, field: over(column)}), field)
    assert not EventHandler.objects.filter(name=handler["name"]).exists()
    api.ok(api.post("/event", {**handler, field: exactly(column)}))


@pytest.mark.parametrize("field,column", [("taskReferenceName", "engine.TaskExecution.reference_task_name"),
                                          ("name", "engine.TaskExecution.task_def_name"),
                                          ("type", "engine.TaskExecution.task_type")])
def test_workflow_task_strings_are_refused_at_registration(api, field, column):
    """They registered, then every start answered 500 on PostgreSQL."""
    name = unique("len_def")
    task = {"name": "t", "taskReferenceName": "t", "type": "SIMPLE", field: over(column)}
    error(api.post("/metadata/workflow", workflow_def(name, [task])), field)
    assert not WorkflowDef.objects.filter(name=name).exists()
    ok = {**task, field: exactly(column)}
    api.register_workflow(workflow_def(name, [ok]))
    api.start(name)


def test_dynamic_task_name_beyond_its_column_fails_the_workflow(api):
    """A DYNAMIC task's name comes from the input: beyond the column it fails the workflow
    with a reason (no TaskDef can have such a name), never a 500."""
    name = unique("len_dyn")
    api.register_workflow(workflow_def(name, [{
        "name": "dyn", "taskReferenceName": "dyn", "type": "DYNAMIC", "dynamicTaskNameParam": "taskToExecute",
        "inputParameters": {"taskToExecute": "${workflow.input.task}"}}]))
    wid = api.start(name, {"task": over("engine.TaskExecution.task_def_name")})
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED" and wf["reasonForIncompletion"], wf


def fork_flow(api) -> str:
    name = unique("len_fork")
    api.register_workflow(workflow_def(name, [
        {"name": "fork", "taskReferenceName": "fork", "type": "FORK_JOIN_DYNAMIC",
         "dynamicForkTasksParam": "tasks", "dynamicForkTasksInputParamName": "inputs",
         "inputParameters": {"tasks": "${workflow.input.tasks}", "inputs": "${workflow.input.inputs}",
                             "forkTaskName": "${workflow.input.forkTaskName}",
                             "forkTaskInputs": "${workflow.input.forkTaskInputs}"}},
        {"name": "join", "taskReferenceName": "join", "type": "JOIN"}]))
    return name


@pytest.mark.parametrize("field", ["name", "taskReferenceName"])
def test_dynamic_fork_names_beyond_their_column_fail_the_workflow(api, field):
    """Branch names and references come from the input: the workflow FAILS with a reason
    naming the column (a 500 on PostgreSQL before; on SQLite a task stored anyway)."""
    name = fork_flow(api)
    branch = {"name": unique("len_branch"), "taskReferenceName": "b1", "type": "SIMPLE"}
    branch[field] = over("engine.TaskExecution.task_def_name")
    wid = api.start(name, {"tasks": [branch], "inputs": {branch["taskReferenceName"]: {}}})
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED", wf
    column = "task_def_name" if field == "name" else "reference_task_name"
    assert column in wf["reasonForIncompletion"] and "at most 255" in wf["reasonForIncompletion"], wf


def test_dynamic_fork_task_name_of_the_simple_form(api):
    """``forkTaskName`` (255 characters, which fits) makes references ``_<name>_<i>``,
    which do not: the workflow fails with the reason."""
    name = fork_flow(api)
    wid = api.start(name, {"forkTaskName": exactly("engine.TaskExecution.task_def_name"), "forkTaskInputs": [{}]})
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED", wf
    assert "reference_task_name" in wf["reasonForIncompletion"], wf


def test_domain_and_name_together_beyond_the_queue_column_fail_the_workflow(api):
    name = unique("len_q")
    task = "q" * max_length("engine.TaskExecution.task_def_name")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "t1")]))
    wid = api.start(name, taskToDomain={task: "d" * 10})
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED", wf
    assert "queue_name" in wf["reasonForIncompletion"], wf
