"""Signals (``POST /tasks/{workflowId}/{status}/signal`` and ``.../signal/sync``) and the
SignalResponse of ``POST /workflow/execute/...`` with ``returnStrategy`` and
``signalTimeout``. Sources: TaskResource.signalWorkflowTaskAsync/Sync,
TaskServiceImpl.signalTask, WorkflowSignalResponder, NotificationResult."""
from __future__ import annotations

import uuid

import pytest

from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db


def wait_task(ref: str, **extra) -> dict:
    return {"name": ref, "taskReferenceName": ref, "type": "WAIT", "inputParameters": extra}


def tasks_of(body: dict) -> dict[str, dict]:
    return {t["referenceTaskName"]: t for t in body["tasks"]}


def error(resp, status: int) -> dict:
    assert resp.status_code == status, (resp.status_code, resp.content)
    body = resp.json()
    assert body["status"] == status
    return body


@pytest.fixture
def two_waits(api):
    """``first`` (WAIT, input ``{"step": 1}``) -> ``second`` (WAIT) -> end; the output
    copies both WAITs' outputs."""
    name = unique("approval")
    api.register_workflow(workflow_def(name, [wait_task("first", step=1), wait_task("second", step=2)],
                                       outputParameters={"first": "${first.output}", "second": "${second.output}"}))
    return name


@pytest.fixture
def nested(api):
    """A parent whose SUB_WORKFLOW ``child`` runs a workflow that waits in ``gate``
    (input ``{"order": <parent input order>}``)."""
    child = unique("child")
    api.register_workflow(workflow_def(child, [wait_task("gate", order="${workflow.input.order}")],
                                       outputParameters={"decision": "${gate.output.decision}"}))
    parent = unique("parent")
    api.register_workflow(workflow_def(parent, [
        {"name": child, "taskReferenceName": "child", "type": "SUB_WORKFLOW",
         "subWorkflowParam": {"name": child, "version": 1}, "inputParameters": {"order": "${workflow.input.order}"}},
    ], outputParameters={"decision": "${child.output.decision}"}))
    return parent


def execute(api, name: str, input: dict, **params):
    params.setdefault("requestId", "req-1")
    return api.ok(api.post(f"/workflow/execute/{name}/1", {"name": name, "input": input}, params=params)).json()


# --- signal (asynchronous) ------------------------------------------------------------------------

def test_signal_completes_the_blocked_wait_and_answers_an_empty_200(api, two_waits):
    workflow_id = api.start(two_waits)
    resp = api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal", {"approved": True}))
    assert resp.content == b""
    tasks = tasks_of(api.workflow(workflow_id))
    assert tasks["first"]["status"] == "COMPLETED"
    assert tasks["first"]["outputData"] == {"approved": True}
    assert tasks["second"]["status"] == "IN_PROGRESS"

    api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal", {"approved": False}))
    wf = api.workflow(workflow_id)
    assert wf["status"] == "COMPLETED"
    assert wf["output"] == {"first": {"approved": True}, "second": {"approved": False}}


def test_signal_failed_fails_the_wait_and_the_workflow(api, two_waits):
    workflow_id = api.start(two_waits)
    api.ok(api.post(f"/tasks/{workflow_id}/FAILED/signal", {"reason": "over the limit"}))
    wf = api.workflow(workflow_id)
    assert tasks_of(wf)["first"]["status"] == "FAILED"
    assert "second" not in tasks_of(wf)
    assert wf["status"] == "FAILED"


@pytest.mark.django_db(transaction=True)  # the parent is decided after the child's commit
def test_signal_reaches_a_wait_inside_a_running_sub_workflow(api, nested):
    parent_id = api.start(nested, {"order": "o-7"})
    api.ok(api.post(f"/tasks/{parent_id}/COMPLETED/signal", {"decision": "ship"}))
    parent = api.workflow(parent_id)
    assert parent["status"] == "COMPLETED"
    assert parent["output"] == {"decision": "ship"}


def test_signal_with_nothing_blocked_is_an_empty_200_and_changes_nothing(api):
    worker = unique("work")
    api.register_task_defs(task_def(worker))
    name = unique("busy")
    api.register_workflow(workflow_def(name, [simple_task(worker, "work")]))
    workflow_id = api.start(name)
    resp = api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal", {"x": 1}))
    assert resp.content == b""
    assert tasks_of(api.workflow(workflow_id))["work"]["status"] == "SCHEDULED"


def test_signal_path_is_not_taken_for_an_update_by_reference(api):
    """``/tasks/{wf}/COMPLETED/signal`` must reach the signal, not update a task whose
    reference is ``COMPLETED`` with status ``signal``."""
    name = unique("routing")
    api.register_workflow(workflow_def(name, [wait_task("COMPLETED")]))
    workflow_id = api.start(name)
    api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal", {"via": "signal"}))
    task = tasks_of(api.workflow(workflow_id))["COMPLETED"]
    assert task["status"] == "COMPLETED" and task["outputData"] == {"via": "signal"}


def test_signal_errors(api, two_waits):
    workflow_id = api.start(two_waits)
    body = error(api.post(f"/tasks/{workflow_id}/DONE/signal", {}), 400)
    assert "DONE" in body["message"]
    error(api.post(f"/tasks/{workflow_id}/COMPLETED/signal", raw="[1, 2]"), 400)
    error(api.post(f"/tasks/{uuid.uuid4()}/COMPLETED/signal", {}), 404)
    body = error(api.post(f"/tasks/{workflow_id}/COMPLETED/signal/sync", {}, params={"returnStrategy": "ALL"}), 400)
    assert "returnStrategy" in body["message"]
    # nothing was written by the refused calls
    assert tasks_of(api.workflow(workflow_id))["first"]["status"] == "IN_PROGRESS"


# --- signal/sync ------------------------------------------------------------------------------------

def test_signal_sync_answers_the_target_workflow_blocked_again(api, two_waits):
    workflow_id = api.start(two_waits, correlationId="c-9")
    body = api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal/sync", {"ok": 1})).json()
    assert body["responseType"] == "TARGET_WORKFLOW"
    assert body["workflowId"] == body["targetWorkflowId"] == workflow_id
    assert body["status"] == body["targetWorkflowStatus"] == "RUNNING"
    assert body["signalTimeout"] is False
    assert body["correlationId"] == "c-9"
    uuid.UUID(body["requestId"])
    tasks = tasks_of(body)
    assert tasks["first"]["status"] == "COMPLETED" and tasks["first"]["outputData"] == {"ok": 1}
    assert tasks["second"]["status"] == "IN_PROGRESS"

    body = api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal/sync", {"ok": 2})).json()
    assert body["status"] == "COMPLETED" and body["signalTimeout"] is False
    assert body["output"] == {"first": {"ok": 1}, "second": {"ok": 2}}


def test_signal_sync_blocking_task_and_its_input(api, two_waits):
    workflow_id = api.start(two_waits)
    body = api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal/sync", {},
                           params={"returnStrategy": "BLOCKING_TASK"})).json()
    assert body["responseType"] == "BLOCKING_TASK"
    assert body["targetWorkflowId"] == body["workflowId"] == workflow_id
    assert body["referenceTaskName"] == "second" and body["taskType"] == "WAIT"
    assert body["status"] == "IN_PROGRESS"
    assert body["input"] == {"step": 2}
    second_id = tasks_of(api.workflow(workflow_id))["second"]["taskId"]
    assert body["taskId"] == second_id


def test_signal_sync_with_nothing_blocked_is_404(api, two_waits):
    workflow_id = api.start(two_waits)
    api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal", {}))
    api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal", {}))
    body = error(api.post(f"/tasks/{workflow_id}/COMPLETED/signal/sync", {}), 404)
    assert body["message"] == f"Found no blocked task in workflow {workflow_id} to signal"


def test_signal_sync_times_out_on_a_worker_task(api):
    worker = unique("after")
    api.register_task_defs(task_def(worker))
    name = unique("then_work")
    api.register_workflow(workflow_def(name, [wait_task("gate"), simple_task(worker, "work")]))
    workflow_id = api.start(name)
    body = api.ok(api.post(f"/tasks/{workflow_id}/COMPLETED/signal/sync", {},
                           params={"timeoutMillis": 300})).json()
    assert body["signalTimeout"] is True
    assert body["status"] == "RUNNING"
    assert tasks_of(body)["work"]["status"] == "SCHEDULED"


# --- execute with returnStrategy / signalTimeout ----------------------------------------------------

@pytest.mark.django_db(transaction=True)  # evaluations run after the service's commit
def test_execute_signal_timeout_false_when_finished_or_blocked_true_when_time_ran_out(api, two_waits):
    inline = unique("calc")
    api.register_workflow(workflow_def(inline, [{
        "name": "double", "taskReferenceName": "double", "type": "INLINE",
        "inputParameters": {"evaluatorType": "javascript", "expression": "$.n * 2", "n": "${workflow.input.n}"}}],
        outputParameters={"doubled": "${double.output.result}"}))
    done = execute(api, inline, {"n": 21})
    assert (done["status"], done["signalTimeout"], done["output"]) == ("COMPLETED", False, {"doubled": 42})
    assert done["requestId"] == "req-1" and done["responseType"] == "TARGET_WORKFLOW"

    blocked = execute(api, two_waits, {}, waitForSeconds=5)
    assert (blocked["status"], blocked["signalTimeout"]) == ("RUNNING", False)

    worker = unique("slow")
    api.register_task_defs(task_def(worker))
    slow = unique("slow_wf")
    api.register_workflow(workflow_def(slow, [simple_task(worker, "work")]))
    timed_out = execute(api, slow, {}, waitForSeconds=1)
    assert (timed_out["status"], timed_out["signalTimeout"]) == ("RUNNING", True)


def test_execute_without_request_id_gets_a_uuid(api, two_waits):
    body = api.ok(api.post(f"/workflow/execute/{two_waits}/1", {"name": two_waits, "input": {}})).json()
    uuid.UUID(body["requestId"])


@pytest.mark.django_db(transaction=True)  # the parent is decided after the child's commit
def test_execute_return_strategies_through_a_sub_workflow(api, nested):
    target = execute(api, nested, {"order": "o-1"})
    assert target["responseType"] == "TARGET_WORKFLOW" and target["status"] == "RUNNING"
    parent_id = target["workflowId"]
    child_id = tasks_of(target)["child"]["subWorkflowId"]

    blocking_wf = execute(api, nested, {"order": "o-2"}, returnStrategy="BLOCKING_WORKFLOW")
    assert blocking_wf["responseType"] == "BLOCKING_WORKFLOW"
    assert blocking_wf["workflowId"] != blocking_wf["targetWorkflowId"]
    assert blocking_wf["input"] == {"order": "o-2"}
    assert list(tasks_of(blocking_wf)) == ["gate"]
    assert blocking_wf["targetWorkflowStatus"] == "RUNNING"

    task_input = execute(api, nested, {"order": "o-3"}, returnStrategy="BLOCKING_TASK_INPUT")
    assert task_input["responseType"] == "BLOCKING_TASK_INPUT"
    assert task_input["input"] == {"order": "o-3"}
    assert task_input["referenceTaskName"] == "gate" and task_input["taskType"] == "WAIT"
    assert task_input["workflowId"] != task_input["targetWorkflowId"]

    # the signal on the parent reaches the child's WAIT; BLOCKING_WORKFLOW after the
    # run ended shows the target workflow (nothing blocks any more)
    body = api.ok(api.post(f"/tasks/{parent_id}/COMPLETED/signal/sync", {"decision": "ship"},
                           params={"returnStrategy": "BLOCKING_WORKFLOW"})).json()
    assert body["workflowId"] == parent_id and body["status"] == "COMPLETED"
    assert body["output"] == {"decision": "ship"}
    assert api.workflow(child_id)["status"] == "COMPLETED"


@pytest.mark.django_db(transaction=True)  # evaluations run after the service's commit
def test_execute_wait_until_task_ref_settles_on_an_ended_task(api):
    worker = unique("w")
    api.register_task_defs(task_def(worker))
    name = unique("refs")
    api.register_workflow(workflow_def(name, [
        {"name": "calc", "taskReferenceName": "calc", "type": "INLINE",
         "inputParameters": {"evaluatorType": "javascript", "expression": "1"}},
        simple_task(worker, "work")]))
    body = execute(api, name, {}, waitUntilTaskRef="calc", waitForSeconds=5,
                   returnStrategy="BLOCKING_TASK")
    assert body["responseType"] == "BLOCKING_TASK" and body["signalTimeout"] is False
    assert body["referenceTaskName"] == "calc" and body["status"] == "COMPLETED"


@pytest.mark.django_db(transaction=True)  # the parent is decided after the child's commit
def test_an_inline_sub_workflow_resolves_its_own_expressions(api):
    """An inline ``workflowDefinition`` (what the SDKs' inline sub-workflows send) keeps
    its ``${workflow.input...}`` for the child: Conductor resolves only a String one."""
    child = workflow_def(unique("inline_child"), [wait_task("gate", order="${workflow.input.order}")],
                         outputParameters={"decision": "${gate.output.decision}"})
    parent = unique("inline_parent")
    api.register_workflow(workflow_def(parent, [
        {"name": "child", "taskReferenceName": "child", "type": "SUB_WORKFLOW",
         "subWorkflowParam": {"name": child["name"], "version": 1, "workflowDefinition": child},
         "inputParameters": {"order": "${workflow.input.order}"}}],
        outputParameters={"decision": "${child.output.decision}"}))
    run = execute(api, parent, {"order": "o-9"}, returnStrategy="BLOCKING_TASK_INPUT")
    assert run["input"] == {"order": "o-9"}
    api.ok(api.post(f"/tasks/{run['targetWorkflowId']}/COMPLETED/signal", {"decision": "keep"}))
    assert api.workflow(run["targetWorkflowId"])["output"] == {"decision": "keep"}
