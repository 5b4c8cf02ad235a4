"""HTTP task with ``asyncComplete: true`` (Conductor's HttpTask.start): after a 2xx call the
task stays IN_PROGRESS with ``output.response``, is not called again and the next task is
not scheduled, until something completes it through the task update API."""
from __future__ import annotations

import json

import pytest

from tests.cases.harness import MockHttp, install_job_capture
from tests.factories import latest, simple_task, task_def, unique, workflow_def


@pytest.fixture
def remote():
    """A loopback HTTP service answering ``POST /payouts`` with 202 ``{"accepted": true}``."""
    mock = MockHttp()
    mock.routes[("POST", "/payouts")] = (202, {"accepted": True})
    yield mock
    mock.stop()


@pytest.fixture
def jobs(transactional_db, monkeypatch) -> list:
    captured: list = []
    install_job_capture(monkeypatch, captured)
    return captured


def run_jobs(jobs: list) -> None:
    while jobs:
        func, args, kwargs = jobs.pop(0)
        func(*args, **kwargs)


def test_http_async_complete_waits_for_external_completion(api, clock, jobs, remote):
    from apps.engine import sweeper

    notify = unique("notify")
    api.register_task_defs(task_def(notify))
    name = unique("payout")
    api.register_workflow(workflow_def(name, [
        {"name": "start_payout", "taskReferenceName": "payout", "type": "HTTP", "asyncComplete": True,
         "inputParameters": {"http_request": {"uri": f"{remote.base_url}/payouts", "method": "POST",
                                              "body": {"amount": "${workflow.input.amount}"}}}},
        simple_task(notify, "notify", {"payoutRef": "${payout.output.payoutRef}"}),
    ]))
    workflow_id = api.start(name, {"amount": 10})
    run_jobs(jobs)

    wf = api.workflow(workflow_id)
    (payout,) = [t for t in wf["tasks"] if t["referenceTaskName"] == "payout"]
    assert payout["status"] == "IN_PROGRESS", payout
    assert payout["outputData"]["response"]["statusCode"] == 202
    assert [t["referenceTaskName"] for t in wf["tasks"]] == ["payout"]
    assert [(m, p) for m, p, _ in remote.requests] == [("POST", "/payouts")]
    assert json.loads(remote.requests[0][2]) == {"amount": 10}

    # Time passes, the sweeper runs: nothing calls the service again, nothing moves on.
    for _ in range(3):
        clock.advance(120)
        sweeper.sweep_once()
        run_jobs(jobs)
    wf = api.workflow(workflow_id)
    assert wf["status"] == "RUNNING"
    assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("payout", "IN_PROGRESS")]
    assert len(remote.requests) == 1

    # Completed externally: the posted output replaces the response; the next task reads it.
    api.complete(payout, {"payoutRef": "po-41"})
    task = api.poll_one(notify)
    assert task["inputData"] == {"payoutRef": "po-41"}
    api.complete(task)
    wf = api.workflow(workflow_id)
    assert wf["status"] == "COMPLETED"
    assert [t for t in wf["tasks"] if t["referenceTaskName"] == "payout"][0]["outputData"] == {"payoutRef": "po-41"}
