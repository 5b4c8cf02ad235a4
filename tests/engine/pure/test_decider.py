"""The pure decider (apps.engine.decider.decide) over plain WorkflowState/TaskState:
scheduling, completion, retries, optional tasks, timeouts, pause and the next decide time.
Semantics: docs/conductor-notes.md §3, §4.1-4.4."""
from __future__ import annotations

import random

from apps.core.ids import new_id
from apps.engine import decider
from tests.factories import T0, finish, full_task_def, latest, simple_task, start_task, workflow_state


def decide(wf, *, rng=None, **kw):
    """The pure decider with its inputs passed in: random task ids, a seeded random
    source unless the test gives one."""
    return decider.decide(wf, new_id=new_id, rng=rng or random.Random(1), **kw)


def two_step(**def_a):
    """a -> b, both SIMPLE; ``def_a`` overrides the TaskDef of ``a``."""
    return [
        simple_task("task_a", "a", {"x": "${workflow.input.x}"}, task_definition=full_task_def("task_a", **def_a)),
        simple_task("task_b", "b", {"fromA": "${a.output.value}", "wf": "${workflow.input.x}"},
                    task_definition=full_task_def("task_b", retryCount=0)),
    ]


def started(tasks, now=T0, **kw):
    wf = workflow_state(tasks, **kw)
    decide(wf, now_ms=now)
    return wf


# --- scheduling -----------------------------------------------------------------------------------

def test_first_decide_schedules_the_first_task_with_resolved_input():
    wf = workflow_state(two_step(), input={"x": 41})
    outcome = decide(wf, now_ms=T0)
    assert [t.reference_task_name for t in wf.tasks] == ["a"]
    a = wf.tasks[0]
    assert a.status == "SCHEDULED"
    assert a.input_data == {"x": 41}
    assert a.task_def_name == "task_a"
    assert a.task_type == "SIMPLE"
    assert a.seq == 1
    assert a.retry_count == 0
    assert a.scheduled_time == T0
    assert a.visible_at == T0
    assert a.queue_name == "task_a"
    assert a.workflow_id == wf.workflow_id
    assert outcome.new_tasks == [a]
    assert wf.status == "RUNNING"


def test_completing_a_task_schedules_the_next_one():
    wf = started(two_step(), input={"x": 1})
    a = wf.tasks[0]
    start_task(a, T0 + 10)
    finish(a, "COMPLETED", T0 + 20, {"value": "va"})
    outcome = decide(wf, now_ms=T0 + 20)
    assert [t.reference_task_name for t in wf.tasks] == ["a", "b"]
    b = wf.tasks[1]
    assert b.status == "SCHEDULED"
    assert b.seq == 2
    assert b.input_data == {"fromA": "va", "wf": 1}
    assert b.scheduled_time == T0 + 20
    assert a.executed is True
    assert [t.task_id for t in outcome.new_tasks] == [b.task_id]
    assert a.task_id in outcome.updated_tasks
    assert wf.status == "RUNNING"


def test_deciding_again_without_changes_schedules_nothing():
    wf = started(two_step())
    outcome = decide(wf, now_ms=T0 + 5)
    assert len(wf.tasks) == 1
    assert outcome.new_tasks == []


def test_a_double_underscore_reference_outside_loops_is_an_ordinary_task():
    tasks = [simple_task("send_email", "send__email", task_definition=full_task_def("send_email", retryCount=0)),
             simple_task("task_b", "b", {"sent": "${send__email.output.sent}"},
                         task_definition=full_task_def("task_b", retryCount=0))]
    wf = started(tasks)
    finish(wf.tasks[0], "COMPLETED", T0 + 1, {"sent": True})
    decide(wf, now_ms=T0 + 1)
    assert [t.reference_task_name for t in wf.tasks] == ["send__email", "b"]
    assert wf.tasks[1].input_data == {"sent": True}


# --- completion -----------------------------------------------------------------------------------

def test_workflow_completes_with_resolved_output_parameters():
    wf = started(two_step(), input={"x": 3},
                 outputParameters={"fromA": "${a.output.value}", "fromB": "${b.output.r}", "in": "${workflow.input.x}",
                                   "text": "b said ${b.output.r}"})
    finish(wf.tasks[0], "COMPLETED", T0 + 1, {"value": "va"})
    decide(wf, now_ms=T0 + 1)
    finish(wf.tasks[1], "COMPLETED", T0 + 2, {"r": "rb"})
    decide(wf, now_ms=T0 + 2)
    assert wf.status == "COMPLETED"
    assert wf.output == {"fromA": "va", "fromB": "rb", "in": 3, "text": "b said rb"}
    assert wf.end_time == T0 + 2
    assert wf.reason_for_incompletion is None


def test_workflow_output_is_the_last_task_output_without_output_parameters():
    wf = started(two_step())
    finish(wf.tasks[0], "COMPLETED", T0 + 1, {"value": "va"})
    decide(wf, now_ms=T0 + 1)
    finish(wf.tasks[1], "COMPLETED", T0 + 2, {"last": True, "n": 2})
    decide(wf, now_ms=T0 + 2)
    assert wf.status == "COMPLETED"
    assert wf.output == {"last": True, "n": 2}


def test_decide_on_a_terminal_workflow_changes_nothing():
    wf = started(two_step())
    wf.status = "TERMINATED"
    before = [(t.task_id, t.status) for t in wf.tasks]
    outcome = decide(wf, now_ms=T0 + 100)
    assert [(t.task_id, t.status) for t in wf.tasks] == before
    assert outcome.new_tasks == [] and outcome.updated_tasks == {}


# --- retries --------------------------------------------------------------------------------------

def test_failed_task_with_retries_left_gets_a_new_attempt():
    wf = started(two_step(retryCount=2, retryDelaySeconds=5), input={"x": 9})
    a = wf.tasks[0]
    start_task(a, T0 + 10)
    finish(a, "FAILED", T0 + 20, {"err": 1}, reason="boom")
    now = T0 + 20
    outcome = decide(wf, now_ms=now)
    assert [t.reference_task_name for t in wf.tasks] == ["a", "a"]
    retry = wf.tasks[1]
    assert retry.task_id != a.task_id
    assert retry.status == "SCHEDULED"
    assert retry.retry_count == 1
    assert retry.retried_task_id == a.task_id
    assert retry.visible_at == now + 5000
    assert retry.start_delay_seconds == 5
    assert retry.callback_after_seconds == 5
    assert retry.input_data == {"x": 9}
    assert retry.output_data == {}
    assert retry.worker_id is None
    assert retry.start_time == 0
    assert retry.seq == 2
    assert retry.first_scheduled_time == a.scheduled_time
    assert a.retried is True
    assert a.status == "FAILED"
    assert a.reason_for_incompletion == "boom"
    assert wf.status == "RUNNING"
    assert [t.task_id for t in outcome.new_tasks] == [retry.task_id]
    assert a.task_id in outcome.updated_tasks


def test_retry_attempt_is_retried_again_until_exhausted_then_the_workflow_fails():
    wf = started(two_step(retryCount=1, retryDelaySeconds=0))
    finish(wf.tasks[0], "FAILED", T0 + 1, reason="first")
    decide(wf, now_ms=T0 + 1)
    second = wf.tasks[1]
    assert second.retry_count == 1
    finish(second, "FAILED", T0 + 2, reason="second time")
    decide(wf, now_ms=T0 + 2)
    assert len(wf.tasks) == 2
    assert wf.status == "FAILED"
    assert wf.reason_for_incompletion == \
        f"Task {second.task_id} failed with status: FAILED and reason: 'second time'"
    assert wf.end_time == T0 + 2
    assert second.status == "FAILED"
    assert "a" in wf.failed_reference_task_names


def test_retries_exhausted_fails_the_workflow_with_conductors_reason():
    wf = started(two_step(retryCount=0))
    a = wf.tasks[0]
    finish(a, "FAILED", T0 + 1, reason="no luck")
    decide(wf, now_ms=T0 + 1)
    assert wf.status == "FAILED"
    assert wf.reason_for_incompletion == f"Task {a.task_id} failed with status: FAILED and reason: 'no luck'"
    assert [t.reference_task_name for t in wf.tasks] == ["a"]
    assert wf.failed_reference_task_names == ["a"]
    assert wf.failed_task_names == ["task_a"]


def test_workflow_task_retry_count_overrides_the_task_def():
    tasks = two_step(retryCount=5)
    tasks[0]["retryCount"] = 0
    wf = started(tasks)
    finish(wf.tasks[0], "FAILED", T0 + 1, reason="r")
    decide(wf, now_ms=T0 + 1)
    assert wf.status == "FAILED"
    assert len(wf.tasks) == 1


def test_failed_with_terminal_error_is_never_retried():
    wf = started(two_step(retryCount=3, retryDelaySeconds=0))
    a = wf.tasks[0]
    finish(a, "FAILED_WITH_TERMINAL_ERROR", T0 + 1, reason="fatal")
    decide(wf, now_ms=T0 + 1)
    assert [t.reference_task_name for t in wf.tasks] == ["a"]
    assert a.status == "FAILED_WITH_TERMINAL_ERROR"
    assert a.retried is False
    assert wf.status == "FAILED"
    assert wf.reason_for_incompletion == f"Task {a.task_id} failed with status: FAILED and reason: 'fatal'"


def test_exponential_backoff_retry_visibility():
    wf = started(two_step(retryCount=3, retryLogic="EXPONENTIAL_BACKOFF", retryDelaySeconds=2))
    now = T0
    delays = []
    for attempt in range(3):
        current = wf.tasks[-1]
        now += 1000
        finish(current, "FAILED", now, reason=f"try {attempt}")
        decide(wf, now_ms=now)
        delays.append(wf.tasks[-1].visible_at - now)
        assert wf.tasks[-1].start_delay_seconds == delays[-1] // 1000
    assert delays == [2000, 4000, 8000]
    assert [t.retry_count for t in wf.tasks] == [0, 1, 2, 3]


# --- optional tasks -------------------------------------------------------------------------------

def test_optional_task_failure_is_completed_with_errors_and_the_workflow_continues():
    tasks = two_step(retryCount=0)
    tasks[0]["optional"] = True
    wf = started(tasks)
    a = wf.tasks[0]
    finish(a, "FAILED", T0 + 1, {"value": "partial"}, reason="optional broke")
    decide(wf, now_ms=T0 + 1)
    assert a.status == "COMPLETED_WITH_ERRORS"
    assert [t.reference_task_name for t in wf.tasks] == ["a", "b"]
    assert wf.tasks[1].status == "SCHEDULED"
    assert wf.status == "RUNNING"
    finish(wf.tasks[1], "COMPLETED", T0 + 2, {"done": 1})
    decide(wf, now_ms=T0 + 2)
    assert wf.status == "COMPLETED"


def test_optional_task_with_terminal_error_continues_too():
    tasks = two_step(retryCount=2)
    tasks[0]["optional"] = True
    wf = started(tasks)
    finish(wf.tasks[0], "FAILED_WITH_TERMINAL_ERROR", T0 + 1, reason="fatal")
    decide(wf, now_ms=T0 + 1)
    assert wf.tasks[0].status == "COMPLETED_WITH_ERRORS"
    assert [t.reference_task_name for t in wf.tasks] == ["a", "b"]
    assert wf.status == "RUNNING"


# --- timeouts -------------------------------------------------------------------------------------

def test_response_timeout_times_out_the_task_and_retries_it():
    wf = started(two_step(retryCount=1, retryDelaySeconds=0, responseTimeoutSeconds=10))
    a = wf.tasks[0]
    start_task(a, T0 + 1000)
    decide(wf, now_ms=T0 + 1000 + 9_999)
    assert a.status == "IN_PROGRESS" and len(wf.tasks) == 1
    now = T0 + 1000 + 10_000
    decide(wf, now_ms=now)
    assert a.status == "TIMED_OUT"
    assert a.reason_for_incompletion == \
        f"responseTimeout: 10 exceeded for the taskId: {a.task_id} with Task Definition: task_a"
    assert a.end_time == now
    assert a.retried is True
    retry = wf.tasks[1]
    assert retry.status == "SCHEDULED" and retry.retry_count == 1 and retry.retried_task_id == a.task_id
    assert wf.status == "RUNNING"


def test_response_timeout_applies_whatever_the_timeout_policy():
    wf = started(two_step(retryCount=0, responseTimeoutSeconds=5, timeoutPolicy="ALERT_ONLY"))
    a = wf.tasks[0]
    start_task(a, T0)
    decide(wf, now_ms=T0 + 5000)
    assert a.status == "TIMED_OUT"
    assert wf.status == "TIMED_OUT"
    assert wf.reason_for_incompletion == (
        f"Task {a.task_id} failed with status: TIMED_OUT and reason: "
        f"'responseTimeout: 5 exceeded for the taskId: {a.task_id} with Task Definition: task_a'")


def test_response_timeout_counts_from_the_last_update():
    wf = started(two_step(retryCount=0, responseTimeoutSeconds=10))
    a = wf.tasks[0]
    start_task(a, T0)
    a.update_time = T0 + 8000  # e.g. a lease extension
    decide(wf, now_ms=T0 + 15_000)
    assert a.status == "IN_PROGRESS"
    decide(wf, now_ms=T0 + 18_000)
    assert a.status == "TIMED_OUT"


def test_response_timeout_zero_disables_it():
    wf = started(two_step(retryCount=0, responseTimeoutSeconds=0))
    a = wf.tasks[0]
    start_task(a, T0)
    decide(wf, now_ms=T0 + 10 * 86_400_000)
    assert a.status == "IN_PROGRESS"
    assert wf.status == "RUNNING"


def test_task_timeout_with_time_out_wf_times_out_the_workflow():
    wf = started(two_step(retryCount=2, timeoutSeconds=30, responseTimeoutSeconds=30, timeoutPolicy="TIME_OUT_WF"))
    a = wf.tasks[0]
    start_task(a, T0)
    a.update_time = T0 + 29_000  # keeps the response timeout quiet
    decide(wf, now_ms=T0 + 29_999)
    assert a.status == "IN_PROGRESS"
    decide(wf, now_ms=T0 + 30_000)
    reason = "Task timed out after 30 seconds. Timeout configured as 30 seconds. Timeout policy configured to TIME_OUT_WF"
    assert a.status == "TIMED_OUT"
    assert a.reason_for_incompletion == reason
    assert wf.status == "TIMED_OUT"
    assert wf.reason_for_incompletion == reason
    assert len(wf.tasks) == 1


def test_task_timeout_with_retry_policy_retries_the_task():
    wf = started(two_step(retryCount=1, retryDelaySeconds=0, timeoutSeconds=30, responseTimeoutSeconds=30,
                          timeoutPolicy="RETRY"))
    a = wf.tasks[0]
    start_task(a, T0)
    a.update_time = T0 + 29_000
    decide(wf, now_ms=T0 + 31_000)
    assert a.status == "TIMED_OUT"
    assert a.reason_for_incompletion == ("Task timed out after 31 seconds. Timeout configured as 30 seconds. "
                                         "Timeout policy configured to RETRY")
    assert wf.status == "RUNNING"
    assert wf.tasks[1].retry_count == 1 and wf.tasks[1].status == "SCHEDULED"


def test_task_timeout_with_alert_only_changes_nothing():
    wf = started(two_step(retryCount=1, timeoutSeconds=30, responseTimeoutSeconds=0, timeoutPolicy="ALERT_ONLY"))
    a = wf.tasks[0]
    start_task(a, T0)
    decide(wf, now_ms=T0 + 300_000)
    assert a.status == "IN_PROGRESS"
    assert len(wf.tasks) == 1
    assert wf.status == "RUNNING"


def test_workflow_timeout_with_time_out_wf():
    wf = started(two_step(), timeoutSeconds=60, timeoutPolicy="TIME_OUT_WF")
    a = wf.tasks[0]
    decide(wf, now_ms=T0 + 59_999)
    assert wf.status == "RUNNING"
    decide(wf, now_ms=T0 + 61_000)
    assert wf.status == "TIMED_OUT"
    assert wf.reason_for_incompletion == ("Workflow timed out after 61 seconds. Timeout configured as 60 seconds. "
                                          "Timeout policy configured to TIME_OUT_WF")
    assert a.status == "CANCELED"
    assert wf.end_time == T0 + 61_000


def test_workflow_timeout_counts_from_the_last_retry():
    wf = started(two_step(), timeoutSeconds=60, timeoutPolicy="TIME_OUT_WF")
    wf.last_retried_time = T0 + 50_000
    decide(wf, now_ms=T0 + 100_000)
    assert wf.status == "RUNNING"
    decide(wf, now_ms=T0 + 110_000)
    assert wf.status == "TIMED_OUT"


def test_workflow_timeout_with_alert_only_does_nothing():
    wf = started(two_step(), timeoutSeconds=60, timeoutPolicy="ALERT_ONLY")
    decide(wf, now_ms=T0 + 3_600_000)
    assert wf.status == "RUNNING"
    assert wf.tasks[0].status == "SCHEDULED"
    assert wf.reason_for_incompletion is None


# --- pause ----------------------------------------------------------------------------------------

def test_paused_workflow_schedules_nothing():
    wf = started(two_step())
    wf.status = "PAUSED"
    finish(wf.tasks[0], "COMPLETED", T0 + 1, {"value": 1})
    outcome = decide(wf, now_ms=T0 + 1)
    assert [t.reference_task_name for t in wf.tasks] == ["a"]
    assert outcome.new_tasks == []
    assert wf.status == "PAUSED"
    wf.status = "RUNNING"  # resume
    decide(wf, now_ms=T0 + 2)
    assert [t.reference_task_name for t in wf.tasks] == ["a", "b"]


def test_paused_fresh_workflow_schedules_nothing():
    wf = workflow_state(two_step(), status="PAUSED")
    decide(wf, now_ms=T0)
    assert wf.tasks == []


# --- next decide time -----------------------------------------------------------------------------

def test_next_decide_at_is_the_earliest_deadline():
    wf = started(two_step(retryCount=0, responseTimeoutSeconds=20, timeoutSeconds=100), timeoutSeconds=600,
                 timeoutPolicy="TIME_OUT_WF")
    # while SCHEDULED: a provisional response-timeout check (a poll does not decide, so the
    # sweeper must look once the earliest possible response deadline has passed)
    assert wf.next_decide_at == T0 + 20_000
    a = wf.tasks[0]
    start_task(a, T0 + 5000)
    decide(wf, now_ms=T0 + 5000)
    assert wf.next_decide_at == T0 + 5000 + 20_000  # the response timeout comes first


def test_next_decide_at_follows_the_task_timeout_when_earlier():
    wf = started(two_step(retryCount=0, responseTimeoutSeconds=50, timeoutSeconds=60))
    a = wf.tasks[0]
    start_task(a, T0)
    a.update_time = T0 + 40_000
    decide(wf, now_ms=T0 + 40_000)
    assert wf.next_decide_at == T0 + 60_000


def test_next_decide_at_is_none_when_nothing_is_due():
    wf = started(two_step(responseTimeoutSeconds=0, timeoutSeconds=0))
    assert wf.next_decide_at is None
    start_task(wf.tasks[0], T0 + 1)
    decide(wf, now_ms=T0 + 1)
    assert wf.next_decide_at is None


def test_next_decide_at_is_cleared_when_the_workflow_ends():
    wf = started(two_step(retryCount=0), timeoutSeconds=600, timeoutPolicy="TIME_OUT_WF")
    assert wf.next_decide_at is not None
    finish(wf.tasks[0], "FAILED", T0 + 1, reason="x")
    decide(wf, now_ms=T0 + 1)
    assert wf.status == "FAILED"
    assert wf.next_decide_at is None


def test_jittered_retry_stays_within_bounds():
    wf = started(two_step(retryCount=1, retryDelaySeconds=1, backoffJitterMs=500))
    finish(wf.tasks[0], "FAILED", T0 + 1, reason="x")
    decide(wf, now_ms=T0 + 1, rng=random.Random(7))
    delay = latest(wf, "a").visible_at - (T0 + 1)
    assert 1000 <= delay <= 1500


# --- timers of system tasks (timer_at) vs poll visibility of worker tasks (visible_at) -------------

def test_wait_duration_is_a_timer_and_a_wait_without_one_has_none():
    wf = started([{"name": "w", "taskReferenceName": "w", "type": "WAIT", "inputParameters": {"duration": "2s"}},
                  {"name": "s", "taskReferenceName": "s", "type": "WAIT", "inputParameters": {}}])
    timed = latest(wf, "w")
    assert (timed.status, timed.timer_at, timed.queue_name) == ("IN_PROGRESS", T0 + 2000, "")
    assert wf.next_decide_at == T0 + 2000
    decide(wf, now_ms=T0 + 1999)
    assert timed.status == "IN_PROGRESS"
    decide(wf, now_ms=T0 + 2000)
    assert timed.status == "COMPLETED"
    untimed = latest(wf, "s")
    assert (untimed.status, untimed.timer_at) == ("IN_PROGRESS", None)
    assert wf.next_decide_at is None  # no timer: nothing for the sweeper to do


def test_a_system_task_retry_waits_on_its_timer_not_on_a_queue():
    inline = {"name": "calc", "taskReferenceName": "calc", "type": "INLINE",
              "inputParameters": {"evaluatorType": "javascript", "expression": "1"},
              "taskDefinition": full_task_def("calc", retryCount=1, retryDelaySeconds=3)}
    wf = workflow_state([inline])
    wf.tasks.append(decider.Decider(wf, now_ms=T0, new_id=new_id, rng=random.Random(1)).new_task(inline))
    first = wf.tasks[0]
    first.seq = 1
    finish(first, "FAILED", T0, reason="boom")
    decide(wf, now_ms=T0)
    retry = latest(wf, "calc")
    assert retry is not first and retry.status == "SCHEDULED"
    assert (retry.timer_at, retry.visible_at, retry.queue_name) == (T0 + 3000, T0, "")
    assert wf.next_decide_at == T0 + 3000
