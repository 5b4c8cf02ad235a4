"""The official conductor-python SDK (2.0.0) against the search and bulk endpoints over
real HTTP (``live_server``): its models must deserialise our answers (strict
enums on WorkflowSummary.status and Task.status)."""
from __future__ import annotations

import pytest
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.api.task_resource_api import TaskResourceApi
from conductor.client.http.api.workflow_bulk_resource_api import WorkflowBulkResourceApi
from conductor.client.http.api_client import ApiClient
from conductor.client.orkes_clients import OrkesClients

from tests.search.builders import T0, make_task, make_workflow


@pytest.fixture
def sdk(live_server):
    return Configuration(server_api_url=live_server.url + "/api")


def test_workflow_client_search(sdk):
    a = make_workflow("sdk_order", status="RUNNING", correlation_id="c1", input={"k": "v"})
    make_workflow("sdk_order", status="FAILED", create_time=T0 + 1, end_time=T0 + 2, correlation_id="c2")
    client = OrkesClients(sdk).get_workflow_client()
    result = client.search(start=0, size=10, free_text="*", query="correlationId='c1'")
    assert [s.workflow_id for s in result.results] == [a.workflow_id]
    summary = result.results[0]
    assert summary.status == "RUNNING"
    assert summary.workflow_type == "sdk_order"
    assert summary.start_time == "2023-11-14T22:13:20.000Z"
    result = client.search(query="workflowType = sdk_order AND status IN (RUNNING,FAILED)")
    assert len(result.results) == 2


def test_task_search_through_the_generated_api(sdk):
    wf = make_workflow("sdk_tasks")
    task = make_task(wf, task_def_name="sdk_work", status="IN_PROGRESS", start_time=T0 + 5)
    api = TaskResourceApi(ApiClient(sdk))
    summaries = api.search1(query="taskType = sdk_work", size=5)
    assert summaries.total_hits == 1
    assert summaries.results[0].task_id == task.task_id
    assert summaries.results[0].status == "IN_PROGRESS"
    tasks = api.search_v21(query="status = IN_PROGRESS AND workflowType = sdk_tasks")
    assert [t.task_id for t in tasks.results] == [task.task_id]
    assert tasks.results[0].start_time == T0 + 5


def test_bulk_api(sdk):
    running = make_workflow("sdk_bulk", status="RUNNING")
    done = make_workflow("sdk_bulk", status="COMPLETED", end_time=T0 + 10)
    bulk = WorkflowBulkResourceApi(ApiClient(sdk))
    resp = bulk.pause_workflow([running.workflow_id, done.workflow_id])
    assert resp.bulk_successful_results == [running.workflow_id]
    assert resp.bulk_error_results == {
        done.workflow_id: f"Workflow sdk_bulk.1/{done.workflow_id} has ended, status cannot be updated."}
    resp = bulk.resume_workflow([running.workflow_id])
    assert resp.bulk_successful_results == [running.workflow_id]
    resp = bulk.terminate([running.workflow_id], reason="bulk stop")
    assert resp.bulk_successful_results == [running.workflow_id] and resp.bulk_error_results == {}
