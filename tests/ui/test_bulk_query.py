"""Bulk by query (issue #13): an action over every match of a search, not only the page:
the dry run counts what happens by status, a reason is required, the job runs in the
background (here: the cluster's job function called as the cluster would), skips what no
longer applies, reports succeeded/skipped/failed, can be canceled, and is audited as one
group."""
from __future__ import annotations

import re

import pytest

from apps.engine import executor
from apps.engine.models import WorkflowExecution
from apps.ui import bulkjobs
from apps.ui.models import AuditLog, BulkJob
from tests.ui.conftest import register_chain

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch):
    """Jobs handed to the cluster are collected instead of run, so the test runs them."""
    handed: list[str] = []
    monkeypatch.setattr(bulkjobs, "enqueue", handed.append)
    return handed


def start_many(name: str, n: int) -> list[str]:
    return [executor.workflow_start(name=name, version=None, input={"x": i}) for i in range(n)]


def test_dry_run_then_job_over_every_match(operator_client, queued, django_capture_on_commit_callbacks):
    name = register_chain()
    ids = start_many(name, 30)  # more than one page of 25
    executor.workflow_terminate(workflow_id=ids[0], reason="already done")
    q = f"name={name}&size=10"
    page = operator_client.get(f"/executions/?{q}").content.decode()
    assert 'id="bulk-query-form"' in page and "All 30 matches" in page

    dry = operator_client.post("/executions/bulk-query", {"action": "pause", "q": q, "reason": "maintenance"})
    html = dry.content.decode()
    assert dry.status_code == 200 and not BulkJob.objects.exists()
    assert re.search(r'id="dry-total">30<', html) and re.search(r'id="dry-act">29<', html)
    assert re.search(r'id="dry-skip">1<', html)

    # no reason: refused, nothing started
    resp = operator_client.post("/executions/bulk-query", {"action": "pause", "q": q, "reason": " ", "confirm": "yes"})
    assert resp.status_code == 400 and not BulkJob.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        resp = operator_client.post("/executions/bulk-query",
                                    {"action": "pause", "q": q, "reason": "maintenance", "confirm": "yes"})
    job = BulkJob.objects.get()
    assert resp.status_code == 302 and resp["Location"] == f"/bulk-jobs/{job.id}"
    assert queued == [job.id] and len(job.targets) == 30 and job.status == "QUEUED"

    executor.workflow_pause(workflow_id=ids[1])  # changed meanwhile: skipped when reached
    bulkjobs.run(job.id)
    bulkjobs.run(job.id)  # a second delivery does nothing
    job.refresh_from_db()
    assert job.status == "DONE"
    assert job.counts() == {"succeeded": 28, "skipped": 2, "failed": 0, "done": 30, "total": 30, "left": 0}
    assert set(WorkflowExecution.objects.filter(pk__in=ids[1:]).values_list("status", flat=True)) == {"PAUSED"}
    audited = AuditLog.objects.filter(group=job.id)
    assert audited.filter(action="pause", bulk=True).count() == 28
    assert audited.get(action="bulk_job").params["executions"] == 30
    assert all(e.params.get("reason") == "maintenance" for e in audited.filter(action="pause"))

    state = operator_client.get(f"/bulk-jobs/{job.id}", {"format": "json"}).json()
    assert state["finished"] and len(state["results"]["skipped"]) == 2 and state["counts"]["succeeded"] == 28
    audit_page = operator_client.get("/audit/", {"group": job.id}).content.decode()
    assert audit_page.count(f'href="/bulk-jobs/{job.id}"') >= 29


def test_cancel_stops_the_job(operator_client, queued, monkeypatch, django_capture_on_commit_callbacks):
    name = register_chain()
    start_many(name, 5)
    with django_capture_on_commit_callbacks(execute=True):
        operator_client.post("/executions/bulk-query",
                             {"action": "terminate", "q": f"name={name}", "reason": "stop", "confirm": "yes"})
    job = BulkJob.objects.get()
    # the operator cancels while the job runs: after the first target
    real = bulkjobs.actions.perform
    calls = []

    def perform_then_cancel(*args, **kwargs):
        calls.append(args[2])
        result = real(*args, **kwargs)
        if len(calls) == 1:
            operator_client.post(f"/bulk-jobs/{job.id}/cancel")
        return result
    monkeypatch.setattr(bulkjobs.actions, "perform", perform_then_cancel)
    monkeypatch.setattr(bulkjobs, "SAVE_EVERY_SECONDS", 0)
    bulkjobs.run(job.id)
    job.refresh_from_db()
    assert job.status == "CANCELED" and len(calls) == 1 and job.counts()["left"] == 4
    assert WorkflowExecution.objects.filter(workflow_name=name, status="TERMINATED").count() == 1
    assert AuditLog.objects.filter(group=job.id, action="bulk_job_cancel").count() == 1


def test_viewer_cannot_start_a_bulk_job(viewer_client):
    name = register_chain()
    start_many(name, 1)
    resp = viewer_client.post("/executions/bulk-query", {"action": "pause", "q": f"name={name}", "reason": "x",
                                                         "confirm": "yes"})
    assert resp.status_code == 403 and not BulkJob.objects.exists()
