"""``live.task_row``'s ``defRef`` (the WorkflowTask a task row belongs to on the graph):
only a loop iteration's trailing ``__N`` goes, so a reference containing ``__`` stays whole."""
from __future__ import annotations

from apps.engine.state import TaskState
from apps.ui.live import task_row


def row(ref: str, iteration: int = 0) -> dict:
    return task_row(TaskState(task_id="t1", workflow_id="w1", task_type="SIMPLE", task_def_name="send",
                              reference_task_name=ref, iteration=iteration))


def test_a_reference_with_double_underscore_is_its_own_definition_ref():
    assert row("send__email")["defRef"] == "send__email"


def test_a_loop_iteration_drops_only_its_iteration_suffix():
    assert row("send__email__2", iteration=2)["defRef"] == "send__email"
    assert row("notify__3", iteration=3)["defRef"] == "notify"


def test_a_plain_reference_is_unchanged():
    assert row("charge")["defRef"] == "charge"
