"""Nothing user-supplied runs unbounded (issue #10): a runaway jq program fails its own
task; a DO_WHILE whose condition never turns false fails at the iteration cap with a
reason; a synchronous execute waits at most MAX_SYNC_WAIT_SECONDS whatever it asks."""
from __future__ import annotations

import pytest

from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db


def jq_task(ref: str, query: str) -> dict:
    return {"name": ref, "taskReferenceName": ref, "type": "JSON_JQ_TRANSFORM",
            "inputParameters": {"queryExpression": query, "x": "${workflow.input.x}"}}


@pytest.mark.django_db(transaction=True)  # evaluations run after the service's commit
def test_a_runaway_jq_program_fails_its_task_and_jq_keeps_working(api, settings, monkeypatch):
    monkeypatch.setitem(settings.CONDUCTOR, "JQ_TIME_LIMIT_SECONDS", 0.5)
    name = unique("jq_runaway")
    api.register_workflow(workflow_def(name, [jq_task("slow", "last(range(0;50000000000))")]))
    wf = api.workflow(api.start(name, {"x": 1}))
    assert wf["status"] == "FAILED"
    assert "not evaluated within 0.5 seconds" in wf["tasks"][0]["reasonForIncompletion"]

    # The evaluator that replaced the killed one gets the default limit: under a loaded
    # machine, starting it can take longer than the 0.5 s above (#14).
    monkeypatch.setitem(settings.CONDUCTOR, "JQ_TIME_LIMIT_SECONDS", 5.0)
    ok = unique("jq_ok")
    api.register_workflow(workflow_def(ok, [jq_task("t", ".x + 1")], outputParameters={"y": "${t.output.result}"}))
    wf = api.workflow(api.start(ok, {"x": 41}))
    assert wf["status"] == "COMPLETED" and wf["output"] == {"y": 42}


@pytest.mark.django_db(transaction=True)  # evaluations run after the service's commit
def test_a_jq_error_is_the_task_reason(api):
    name = unique("jq_err")
    api.register_workflow(workflow_def(name, [jq_task("bad", ".x | error(\"boom\")")]))
    wf = api.workflow(api.start(name, {"x": 1}))
    assert wf["status"] == "FAILED" and "boom" in wf["tasks"][0]["reasonForIncompletion"]


def _endless_loop(name: str) -> dict:
    body = {"name": "step", "taskReferenceName": "step", "type": "INLINE",
            "inputParameters": {"evaluatorType": "javascript", "expression": "1"}}
    return workflow_def(name, [{"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
                                "loopCondition": "true", "loopOver": [body]}])


@pytest.mark.django_db(transaction=True)  # evaluations run after the service's commit
def test_a_do_while_that_never_ends_fails_at_the_cap(api, settings, monkeypatch):
    monkeypatch.setitem(settings.CONDUCTOR, "DO_WHILE_MAX_ITERATIONS", 5)
    name = unique("endless")
    api.register_workflow(_endless_loop(name))
    wf = api.workflow(api.start(name))
    loop = next(t for t in wf["tasks"] if t["referenceTaskName"] == "loop")
    assert loop["status"] == "FAILED_WITH_TERMINAL_ERROR"
    assert "limit of 5 iterations" in loop["reasonForIncompletion"]
    assert loop["outputData"]["iteration"] == 5
    assert wf["status"] == "FAILED"


@pytest.mark.django_db(transaction=True)  # evaluations run after the service's commit
def test_a_long_system_loop_is_carried_on_not_left_running(api, settings, monkeypatch):
    """More iterations than one decide pass allows: the execution is due again at once
    (the sweeper carries on) and reaches the cap over a few decides."""
    from apps.engine.models import WorkflowExecution

    monkeypatch.setitem(settings.CONDUCTOR, "DO_WHILE_MAX_ITERATIONS", 1500)
    name = unique("long_loop")
    api.register_workflow(_endless_loop(name))
    wid = api.start(name)
    assert api.workflow(wid, include_tasks=False)["status"] == "RUNNING"
    assert WorkflowExecution.objects.get(pk=wid).next_decide_at is not None
    for _ in range(20):
        if api.workflow(wid, include_tasks=False)["status"] != "RUNNING":
            break
        api.ok(api.put(f"/workflow/decide/{wid}"))
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED"
    assert "limit of 1500 iterations" in wf["reasonForIncompletion"] or \
        "limit of 1500 iterations" in next(t for t in wf["tasks"] if t["referenceTaskName"] == "loop")["reasonForIncompletion"]


def test_execute_waits_at_most_the_cap(api, settings, monkeypatch):
    monkeypatch.setitem(settings.CONDUCTOR, "MAX_SYNC_WAIT_SECONDS", 0.2)
    body = _execute_one_unpolled_task(api, "exec_cap", wait_seconds=2147483647)
    assert body["status"] == "RUNNING" and body.get("signalTimeout") is True, body


def _execute_one_unpolled_task(api, prefix: str, *, wait_seconds: int) -> dict:
    """``POST /workflow/execute`` of a new one-SIMPLE-task workflow nobody polls, waiting
    up to ``wait_seconds``; the SignalResponse (JSON)."""
    name, task = unique(prefix), unique(f"{prefix}_task")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "t")]))
    return api.ok(api.post(f"/workflow/execute/{name}/1", {"name": name, "input": {}},
                           params={"waitForSeconds": wait_seconds})).json()


def test_execute_answers_at_once_when_the_server_is_stopping(api, monkeypatch):
    """A server asked to stop (apps.core.lifecycle.stopping, set on SIGTERM by conductor_web.serve)
    answers a waiting execute with what it has instead of holding the stop."""
    import threading

    from apps.core import lifecycle

    stopping = threading.Event()
    stopping.set()
    monkeypatch.setattr(lifecycle, "stopping", stopping)
    body = _execute_one_unpolled_task(api, "exec_stop", wait_seconds=30)
    assert body["status"] == "RUNNING" and body.get("signalTimeout") is True, body


@pytest.mark.django_db(transaction=True)  # the poll reads in a pool thread
def test_begin_stop_sets_stopping_and_wakes_every_long_poll(monkeypatch, settings):
    """``lifecycle.begin_stop()`` (the server's SIGTERM handling, conductor_web.serve)
    sets ``stopping`` and runs the stop callbacks: a long poll waiting on an empty queue
    answers ``[]`` at once instead of holding the stop for its timeout. On PostgreSQL the
    poll waits for the listener's wake-up only, so without the stop's wake it would hold
    its whole timeout (fails after the 60 s bound); on SQLite it looks again every
    ``LONG_POLL_RECHECK_MS`` and sees ``stopping`` then."""
    import asyncio
    import threading

    from apps.core import lifecycle
    from apps.engine import queue

    monkeypatch.setattr(lifecycle, "stopping", threading.Event())
    settings.CONDUCTOR = {**settings.CONDUCTOR, "MAX_LONG_POLL_MS": 600_000}
    queue_name = unique("stop_poll")

    async def main():
        poll = asyncio.ensure_future(queue.poll(task_type=queue_name, worker_id="w", count=1, timeout_ms=600_000))
        await asyncio.sleep(0.3)  # the poll has looked at the queue and waits
        assert not poll.done()
        lifecycle.begin_stop()
        # a bound, not a timing: without the wake-up the poll would wait its 600 s
        return await asyncio.wait_for(poll, timeout=60)

    assert asyncio.run(main()) == []
    assert lifecycle.stopping.is_set()
