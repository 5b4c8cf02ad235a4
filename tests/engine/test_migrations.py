"""Data migrations of the engine app, run forwards and backwards on the test database
(SQLite and PostgreSQL): rows written in the old layout come out in the new one."""
from __future__ import annotations

import pytest

from tests.support.migrations import migrate, migrate_to_latest

BEFORE = [("engine", "0005_task_limits")]
AFTER = [("engine", "0006_task_timer_at")]


@pytest.fixture
def at_0005(transactional_db):
    """The schema as of 0005; migrated back to the latest state afterwards."""
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def _task(model, wf, task_id, task_type, visible_at, **extra):
    fields = dict(task_id=task_id, workflow=wf, workflow_type="w", task_type=task_type, task_def_name=task_type,
                  reference_task_name=task_id, seq=1, status="IN_PROGRESS", scheduled_time=1_000,
                  visible_at=visible_at)
    fields.update(extra)
    return model.objects.create(**fields)


def test_0006_moves_system_task_timers_from_visible_at_to_timer_at_and_back(at_0005):
    workflow = at_0005.get_model("engine", "WorkflowExecution")
    task = at_0005.get_model("engine", "TaskExecution")
    wf = workflow.objects.create(workflow_id="wf", workflow_name="w", workflow_version=1, status="RUNNING",
                                 definition={}, create_time=1, update_time=1)
    _task(task, wf, "wait-timer", "WAIT", 9_000)
    _task(task, wf, "wait-signal", "WAIT", 0)  # 0 was "no timer"
    _task(task, wf, "ai-delayed", "LLM_CHAT_COMPLETE", 7_000, status="SCHEDULED")
    _task(task, wf, "ai-dispatched", "LLM_TEXT_COMPLETE", 0)
    _task(task, wf, "http-delayed", "HTTP", 5_000, status="SCHEDULED", callback_after_seconds=4,
          retried_task_id="http-0")
    _task(task, wf, "http-running", "HTTP", 1_000)
    _task(task, wf, "worker-callback", "send_email", 6_000, status="SCHEDULED", queue_name="send_email",
          callback_after_seconds=5)
    _task(task, wf, "simple-now", "SIMPLE", 0, status="SCHEDULED", queue_name="SIMPLE")

    after = migrate(AFTER).get_model("engine", "TaskExecution")
    rows = {t.task_id: (t.visible_at, t.timer_at) for t in after.objects.all()}
    assert rows == {
        "wait-timer": (1_000, 9_000),
        "wait-signal": (1_000, None),
        "ai-delayed": (1_000, 7_000),
        "ai-dispatched": (1_000, None),
        "http-delayed": (1_000, 5_000),
        "http-running": (1_000, None),
        "worker-callback": (6_000, None),  # worker tasks keep their poll visibility
        "simple-now": (0, None),
    }

    before = migrate(BEFORE).get_model("engine", "TaskExecution")
    back = {t.task_id: t.visible_at for t in before.objects.all()}
    assert back == {"wait-timer": 9_000, "wait-signal": 0, "ai-delayed": 7_000, "ai-dispatched": 0,
                    "http-delayed": 5_000, "http-running": 1_000, "worker-callback": 6_000, "simple-now": 0}
