"""The official Python SDK's ``OrkesSchedulerClient`` against a running server: save, get,
list, preview, search executions, pause/resume, delete; a schedule every 2 s whose runs
an SDK worker completes; each slot fires once while two clusters run."""
from __future__ import annotations

import sys
import time

import httpx
import pytest
from conductor.client.http.models.save_schedule_request import SaveScheduleRequest
from conductor.client.http.models.start_workflow_request import StartWorkflowRequest
from conductor.client.http.models.task_result import TaskResult
from conductor.client.http.models.task_result_status import TaskResultStatus
from conductor.client.http.rest import ApiException
from conductor.client.orkes.orkes_scheduler_client import OrkesSchedulerClient
from conductor.client.orkes.orkes_task_client import OrkesTaskClient
from conductor.client.orkes.orkes_workflow_client import OrkesWorkflowClient

from tests.factories import unique

pytestmark = pytest.mark.e2e

RUNS_WANTED = 5
WAIT_SECONDS = 90


def _register(base: str, workflow: str, task: str, headers: dict) -> None:
    r = httpx.post(f"{base}/metadata/taskdefs", headers=headers, json=[{
        "name": task, "retryCount": 0, "responseTimeoutSeconds": 60,
        "timeoutSeconds": 0, "ownerEmail": "e2e@example.com"}])
    assert r.status_code == 200, r.text
    wf = {"name": workflow, "version": 1, "schemaVersion": 2, "ownerEmail": "e2e@example.com",
          "tasks": [{"name": task, "taskReferenceName": "report", "type": "SIMPLE",
                     "inputParameters": {"slot": "${workflow.input._scheduledTime}"}}],
          "outputParameters": {"slot": "${report.output.slot}"}}
    r = httpx.post(f"{base}/metadata/workflow", json=wf, headers=headers)
    assert r.status_code == 200, r.text


def _work(tasks: OrkesTaskClient, task_type: str) -> int:
    """One round of an SDK worker: poll and complete what is there."""
    done = 0
    for task in tasks.batch_poll_tasks(task_type, worker_id="e2e-worker", count=5, timeout_in_millisecond=100) or []:
        result = TaskResult(workflow_instance_id=task.workflow_instance_id, task_id=task.task_id,
                            worker_id="e2e-worker", status=TaskResultStatus.COMPLETED,
                            output_data={"slot": task.input_data["slot"]})
        tasks.update_task(result)
        done += 1
    return done


def test_sdk_scheduler_client_end_to_end_under_two_clusters(conductor_server, sdk_config):
    base = conductor_server.url
    workflow, task = unique("scheduled_report"), unique("report_task")
    _register(base, workflow, task, conductor_server.auth_headers())
    scheduler = OrkesSchedulerClient(sdk_config)
    tasks = OrkesTaskClient(sdk_config)
    workflows = OrkesWorkflowClient(sdk_config)
    name = unique("every_2s")

    # a second cluster on the same database, as a scale-out deployment runs
    conductor_server._spawn("qcluster2", [sys.executable, "manage.py", "qcluster"])
    try:
        scheduler.save_schedule(SaveScheduleRequest(
            name=name, cron_expression="*/2 * * * * *", zone_id="UTC", description="e2e",
            start_workflow_request=StartWorkflowRequest(name=workflow, version=1, input={"origin": "e2e"})))
        got = scheduler.get_schedule(name)
        assert (got.name, got.cron_expression, got.paused, got.zone_id) == (name, "*/2 * * * * *", False, "UTC")
        assert got.start_workflow_request.name == workflow
        assert name in [s.name for s in scheduler.get_all_schedules(workflow)]
        preview = scheduler.get_next_few_schedule_execution_times("*/2 * * * * *", limit=3)
        assert len(preview) == 3 and preview[1] - preview[0] == 2000 and preview[2] - preview[1] == 2000

        deadline = time.monotonic() + WAIT_SECONDS
        completed: dict[str, object] = {}
        while time.monotonic() < deadline and len(completed) < RUNS_WANTED:
            _work(tasks, task)
            found = scheduler.search_schedule_executions(query=f"scheduleName IN ({name})", size=50)
            for run in found.results or []:
                if run.state == "EXECUTED" and run.workflow_id not in completed:
                    wf = workflows.get_workflow(run.workflow_id, include_tasks=False)
                    if wf.status == "COMPLETED":
                        completed[run.workflow_id] = run
            time.sleep(0.2)
        assert len(completed) >= RUNS_WANTED, f"only {len(completed)} completed runs: {found}"

        scheduler.pause_schedule(name, reason="e2e pause")
        paused = scheduler.get_schedule(name)
        assert paused.paused is True and paused.paused_reason == "e2e pause"
        scheduler.resume_schedule(name)
        assert scheduler.get_schedule(name).paused is False
    finally:
        conductor_server._stop_one("qcluster2")
        try:
            scheduler.pause_schedule(name)
        except ApiException:
            pass

    runs = scheduler.search_schedule_executions(query=f"scheduleName IN ({name})", size=500).results
    slots = [r.scheduled_time for r in runs]
    assert len(slots) == len(set(slots)), "a slot fired twice"
    assert all(s % 2000 == 0 for s in slots)
    for run in completed.values():
        wf = workflows.get_workflow(run.workflow_id, include_tasks=False)
        assert wf.input["_startedByScheduler"] == name and wf.input["_scheduledTime"] == run.scheduled_time
        assert wf.input["_executionId"] == run.execution_id and wf.input["origin"] == "e2e"
        assert wf.output == {"slot": run.scheduled_time}
    print(sorted((r.scheduled_time % 100000, r.execution_time - r.scheduled_time) for r in runs))
    late_ms = sorted(r.execution_time - r.scheduled_time for r in runs)
    print(f"scheduler e2e: {len(runs)} runs, firing delay ms min/median/max = "
          f"{late_ms[0]}/{late_ms[len(late_ms) // 2]}/{late_ms[-1]}")

    scheduler.delete_schedule(name)
    with pytest.raises(ApiException) as err:
        scheduler.get_schedule(name)
    assert err.value.status == 404
