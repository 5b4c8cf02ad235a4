"""Retention (apps/engine/retention.py, ``manage.py purge_executions``, the cluster's
``retention_job``): terminal executions older than their status's age go with their
tasks, logs and leases, in bounded batches; nothing else is touched."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.core.clock import now_ms
from apps.core.errors import InvalidInput
from apps.engine import executor, retention
from apps.engine.models import SweeperLease, TaskExecLog, TaskExecution, WorkflowExecution
from tests.factories import unique, workflow_def

pytestmark = pytest.mark.django_db

DAY_MS = 86_400_000


def _done(days_ago: float, *, status: str = "COMPLETED", parent: str | None = None) -> str:
    """An execution ended ``days_ago`` days ago with ``status`` (one task with a log)."""
    name = unique("ret_wf")
    if status == "COMPLETED":
        tasks = [{"name": "set", "taskReferenceName": "set", "type": "SET_VARIABLE", "inputParameters": {"x": 1}}]
    else:
        tasks = [{"name": "hold", "taskReferenceName": "hold", "type": "WAIT", "inputParameters": {}}]
    wf_id = executor.workflow_start(name=name, input={}, workflow_def=workflow_def(name, tasks))
    if status != "COMPLETED":
        executor.workflow_terminate(workflow_id=wf_id, reason="test")
    task_id = TaskExecution.objects.filter(workflow_id=wf_id).values_list("task_id", flat=True).first()
    executor.task_log_add(task_id=task_id, log_line="a log line")
    SweeperLease.objects.create(name=f"task:{task_id}", holder="gone", expires_at=0)
    ended = now_ms() - int(days_ago * DAY_MS)
    WorkflowExecution.objects.filter(pk=wf_id).update(status=status, end_time=ended, parent_workflow_id=parent)
    return wf_id


def _exists(wf_id: str) -> bool:
    return WorkflowExecution.objects.filter(pk=wf_id).exists()


def test_old_executions_of_the_configured_statuses_go_with_their_tasks_logs_and_leases():
    old = _done(40)
    recent = _done(10)
    old_failed = _done(40, status="FAILED")
    running = executor.workflow_start(name=(n := unique("ret_run")), input={}, workflow_def=workflow_def(
        n, [{"name": "hold", "taskReferenceName": "hold", "type": "WAIT", "inputParameters": {}}]))
    old_tasks = list(TaskExecution.objects.filter(workflow_id=old).values_list("task_id", flat=True))
    totals = retention.purge({"COMPLETED": 30 * DAY_MS, "FAILED": 90 * DAY_MS})
    assert totals == {"COMPLETED": 1}
    assert not _exists(old)
    assert _exists(recent) and _exists(old_failed) and _exists(running)
    assert not TaskExecution.objects.filter(workflow_id=old).exists()
    assert not TaskExecLog.objects.filter(task_id__in=old_tasks).exists()
    assert not SweeperLease.objects.filter(name__in=[f"task:{t}" for t in old_tasks]).exists()
    assert TaskExecution.objects.filter(workflow_id=recent).exists()


def test_batches_are_bounded_and_oldest_first():
    ids = [_done(40 + i) for i in range(5)]  # ids[4] is the oldest
    first = retention.purge_batch({"COMPLETED": 30 * DAY_MS}, batch_size=2)
    assert first == {"COMPLETED": 2}
    assert [_exists(i) for i in ids] == [True, True, True, False, False]
    assert retention.purge({"COMPLETED": 30 * DAY_MS}, batch_size=2) == {"COMPLETED": 3}
    assert not any(_exists(i) for i in ids)


def test_a_child_waits_for_its_parent():
    parent = _done(40, status="FAILED")
    child = _done(40, parent=parent)
    policy = {"COMPLETED": 30 * DAY_MS}
    assert retention.purge(policy) == {}
    assert _exists(child)
    policy["FAILED"] = 30 * DAY_MS
    assert retention.purge(policy) == {"FAILED": 1, "COMPLETED": 1}
    assert not _exists(parent) and not _exists(child)


def test_dry_run_counts_and_deletes_nothing():
    old = _done(40)
    assert retention.purge({"COMPLETED": 30 * DAY_MS}, dry_run=True) == {"COMPLETED": 1}
    assert _exists(old)


def test_the_command(settings):
    old = _done(40)
    _done(40, status="TERMINATED")
    out = StringIO()
    call_command("purge_executions", "--older-than", "30d", "--status", "COMPLETED", "--dry-run", stdout=out)
    assert out.getvalue().splitlines() == ["COMPLETED: would remove 1"]
    assert _exists(old)
    out = StringIO()
    call_command("purge_executions", "--older-than", "720h", "--status", "COMPLETED", stdout=out)
    assert out.getvalue().splitlines() == ["COMPLETED: removed 1"]
    assert not _exists(old)
    with pytest.raises(CommandError, match="--older-than"):
        call_command("purge_executions", "--older-than", "soon")
    with pytest.raises(CommandError, match="--older-than"):
        call_command("purge_executions")


def test_the_cluster_job_follows_the_configured_policy(settings):
    old = _done(40)
    old_terminated = _done(40, status="TERMINATED")
    settings.CONDUCTOR = {**settings.CONDUCTOR, "RETENTION": ""}
    assert retention.retention_job() == {}
    assert _exists(old)
    settings.CONDUCTOR = {**settings.CONDUCTOR, "RETENTION": "COMPLETED=30d, TERMINATED=60d"}
    assert retention.retention_job() == {"COMPLETED": 1}
    assert not _exists(old) and _exists(old_terminated)


@pytest.mark.parametrize("text", ["COMPLETED", "RUNNING=30d", "COMPLETED=soon", "COMPLETED=-1d"])
def test_a_bad_policy_names_the_entry(text):
    with pytest.raises(InvalidInput, match="CONDUCTOR_RETENTION"):
        retention.parse_policy(text)


def test_ages():
    assert retention.parse_age("30d") == 30 * DAY_MS
    assert retention.parse_age("90") == 90 * DAY_MS
    assert retention.parse_age("15m") == 900_000
    assert retention.parse_age("250ms") == 250


def test_a_day_of_traffic_keeps_the_tables_flat(settings, monkeypatch):
    """24 hours in compressed time: every hour 5 executions finish and the cluster's
    retention job runs (COMPLETED kept 6 h). Once the first 6 hours are behind, the row
    counts of executions, tasks and task logs stop growing."""
    from tests.factories import FakeClock

    clock = FakeClock().install(monkeypatch)
    settings.CONDUCTOR = {**settings.CONDUCTOR, "RETENTION": "COMPLETED=6h"}
    counts = []
    for _hour in range(24):
        for _ in range(5):
            _done(0)  # ends now (the fake clock)
        clock.advance(seconds=3600)
        retention.retention_job()
        counts.append((WorkflowExecution.objects.count(), TaskExecution.objects.count(), TaskExecLog.objects.count()))
    steady = counts[6:]
    assert len(set(steady)) == 1, counts
    assert steady[0] == (30, 30, 30)  # 6 hours of 5 executions, each one task with one log line
