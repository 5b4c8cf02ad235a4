"""Execution history with the official Python SDK against a real server: an SDK worker
fails its first attempt and succeeds on the retry; the operator (an API application)
reruns the completed execution with the SDK; ``GET /api/workflow/{id}/history`` tells the
whole story in order (scheduled, polled by the SDK worker, failed with its reason,
retried, completed, the rerun by the application with the task list as it was before),
paged by seq."""
import httpx
import pytest
from conductor.client.http.models.rerun_workflow_request import RerunWorkflowRequest
from conductor.client.http.models.task_def import TaskDef
from conductor.client.orkes_clients import OrkesClients
from conductor.client.workflow.conductor_workflow import ConductorWorkflow

from tests.e2e import failure_workers as fw
from tests.e2e.sdk_helpers import auth_headers, running_workers, wait_for_workflow

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore:Call to deprecated function:DeprecationWarning"),
]


def history(sdk_config, workflow_id: str, **params) -> dict:
    resp = httpx.get(f"{sdk_config.host}/workflow/{workflow_id}/history", params=params,
                     headers=auth_headers(sdk_config), timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_history_of_an_sdk_run_and_its_rerun(sdk_config):
    clients = OrkesClients(configuration=sdk_config)
    clients.get_metadata_client().register_task_def(TaskDef(
        name=fw.FLAKY_TASK, retry_count=1, retry_logic="FIXED", retry_delay_seconds=0, timeout_seconds=120,
        response_timeout_seconds=60))
    executor = clients.get_workflow_executor()
    workflow = ConductorWorkflow(executor=executor, name="e2e_history_charge", version=1)
    workflow >> fw.flaky_charge(task_ref_name="charge", order_id="ORD-H")
    workflow.register(overwrite=True)
    with running_workers(sdk_config, [fw.FLAKY_TASK]):
        workflow_id = workflow.start_workflow_with_input(workflow_input={})
        done = wait_for_workflow(executor, sdk_config, workflow_id)
        assert done.status == "COMPLETED", done.reason_for_incompletion
        events = history(sdk_config, workflow_id)["events"]
        story = [(e["kind"], e["data"].get("to")) for e in events]
        assert story == [("workflow.started", None), ("task.scheduled", None), ("task.polled", "IN_PROGRESS"),
                         ("task.updated", "FAILED"), ("task.retried", None), ("task.polled", "IN_PROGRESS"),
                         ("task.updated", "COMPLETED"), ("workflow.updated", None), ("workflow.status", "COMPLETED")], story
        assert events[7]["data"]["fields"] == ["output"] and events[7]["data"]["before"] == {"output": {}}
        failed = events[3]["data"]
        assert failed["reason"] and fw.flaky_reason("ORD-H") in failed["reason"]
        assert failed["by"] == "app:e2e-tests"  # the application of the SDK's access key (tests/e2e/conftest.py)
        assert events[2]["data"]["workerId"] and events[2]["data"]["workerId"] == failed["workerId"]
        assert events[4]["data"]["retriedTaskId"] == events[1]["taskId"]
        assert events[6]["data"]["outputSize"] > 0

        # the operator reruns it from the start with the SDK: the attempts are replaced...
        workflow_client = clients.get_workflow_client()
        workflow_client.rerun_workflow(workflow_id, RerunWorkflowRequest(re_run_from_workflow_id=workflow_id))
        again = wait_for_workflow(executor, sdk_config, workflow_id)
        assert again.status == "COMPLETED"
        assert {t.task_id for t in again.tasks}.isdisjoint({events[1]["taskId"], events[4]["taskId"]})
    # ...and the history keeps them
    after = history(sdk_config, workflow_id, after=events[-1]["seq"])["events"]
    rerun = after[0]
    assert rerun["kind"] == "action" and rerun["data"]["action"] == "rerun"
    assert rerun["data"]["by"] == "app:e2e-tests"
    before = rerun["data"]["tasksBefore"]
    assert [(t["ref"], t["status"]) for t in before] == [("charge", "FAILED"), ("charge", "COMPLETED")]
    assert before[1]["output"]["charged"] is True
    assert rerun["data"]["workflowBefore"]["status"] == "COMPLETED"
    assert [e["kind"] for e in after[1:3]] == ["task.removed", "task.removed"]
    assert after[-1]["kind"] == "workflow.status" and after[-1]["data"]["to"] == "COMPLETED"
    # the rerun from the start emptied the output and restarted the clock: the history has what they were
    reset = next(e for e in after if e["kind"] == "workflow.updated")
    assert set(reset["data"]["fields"]) >= {"output", "createTime"} and reset["data"]["before"]["output"]["charged"] is True

    # paging by seq walks the same events
    seen, cursor = [], 0
    for _ in range(50):
        page = history(sdk_config, workflow_id, after=cursor, limit=3)
        seen += page["events"]
        if page["next"] is None:
            break
        cursor = page["next"]
    assert [e["seq"] for e in seen] == [e["seq"] for e in events + after]
