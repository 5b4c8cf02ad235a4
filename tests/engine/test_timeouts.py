"""Timeouts and retry delays decided by the sweeper, on a controlled clock
(docs/conductor-notes.md §4.2-4.3; cases 17, 19, 20)."""
from __future__ import annotations

from apps.engine import sweeper
from tests.factories import task_def, unique, workflow_def


def simple(name, ref=None, **kw):
    return {"name": name, "taskReferenceName": ref or name, "type": "SIMPLE", **kw}


def refs(wf):
    return [(t["referenceTaskName"], t["status"], t["retryCount"]) for t in wf["tasks"]]


def test_response_timeout_retries_then_times_out_workflow(api, clock):  # cases/17
    rt = unique("rt_task")
    api.register_task_defs(task_def(rt, retryCount=1, responseTimeoutSeconds=3, timeoutPolicy="TIME_OUT_WF"))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(rt, "rt")]))
    wid = api.start(name)
    first = api.poll_one(rt)
    clock.advance(2.9)
    sweeper.sweep_once()
    assert refs(api.workflow(wid)) == [("rt", "IN_PROGRESS", 0)]
    clock.advance(0.2)
    assert sweeper.sweep_once() == 1
    wf = api.workflow(wid)
    assert wf["status"] == "RUNNING"
    assert refs(wf) == [("rt", "TIMED_OUT", 0), ("rt", "SCHEDULED", 1)]
    assert wf["tasks"][0]["reasonForIncompletion"] == \
        f"responseTimeout: 3 exceeded for the taskId: {first['taskId']} with Task Definition: {rt}"
    # the late answer of the timed-out attempt is accepted and ignored
    api.ok(api.update(first, "COMPLETED", {"late": True}))
    assert refs(api.workflow(wid))[0] == ("rt", "TIMED_OUT", 0)
    second = api.poll_one(rt)
    clock.advance(3.1)
    sweeper.sweep_once()
    wf = api.workflow(wid)
    assert wf["status"] == "TIMED_OUT"
    assert wf["reasonForIncompletion"].startswith(f"Task {second['taskId']} failed with status: TIMED_OUT")


def test_callback_after_seconds_extends_the_response_timeout(api, clock):
    rt = unique("rt_task")
    api.register_task_defs(task_def(rt, retryCount=0, responseTimeoutSeconds=2))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(rt, "rt")]))
    wid = api.start(name)
    task = api.poll_one(rt)
    api.ok(api.update(task, "IN_PROGRESS", {"step": 1}, callbackAfterSeconds=5))
    assert api.poll(rt) == []
    clock.advance(4)
    sweeper.sweep_once()
    assert refs(api.workflow(wid)) == [("rt", "SCHEDULED", 0)]
    clock.advance(1.1)
    again = api.poll_one(rt)
    assert again["taskId"] == task["taskId"] and again["pollCount"] == 2
    api.complete(again)
    assert api.workflow(wid)["status"] == "COMPLETED"


def test_exponential_backoff_delays(api, clock):  # cases/19
    t = unique("backoff")
    api.register_task_defs(task_def(t, retryCount=3, retryDelaySeconds=2, retryLogic="EXPONENTIAL_BACKOFF"))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(t, "t")]))
    wid = api.start(name)
    for delay in (2, 4, 8):
        api.ok(api.update(api.poll_one(t), "FAILED", reasonForIncompletion="again"))
        clock.advance(delay - 0.1)
        assert api.poll(t) == [], delay
        clock.advance(0.1)
    api.complete(api.poll_one(t))
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    assert [x[2] for x in refs(wf)] == [0, 1, 2, 3]


def test_optional_task_uses_its_retries(api):  # cases/20
    opt, nxt = unique("opt_retry"), unique("next_step")
    api.register_task_defs(task_def(opt, retryCount=2), task_def(nxt))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(opt, "opt", optional=True), simple(nxt, "next")]))
    wid = api.start(name)
    for reason in ("r1", "r2", "r3"):
        api.ok(api.update(api.poll_one(opt), "FAILED", reasonForIncompletion=reason))
    api.complete(api.poll_one(nxt))
    wf = api.workflow(wid)
    assert wf["status"] == "COMPLETED"
    assert refs(wf) == [("opt", "FAILED", 0), ("opt", "FAILED", 1), ("opt", "COMPLETED_WITH_ERRORS", 2), ("next", "COMPLETED", 0)]


def test_terminal_error_skips_retries(api):
    t = unique("t")
    api.register_task_defs(task_def(t, retryCount=3))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(t, "t")]))
    wid = api.start(name)
    task = api.poll_one(t)
    api.ok(api.update(task, "FAILED_WITH_TERMINAL_ERROR", reasonForIncompletion="card declined"))
    wf = api.workflow(wid)
    assert wf["status"] == "FAILED" and len(wf["tasks"]) == 1
    assert wf["reasonForIncompletion"] == f"Task {task['taskId']} failed with status: FAILED and reason: 'card declined'"


def test_task_timeout_policies(api, clock):
    t = unique("slow")
    api.register_task_defs(task_def(t, retryCount=0, timeoutSeconds=10, responseTimeoutSeconds=5, timeoutPolicy="TIME_OUT_WF"))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(t, "t")]))
    wid = api.start(name)
    task = api.poll_one(t)
    for _ in range(3):  # a worker that keeps the lease but never finishes
        clock.advance(3)
        api.ok(api.update(task, "IN_PROGRESS", extendLease=True))
        sweeper.sweep_once()
    clock.advance(1.1)
    sweeper.sweep_once()
    wf = api.workflow(wid)
    assert wf["status"] == "TIMED_OUT"
    assert wf["reasonForIncompletion"].startswith("Task timed out after 10 seconds. Timeout configured as 10 seconds. "
                                                  "Timeout policy configured to TIME_OUT_WF")


def test_poll_timeout_with_retry_policy(api, clock):
    t = unique("nobody")
    api.register_task_defs(task_def(t, retryCount=1, pollTimeoutSeconds=2, timeoutPolicy="RETRY"))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(t, "t")]))
    wid = api.start(name)
    clock.advance(2.1)
    sweeper.sweep_once()
    wf = api.workflow(wid)
    assert refs(wf) == [("t", "TIMED_OUT", 0), ("t", "SCHEDULED", 1)]
    assert wf["tasks"][0]["reasonForIncompletion"].startswith("Task poll timed out after 2 seconds")


def test_workflow_timeout_and_failure_workflow(api, clock):
    t, notify = unique("t"), unique("notify")
    api.register_task_defs(task_def(t), task_def(notify))
    on_fail, name = unique("on_fail"), unique("wf")
    api.register_workflow(workflow_def(on_fail, [simple(notify, "n")]))
    api.register_workflow(workflow_def(name, [simple(t, "t")], timeoutSeconds=5, timeoutPolicy="TIME_OUT_WF",
                                       failureWorkflow=on_fail))
    alert_only = unique("wf")
    api.register_workflow(workflow_def(alert_only, [simple(t, "t")], timeoutSeconds=5))
    wid = api.start(name)
    quiet = api.start(alert_only)
    clock.advance(5.1)
    sweeper.sweep_once()
    wf = api.workflow(wid)
    assert wf["status"] == "TIMED_OUT"
    assert wf["reasonForIncompletion"].startswith("Workflow timed out after 5 seconds. Timeout configured as 5 seconds.")
    assert wf["tasks"][0]["status"] == "CANCELED"
    failure = api.workflow(wf["output"]["conductor.failure_workflow"])
    assert failure["input"]["failureStatus"] == "TIMED_OUT"
    assert api.workflow(quiet)["status"] == "RUNNING"  # ALERT_ONLY (the default) only alerts


def test_wait_task_fires_on_time(api, clock):
    name = unique("wf")
    after = unique("after")
    api.register_task_defs(task_def(after))
    api.register_workflow(workflow_def(name, [{"name": "w", "taskReferenceName": "w", "type": "WAIT",
                                               "inputParameters": {"duration": "2s"}}, simple(after, "after")]))
    wid = api.start(name)
    clock.advance(1.9)
    sweeper.sweep_once()
    assert api.workflow(wid)["tasks"][0]["status"] == "IN_PROGRESS"
    clock.advance(0.1)
    assert sweeper.sweep_once() == 1
    wf = api.workflow(wid)
    assert wf["tasks"][0]["status"] == "COMPLETED"
    assert api.poll_one(after)["referenceTaskName"] == "after"


def test_total_timeout_across_attempts(api, clock):
    t = unique("total")
    api.register_task_defs(task_def(t, retryCount=5, retryDelaySeconds=2, totalTimeoutSeconds=5, timeoutSeconds=5,
                                    timeoutPolicy="TIME_OUT_WF"))
    name = unique("wf")
    api.register_workflow(workflow_def(name, [simple(t, "t")]))
    wid = api.start(name)
    api.ok(api.update(api.poll_one(t), "FAILED", reasonForIncompletion="flaky"))
    clock.advance(2)
    api.ok(api.update(api.poll_one(t), "FAILED", reasonForIncompletion="flaky"))
    clock.advance(2)
    task = api.poll_one(t)
    assert task["retryCount"] == 2
    clock.advance(1)
    sweeper.sweep_once()
    wf = api.workflow(wid)
    assert wf["status"] == "TIMED_OUT"
    assert refs(wf)[-1] == ("t", "TIMED_OUT", 2)
    assert wf["tasks"][-1]["reasonForIncompletion"] == (
        f"Task {t}/{task['taskId']} exceeded total timeout of 5 seconds (elapsed 5 seconds across all attempts "
        "including retry delays). Timeout policy: TIME_OUT_WF")
