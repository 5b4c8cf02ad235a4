"""The status sets the operator pages' JavaScript reads from the page (apps.engine.status)."""
from pathlib import Path

from apps.engine.status import STRIP_FAILURE_TASK, SUCCESSFUL_TASK, TASK_SEVERITY, TASK_STATUSES, TERMINAL_TASK, page_sets


def test_severity_orders_every_task_status_once():
    assert sorted(TASK_SEVERITY) == sorted(TASK_STATUSES) and len(set(TASK_SEVERITY)) == len(TASK_SEVERITY)


def test_strip_failures_are_the_ended_unsuccessful_statuses_and_rank_worst():
    # Conductor: terminal and not successful, plus COMPLETED_WITH_ERRORS (an optional task failed)
    assert STRIP_FAILURE_TASK == (TERMINAL_TASK - SUCCESSFUL_TASK) | {"COMPLETED_WITH_ERRORS"}
    worst = TASK_SEVERITY[:len(STRIP_FAILURE_TASK)]
    assert set(worst) == STRIP_FAILURE_TASK


def test_page_sets_hand_them_to_the_pages():
    sets = page_sets()
    assert sets["taskSeverity"] == list(TASK_SEVERITY)
    assert sets["stripFailure"] == sorted(STRIP_FAILURE_TASK)


def test_execution_script_keeps_no_copy_of_the_task_statuses():
    script = (Path(__file__).resolve().parents[3] / "static" / "ui" / "execution.js").read_text()
    assert "conductor-statuses" in script
    for status in TASK_STATUSES:
        assert f'"{status}"' not in script, status
