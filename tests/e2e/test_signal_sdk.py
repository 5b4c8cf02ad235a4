"""Signals and ``execute`` with a return strategy through the Python SDK against a real
server: ``WorkflowExecutor.signal`` / ``signal_async`` / ``execute_workflow_with_return_strategy``
(conductor-python 2.0.0). The workflow is built with the SDK's ``ConductorWorkflow``: a
parent whose sub-workflow waits for an approval, then a WAIT in the parent itself."""
import uuid

import pytest
from conductor.client.http.models.start_workflow_request import StartWorkflowRequest
from conductor.client.orkes_clients import OrkesClients
from conductor.client.workflow.conductor_workflow import ConductorWorkflow
from conductor.client.workflow.task.sub_workflow_task import InlineSubWorkflowTask
from conductor.client.workflow.task.wait_task import WaitTask

from tests.e2e.sdk_helpers import tasks_by_ref, wait_for_workflow

pytestmark = pytest.mark.e2e


def build(executor, suffix: str) -> str:
    """``approval_<suffix>``: an inline sub-workflow that WAITs in ``approve`` (input
    ``order``), then a WAIT ``confirm`` in the parent; the output carries both outputs."""
    name = f"approval_{suffix}"
    child = ConductorWorkflow(executor=executor, name=f"{name}_child", version=1)
    approve = WaitTask(task_ref_name="approve")
    approve.input_parameters.update({"order": "${workflow.input.order}"})
    child >> approve
    child.output_parameters({"approved": "${approve.output.approved}"})
    sub = InlineSubWorkflowTask(task_ref_name="child", workflow=child)
    sub.input_parameters.update({"order": "${workflow.input.order}"})
    parent = ConductorWorkflow(executor=executor, name=name, version=1)
    parent >> sub >> WaitTask(task_ref_name="confirm")
    parent.output_parameters({"approved": "${child.output.approved}", "confirmed": "${confirm.output.by}"})
    parent.register(overwrite=True)
    return name


def test_signals_with_the_python_sdk(sdk_config):
    executor = OrkesClients(configuration=sdk_config).get_workflow_executor()
    name = build(executor, uuid.uuid4().hex[:8])

    request = StartWorkflowRequest(name=name, version=1, input={"order": "o-1"})
    run = executor.execute_workflow_with_return_strategy(request, wait_for_seconds=10,
                                                         return_strategy="BLOCKING_TASK_INPUT")
    assert run.is_blocking_task_input(), run
    assert run.get_task_input() == {"order": "o-1"}
    assert run.reference_task_name == "approve" and run.task_type == "WAIT"
    parent_id = run.target_workflow_id
    assert run.workflow_id != parent_id  # the WAIT is in the sub-workflow

    # signal on the parent: the sub-workflow's WAIT completes, the parent blocks on ``confirm``
    answer = executor.signal(parent_id, "COMPLETED", {"approved": True}, return_strategy="BLOCKING_WORKFLOW")
    assert answer.is_blocking_workflow(), answer
    assert answer.workflow_id == answer.target_workflow_id == parent_id
    assert answer.status == "RUNNING"
    assert answer.get_task_by_reference_name("confirm")["status"] == "IN_PROGRESS"

    executor.signal_async(parent_id, "COMPLETED", {"by": "ops"})
    wf = wait_for_workflow(executor, sdk_config, parent_id, timeout=30)
    assert wf.status == "COMPLETED"
    assert wf.output == {"approved": True, "confirmed": "ops"}
    confirm = tasks_by_ref(wf.tasks)["confirm"][0]
    assert confirm.output_data == {"by": "ops"}
