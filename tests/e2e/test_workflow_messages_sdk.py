"""The workflow message queue through the Python SDK against a real server (uvicorn and the
cluster, API auth on): a workflow built with ``ConductorWorkflow`` and the SDK's
``PullWorkflowMessagesTask`` loops on its queue; ``WorkflowExecutor.send_message`` (conductor-python
2.0.0, ``POST /api/workflow/{id}/messages``) feeds it; a push to the ended workflow
is refused with 409, and one to an unknown id with 404."""
import uuid

import pytest
from conductor.client.http.rest import ApiException
from conductor.client.orkes_clients import OrkesClients
from conductor.client.workflow.conductor_workflow import ConductorWorkflow
from conductor.client.workflow.task.do_while_task import LoopTask
from conductor.client.workflow.task.pull_workflow_messages_task import PullWorkflowMessagesTask
from conductor.client.workflow.task.set_variable_task import SetVariableTask

from tests.e2e.sdk_helpers import wait_for_workflow

pytestmark = pytest.mark.e2e


def test_send_message_feeds_a_pull_loop(sdk_config):
    executor = OrkesClients(configuration=sdk_config).get_workflow_executor()
    name = f"wmq_loop_{uuid.uuid4().hex[:8]}"
    workflow = ConductorWorkflow(executor=executor, name=name, version=1)
    take = PullWorkflowMessagesTask(task_ref_name="take", batch_size=5)
    keep = SetVariableTask(task_ref_name="keep")
    keep.input_parameters.update({"seen": "${take.output.count}", "last": "${take.output.messages[0].payload.word}"})
    workflow >> LoopTask(task_ref_name="loop", iterations=2, tasks=[take, keep])
    workflow.output_parameters({"last": "${workflow.variables.last}"})
    workflow.register(overwrite=True)

    workflow_id = workflow.start_workflow_with_input({})
    first = executor.send_message(workflow_id, {"word": "alpha"})
    assert str(uuid.UUID(first)) == first
    second = executor.send_message(workflow_id, {"word": "beta"})
    assert second != first
    wf = wait_for_workflow(executor, sdk_config, workflow_id, timeout=30)
    assert wf.status == "COMPLETED", wf
    takes = sorted((t for t in wf.tasks if t.reference_task_name.startswith("take")), key=lambda t: t.seq)
    taken = [m for t in takes for m in t.output_data["messages"]]
    assert [m["id"] for m in taken] == [first, second]
    assert [m["payload"] for m in taken] == [{"word": "alpha"}, {"word": "beta"}]

    with pytest.raises(ApiException) as refused:
        executor.send_message(workflow_id, {"word": "late"})
    assert refused.value.status == 409
    with pytest.raises(ApiException) as missing:
        executor.send_message(f"no-such-{uuid.uuid4()}", {"word": "x"})
    assert missing.value.status == 404
