"""The update that ends a wide execution (issue #9, flat growth): a DO_WHILE of many
iterations or a dynamic fork of many branches ends without reading every task row whole
(``TaskSource.all``): the loop's and the JOIN's outputs come from narrow rows
(``TaskSource.outputs``), and the workflow's completion checks (``check_for_completion``,
failed and permissive tasks, TERMINATE, the last task's output) read only the rows they
need. What the API shows is the same as before. More than ``TaskList.LOOKUP_LIMIT``
references are used so that the narrow paths run."""
from __future__ import annotations

import pytest

from apps.engine import store
from apps.engine.state import TaskList
from tests.factories import simple_task, task_def, unique, workflow_def

WIDE = TaskList.LOOKUP_LIMIT + 6


@pytest.fixture
def full_reads(monkeypatch) -> list[str]:
    """The workflow ids whose every task row was read whole (``_RowSource.all``)."""
    calls: list[str] = []
    original = store._RowSource.all

    def all_rows(self):
        calls.append(self.workflow_id)
        return original(self)

    monkeypatch.setattr(store._RowSource, "all", all_rows)
    return calls


def fork_workflow(api, branches: list[dict], *, output_parameters: dict | None = None) -> tuple[str, str]:
    name = unique("wide_fork")
    fork = {"name": "fork", "taskReferenceName": "fork", "type": "FORK_JOIN_DYNAMIC",
            "inputParameters": {"tasks": "${workflow.input.tasks}", "inputs": "${workflow.input.inputs}"},
            "dynamicForkTasksParam": "tasks", "dynamicForkTasksInputParamName": "inputs"}
    extra = {"outputParameters": output_parameters} if output_parameters else {}
    api.register_workflow(workflow_def(name, [fork, {"name": "join", "taskReferenceName": "join", "type": "JOIN"}],
                                       **extra))
    return api.start(name, {"tasks": branches, "inputs": {b["taskReferenceName"]: {"i": i}
                                                          for i, b in enumerate(branches)}}), name


def test_a_long_loop_ends_with_its_whole_output_without_reading_every_row_whole(api, full_reads):
    worker = unique("wide_loop")
    api.register_task_defs(task_def(worker))
    name = unique("wide_loop_wf")
    loop = {"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
            "loopCondition": f"$.loop['iteration'] < {WIDE}", "loopOver": [simple_task(worker, "g")]}
    api.register_workflow(workflow_def(name, [loop], outputParameters={"n": "${loop.output.iteration}",
                                                                       "third": "${loop.output.3.g.r}"}))
    wid = api.start(name, {})
    for _ in range(WIDE):
        task = api.poll_one(worker)
        api.complete(task, {"r": task["iteration"] * 10})
    assert wid not in full_reads
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    assert wf["output"] == {"n": WIDE, "third": 30}
    assert wf["tasks"][0]["outputData"] == {"iteration": WIDE,
                                            **{str(k): {"g": {"r": k * 10}} for k in range(1, WIDE + 1)}}


def test_a_wide_fork_ends_with_every_branch_output_without_reading_every_row_whole(api, full_reads):
    worker = unique("wide_branch")
    api.register_task_defs(task_def(worker))
    wid, _ = fork_workflow(api, [simple_task(worker, f"b{i}") for i in range(WIDE)])
    for _ in range(WIDE):
        task = api.poll_one(worker)
        api.complete(task, {"i": task["inputData"]["i"]})
    assert wid not in full_reads
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    expected = {f"b{i}": {"i": i} for i in range(WIDE)}
    join = next(t for t in wf["tasks"] if t["referenceTaskName"] == "join")
    assert join["status"] == "COMPLETED" and join["outputData"] == expected
    assert wf["output"] == expected  # the last task's output: the JOIN's
    assert list(join["outputData"]) == [f"b{i}" for i in range(WIDE)]


def fork_with_one_failure(api, prefix: str, flag: str) -> str:
    """A wide fork whose branch b5 has ``flag`` (optional/permissive) set and FAILS, the
    others complete; returns the workflow id once every branch was updated."""
    worker = unique(prefix)
    api.register_task_defs(task_def(worker))
    wid, _ = fork_workflow(api, [simple_task(worker, f"b{i}", **{flag: i == 5}) for i in range(WIDE)])
    for _ in range(WIDE):
        task = api.poll_one(worker)
        if task["referenceTaskName"] == "b5":
            api.ok(api.update(task, "FAILED", {}, reasonForIncompletion=f"{flag} branch failed"))
        else:
            api.complete(task, {"ok": 1})
    return wid


def test_a_wide_fork_with_an_optional_failure_completes_with_errors(api, full_reads):
    wid = fork_with_one_failure(api, "wide_optional", "optional")
    assert wid not in full_reads
    wf = api.workflow(wid)
    join = next(t for t in wf["tasks"] if t["referenceTaskName"] == "join")
    assert join["status"] == "COMPLETED_WITH_ERRORS"
    assert wf["status"] == "COMPLETED"
    b5 = next(t for t in wf["tasks"] if t["referenceTaskName"] == "b5")
    assert b5["status"] == "COMPLETED_WITH_ERRORS"  # optional: not a failure of the workflow
    assert wf["failedReferenceTaskNames"] == [] and wf["failedTaskNames"] == []


def test_a_wide_fork_with_a_failed_permissive_branch_fails_the_workflow_naming_it(api):
    wid = fork_with_one_failure(api, "wide_permissive", "permissive")
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED"
    assert "permissive branch failed" in wf["reasonForIncompletion"]
    assert "b5" in wf["failedReferenceTaskNames"]


@pytest.mark.django_db
def test_the_unsettled_tasks_are_read_through_the_partial_index_on_sqlite():
    """``lock_workflow`` reads the unsettled tasks through ``task_active``: SQLite uses a
    partial index only when the query repeats its condition as written
    (``NOT executed AND NOT retried``); ``executed = 0`` walked every task row of the
    execution on each update (issue #9, flat growth of a wide dynamic fork)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("the query plan checked is SQLite's")
    with store.sql_cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + store._s()["active_tasks"], ["some-workflow"])
        plan = " ".join(str(row[-1]) for row in cursor.fetchall())
    assert "task_active" in plan, plan
