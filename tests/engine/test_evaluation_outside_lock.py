"""Scripts and jq run outside the workflow's lock (issue #10, "bounded evaluation"): while
an evaluation is held in progress by the test, other writes to the same workflow and to
other workflows commit; a terminate that lands meanwhile wins over the late result; a
runaway script fails its own task with a clear reason. No wall-clock assertion: the
order of events proves it (the evaluation is still held when the other write returns)."""
from __future__ import annotations

import threading

from django.db import connection

from apps.engine import evaluation, evaluators
from tests.factories import simple_task, task_def, unique, workflow_def

HOLD_SECONDS = 60  # a safety net only: every wait below is released by an event


def inline(ref: str, expression: str) -> dict:
    return {"name": ref, "taskReferenceName": ref, "type": "INLINE",
            "inputParameters": {"evaluatorType": "javascript", "expression": expression, "x": "${workflow.input.x}"}}


class HeldEvaluations:
    """Replaces ``evaluation.run``: each evaluation announces itself, then waits until the
    test releases it, then runs for real."""

    def __init__(self, monkeypatch):
        self.entered = 0
        self.finished = 0
        self.cond = threading.Condition()
        self.released = threading.Event()
        real = evaluation.run

        def held(request):
            with self.cond:
                self.entered += 1
                self.cond.notify_all()
            assert self.released.wait(HOLD_SECONDS), "the test never released the evaluation"
            try:
                return real(request)
            finally:
                with self.cond:
                    self.finished += 1

        monkeypatch.setattr(evaluation, "run", held)

    def wait_entered(self, n: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.entered >= n, HOLD_SECONDS), f"{self.entered} of {n} evaluations started"


def in_thread(fn) -> threading.Thread:
    """Run ``fn`` in a thread with its own database connection (closed at the end); the
    thread's exception, if any, is kept on ``thread.error``."""
    def body():
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported by finish()
            thread.error = exc
        finally:
            connection.close()

    thread = threading.Thread(target=body, daemon=True)
    thread.error = None
    thread.start()
    return thread


def finish(thread: threading.Thread, held: HeldEvaluations | None = None) -> None:
    """Join ``thread`` (releasing the held evaluations if it hangs, so nothing deadlocks)
    and re-raise its exception."""
    thread.join(HOLD_SECONDS)
    if thread.is_alive() and held is not None:
        held.released.set()
        thread.join(HOLD_SECONDS)
        raise AssertionError("the call did not finish while an evaluation was held: it waited for it")
    assert not thread.is_alive()
    if thread.error is not None:
        raise thread.error


def test_a_write_to_the_same_workflow_commits_while_its_script_is_evaluated(api, monkeypatch):
    held = HeldEvaluations(monkeypatch)
    name, worker = unique("held_fork"), unique("held_worker")
    api.register_task_defs(task_def(worker))
    api.register_workflow(workflow_def(name, [
        {"name": "fork", "taskReferenceName": "fork", "type": "FORK_JOIN",
         "forkTasks": [[inline("script", "$.x + 1")], [simple_task(worker, "work")]]},
        {"name": "join", "taskReferenceName": "join", "type": "JOIN", "joinOn": ["script", "work"]}],
        outputParameters={"y": "${script.output.result}", "w": "${work.output.w}"}))
    started: dict = {}
    starter = in_thread(lambda: started.setdefault("id", api.start(name, {"x": 41})))
    held.wait_entered(1)

    # the script is being evaluated (held): a worker polls and completes the parallel task
    writer = in_thread(lambda: api.complete(api.poll_one(worker), {"w": "done"}))
    finish(writer, held)
    assert held.finished == 0, "the evaluation was released before the write returned"
    wid = api.ok(api.get(f"/workflow/running/{name}")).json()[0]
    wf = api.workflow(wid)
    statuses = {t["referenceTaskName"]: t["status"] for t in wf["tasks"]}
    assert statuses["work"] == "COMPLETED" and statuses["script"] == "IN_PROGRESS", statuses

    held.released.set()
    finish(starter)
    assert started["id"] == wid
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED", wf
    assert wf["output"] == {"y": 42, "w": "done"}
    assert held.entered == 1  # the worker's decide did not ask for the evaluation again


def test_a_terminate_during_evaluation_wins_over_its_late_result(api, monkeypatch):
    held = HeldEvaluations(monkeypatch)
    name = unique("held_terminate")
    api.register_workflow(workflow_def(name, [inline("script", "$.x * 2"), inline("after", "1")]))
    starter = in_thread(lambda: api.start(name, {"x": 2}))
    held.wait_entered(1)
    wid = api.ok(api.get(f"/workflow/running/{name}")).json()[0]

    terminator = in_thread(lambda: api.ok(api.delete(f"/workflow/{wid}", params={"reason": "stop"})))
    finish(terminator, held)
    held.released.set()
    finish(starter)

    assert held.finished == 1  # the script did run to its end; its result came too late
    wf = api.workflow(wid)
    assert wf["status"] == "TERMINATED"
    [script] = wf["tasks"]
    assert script["status"] == "CANCELED" and "result" not in script["outputData"]


def test_a_runaway_script_fails_its_own_task_and_five_of_them_hold_up_no_other_workflow(api, monkeypatch):
    monkeypatch.setattr(evaluators, "TIME_LIMIT_SECONDS", 0.2)
    held = HeldEvaluations(monkeypatch)
    spin, other, worker = unique("spin"), unique("other"), unique("other_worker")
    api.register_task_defs(task_def(worker))
    api.register_workflow(workflow_def(spin, [inline("spin", "while(true){}")]))
    api.register_workflow(workflow_def(other, [simple_task(worker, "work")]))
    spinners = [in_thread(lambda: api.start(spin, {})) for _ in range(5)]
    held.wait_entered(5)

    # five evaluations in progress: another workflow starts, is polled and completes
    done: dict = {}

    def write_elsewhere():
        wid = api.start(other, {})
        api.complete(api.poll_one(worker), {"ok": True})
        done["wf"] = api.workflow(wid)

    writer = in_thread(write_elsewhere)
    finish(writer, held)
    assert held.finished == 0
    assert done["wf"]["status"] == "COMPLETED"

    held.released.set()
    for t in spinners:
        finish(t)
    runs = api.ok(api.get("/workflow/search", params={"query": f"workflowType IN ({spin})", "size": 10})).json()["results"]
    assert len(runs) == 5
    for summary in runs:
        wf = api.workflow(summary["workflowId"])
        [task] = wf["tasks"]
        assert wf["status"] == "FAILED"
        assert task["status"] == "FAILED_WITH_TERMINAL_ERROR"
        assert task["reasonForIncompletion"] == "Script not evaluated within 0.2 seconds, interrupted."


def test_jq_runs_outside_the_lock_too(api, monkeypatch):
    held = HeldEvaluations(monkeypatch)
    name = unique("held_jq")
    api.register_workflow(workflow_def(name, [{
        "name": "jq", "taskReferenceName": "jq", "type": "JSON_JQ_TRANSFORM",
        "inputParameters": {"queryExpression": ".x + 1", "x": "${workflow.input.x}"}}],
        outputParameters={"y": "${jq.output.result}"}))
    starter = in_thread(lambda: api.start(name, {"x": 41}))
    held.wait_entered(1)
    wid = api.ok(api.get(f"/workflow/running/{name}")).json()[0]
    # the workflow can be read and changed (variables) while its jq program runs
    api.ok(api.post(f"/workflow/{wid}/variables", {"seen": True}))
    held.released.set()
    finish(starter)
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED" and wf["output"] == {"y": 42}
    assert wf["variables"] == {"seen": True}



def test_a_switch_script_is_evaluated_outside_the_lock(api, monkeypatch):
    held = HeldEvaluations(monkeypatch)
    name, worker = unique("held_switch"), unique("held_switch_worker")
    api.register_task_defs(task_def(worker))
    api.register_workflow(workflow_def(name, [
        {"name": "sw", "taskReferenceName": "sw", "type": "SWITCH", "evaluatorType": "javascript",
         "expression": "$.x > 10 ? 'big' : 'small'", "inputParameters": {"x": "${workflow.input.x}"},
         "decisionCases": {"big": [simple_task(worker, "big_work")], "small": [inline("small_work", "0")]}}]))
    starter = in_thread(lambda: api.start(name, {"x": 41}))
    held.wait_entered(1)
    wid = api.ok(api.get(f"/workflow/running/{name}")).json()[0]
    writer = in_thread(lambda: api.ok(api.post(f"/workflow/{wid}/variables", {"seen": True})))
    finish(writer, held)
    [switch] = api.workflow(wid)["tasks"]
    assert switch["status"] == "IN_PROGRESS"
    held.released.set()
    finish(starter)

    wf = api.workflow(wid)
    switch, big = wf["tasks"]
    assert switch["status"] == "COMPLETED" and switch["outputData"] == {"evaluationResult": ["big"], "selectedCase": "big"}
    assert big["referenceTaskName"] == "big_work" and big["status"] == "SCHEDULED"
    assert wf["variables"] == {"seen": True}


def test_a_loop_condition_is_evaluated_outside_the_lock(api, monkeypatch):
    held = HeldEvaluations(monkeypatch)
    name = unique("held_loop")
    body = {"name": "count", "taskReferenceName": "count", "type": "SET_VARIABLE",
            "inputParameters": {"n": "${loop.output.iteration}"}}
    api.register_workflow(workflow_def(name, [
        {"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
         "loopCondition": "$.loop['iteration'] < 3", "loopOver": [body]}],
        outputParameters={"n": "${workflow.variables.n}"}))
    starter = in_thread(lambda: api.start(name, {}))
    held.wait_entered(1)
    wid = api.ok(api.get(f"/workflow/running/{name}")).json()[0]
    writer = in_thread(lambda: api.ok(api.post(f"/workflow/{wid}/variables", {"seen": True})))
    finish(writer, held)
    loop = api.workflow(wid)["tasks"][0]
    assert loop["status"] == "IN_PROGRESS" and loop["outputData"]["iteration"] == 1
    held.released.set()
    finish(starter)

    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED", wf
    assert wf["tasks"][0]["outputData"]["iteration"] == 3
    assert held.entered == 3  # one evaluation per iteration's condition
    assert wf["variables"]["seen"] is True and wf["output"] == {"n": 3}
