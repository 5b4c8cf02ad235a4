"""Execution history (apps/engine/history.py): every change of an execution appends its
events in the change's own transaction, operator actions say who and why, what a rerun or
a restart overwrites is kept, the history is bounded and goes with its execution."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction

from apps.core.clock import now_ms
from apps.engine import executor, history, recovery, store, sweeper
from apps.engine.models import ExecutionEvent, WorkflowExecution
from tests.factories import task_def, unique, workflow_def


def simple(name, ref=None, **kw):
    return {"name": name, "taskReferenceName": ref or name, "type": "SIMPLE", **kw}


def events(wid: str) -> list[ExecutionEvent]:
    return list(ExecutionEvent.objects.filter(workflow_id=wid).order_by("id"))


def kinds(wid: str) -> list[str]:
    return [e.kind for e in events(wid)]


def two_step(api, **task_kw):
    a, b = unique("h_a"), unique("h_b")
    api.register_task_defs(task_def(a, **task_kw), task_def(b, **task_kw))
    name = unique("h_wf")
    api.register_workflow(workflow_def(name, [simple(a, "a"), simple(b, "b")]))
    return name, a, b


def test_each_change_appends_its_events(api):
    name, a, b = two_step(api, retryCount=0)
    wid = api.start(name, {"x": 1})
    assert kinds(wid) == ["workflow.started", "task.scheduled"]
    started, scheduled = events(wid)
    assert started.data["status"] == "RUNNING" and started.data["version"] == 1
    assert scheduled.data["ref"] == "a" and scheduled.data["status"] == "SCHEDULED" and scheduled.task_id

    first = api.poll_one(a, worker_id="w-7")
    polled = events(wid)[-1]
    assert (polled.kind, polled.task_id, polled.data["workerId"], polled.data["to"]) == \
        ("task.polled", first["taskId"], "w-7", "IN_PROGRESS")

    api.complete(first, {"big": "y" * 300})
    done, nxt = events(wid)[-2:]
    assert done.kind == "task.updated" and done.data["from"] == "IN_PROGRESS" and done.data["to"] == "COMPLETED"
    assert done.data["outputSize"] >= 300 and done.data["workerId"] == "w-7"
    assert nxt.kind == "task.scheduled" and nxt.data["ref"] == "b"

    second = api.poll_one(b)
    api.ok(api.update(second, "FAILED", reasonForIncompletion="disk full"))
    failed, wf_status = events(wid)[-2:]
    assert failed.data["to"] == "FAILED" and failed.data["reason"] == "disk full"
    assert wf_status.kind == "workflow.status" and (wf_status.data["from"], wf_status.data["to"]) == ("RUNNING", "FAILED")

    api.ok(api.post(f"/workflow/{wid}/retry"), 204)
    tail = events(wid)[-3:]
    assert [e.kind for e in tail] == ["action", "task.retried", "workflow.status"]
    assert tail[0].data["action"] == "retry" and tail[0].data["by"] == "api"
    assert tail[1].data["retriedTaskId"] == second["taskId"] and tail[1].data["retryCount"] == 1
    # seq is a total order
    seqs = [e.id for e in events(wid)]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_operator_actions_record_who_and_why(api):
    name, a, b = two_step(api)
    wid = api.start(name)
    api.ok(api.put(f"/workflow/{wid}/pause"))
    api.ok(api.put(f"/workflow/{wid}/resume"))
    api.ok(api.delete(f"/workflow/{wid}", params={"reason": "wrong input"}))
    actions = [e.data for e in events(wid) if e.kind == "action"]
    assert [x["action"] for x in actions] == ["pause", "resume", "terminate"]
    assert actions[2]["reason"] == "wrong input" and actions[2]["by"] == "api"
    canceled = [e for e in events(wid) if e.kind == "task.canceled"]
    assert len(canceled) == 1 and canceled[0].data["ref"] == "a"
    assert events(wid)[-1].data == {"from": "RUNNING", "to": "TERMINATED", "reason": "wrong input"}

    # an action inside history.acting (the UI's perform) names the operator
    with history.acting("user:alice", reason="try again", action="restart", workflow_id=wid):
        recovery.workflow_restart(workflow_id=wid)
    action = next(e for e in reversed(events(wid)) if e.kind == "action")
    assert action.data["action"] == "restart" and action.data["by"] == "user:alice"
    assert action.data["reason"] == "try again" and action.data["params"] == {"useLatestDefinitions": False}


def test_skip_and_timeouts(api, clock):
    rt = unique("h_rt")
    api.register_task_defs(task_def(rt, retryCount=0, responseTimeoutSeconds=2, timeoutPolicy="TIME_OUT_WF"))
    name = unique("h_wf")
    later = unique("h_later")
    api.register_task_defs(task_def(later))
    api.register_workflow(workflow_def(name, [simple(rt, "rt"), simple(later, "later")]))
    wid = api.start(name)
    api.ok(api.put(f"/workflow/{wid}/skiptask/later"))
    skipped = [e for e in events(wid) if e.kind == "task.skipped"]
    assert len(skipped) == 1 and skipped[0].data["ref"] == "later" and skipped[0].data["status"] == "SKIPPED"
    assert any(e.kind == "action" and e.data["action"] == "skip" for e in events(wid))
    api.poll_one(rt)
    clock.advance(2.5)
    sweeper.sweep_once()
    timed_out = [e for e in events(wid) if e.kind == "task.timed_out"]
    assert len(timed_out) == 1 and timed_out[0].data["to"] == "TIMED_OUT"
    assert events(wid)[-1].data["to"] == "TIMED_OUT"


def test_rerun_keeps_what_it_overwrites(api):
    name, a, b = two_step(api)
    wid = api.start(name)
    ta = api.poll_one(a)
    api.complete(ta, {"first": 1})
    tb = api.poll_one(b)
    api.complete(tb, {"answer": 42})
    before_rerun = events(wid)[-1].id
    api.ok(api.post(f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid, "reRunFromTaskId": ta["taskId"],
                                                "taskInput": {"again": True}}))
    action = next(e for e in events(wid) if e.kind == "action")
    assert action.data["action"] == "rerun" and action.data["params"]["reRunFromTaskId"] == ta["taskId"]
    snap = {t["ref"]: t for t in action.data["tasksBefore"]}
    assert snap["a"]["status"] == "COMPLETED" and snap["b"]["output"] == {"answer": 42}
    assert action.data["workflowBefore"]["status"] == "COMPLETED"
    removed = [e for e in events(wid) if e.kind == "task.removed"]
    assert [e.task_id for e in removed] == [tb["taskId"]]
    # the attempt of a is overwritten in place: SCHEDULED again with the same id
    assert any(e.kind == "task.updated" and e.task_id == ta["taskId"] and e.data["to"] == "SCHEDULED"
               for e in events(wid))

    # replay: just before the rerun both tasks were COMPLETED; just after, only a, SCHEDULED
    wf = store.load_workflow(wid)
    then, at = history.state_at(wf, before_rerun)
    assert at["seq"] == before_rerun and then.status == "COMPLETED"
    assert [(t.reference_task_name, t.status) for t in then.tasks] == [("a", "COMPLETED"), ("b", "COMPLETED")]
    now_state, _ = history.state_at(wf, events(wid)[-1].id)
    assert [(t.reference_task_name, t.status) for t in now_state.tasks] == [("a", "SCHEDULED")]
    assert now_state.status == "RUNNING"


def test_restart_with_latest_definition_keeps_the_replaced_snapshot(api):
    name, a, b = two_step(api)
    wid = api.start(name)
    api.ok(api.delete(f"/workflow/{wid}", params={"reason": "stop"}))
    c = unique("h_c")
    api.register_task_defs(task_def(c))
    api.register_workflow(workflow_def(name, [simple(c, "c")], version=2))
    before = events(wid)[-1].id
    api.ok(api.post(f"/workflow/{wid}/restart", params={"useLatestDefinitions": True}), 204)
    replaced = next(e for e in events(wid) if e.kind == "definition.replaced")
    assert (replaced.data["fromVersion"], replaced.data["toVersion"]) == (1, 2)
    assert [t["taskReferenceName"] for t in replaced.data["definition"]["tasks"]] == ["a", "b"]
    wf = store.load_workflow(wid)
    then, _ = history.state_at(wf, before)
    assert then.workflow_version == 1 and [t["taskReferenceName"] for t in then.definition["tasks"]] == ["a", "b"]
    assert [(t.reference_task_name, t.status) for t in then.tasks] == [("a", "CANCELED")]
    latest, _ = history.state_at(wf, events(wid)[-1].id)
    assert latest.workflow_version == 2 and [t.reference_task_name for t in latest.tasks] == ["c"]


@pytest.mark.parametrize("change", ["pause", "terminate", "update"])
def test_a_change_rolled_back_leaves_no_event(api, change):
    name, a, b = two_step(api)
    wid = api.start(name)
    task = api.poll_one(a)
    count = ExecutionEvent.objects.filter(workflow_id=wid).count()

    class Abort(Exception):
        pass

    with pytest.raises(Abort):
        with transaction.atomic():
            if change == "pause":
                executor.workflow_pause(workflow_id=wid)
            elif change == "terminate":
                executor.workflow_terminate(workflow_id=wid, reason="no")
            else:
                executor.task_update(task_result={"workflowInstanceId": wid, "taskId": task["taskId"],
                                                  "status": "COMPLETED", "outputData": {}})
            assert ExecutionEvent.objects.filter(workflow_id=wid).count() > count  # written in the change...
            raise Abort()
    assert ExecutionEvent.objects.filter(workflow_id=wid).count() == count  # ...and gone with it
    assert api.workflow(wid)["status"] == "RUNNING"


def test_a_refused_action_appends_nothing(api):
    name, a, b = two_step(api)
    wid = api.start(name)
    count = ExecutionEvent.objects.filter(workflow_id=wid).count()
    assert api.post(f"/workflow/{wid}/restart").status_code == 409
    assert ExecutionEvent.objects.filter(workflow_id=wid).count() == count


def test_the_cap_holds_and_transitions_are_kept(api, settings):
    settings.CONDUCTOR = {**settings.CONDUCTOR, "HISTORY_MAX_EVENTS": 12, "HISTORY_COMPACT_EVERY": 1}
    t = unique("h_loop")
    api.register_task_defs(task_def(t))
    name = unique("h_wf")
    api.register_workflow(workflow_def(name, [simple(t, "t")]))
    wid = api.start(name)
    # a worker checks back 15 times (IN_PROGRESS + callback): 30 events of detail
    for _ in range(15):
        task = api.poll_one(t)
        api.ok(api.update(task, "IN_PROGRESS", callbackAfterSeconds=0))
    api.complete(api.poll_one(t))
    rows = events(wid)
    assert len(rows) <= 12 + 16 + 1  # the cap, plus the status transitions kept whole
    assert not any(e.kind == "task.polled" for e in rows[:-3])  # old polls compacted away
    assert any(e.kind == "history.compacted" for e in rows)
    transitions = [(e.data.get("from"), e.data.get("to")) for e in rows if e.kind == "task.updated"]
    assert transitions.count(("IN_PROGRESS", "SCHEDULED")) == 15 and transitions[-1] == ("IN_PROGRESS", "COMPLETED")
    assert [e.data["to"] for e in rows if e.kind == "workflow.status"] == ["COMPLETED"]
    assert any(e.data.get("compacted") for e in rows)
    assert sum(e.kind == "history.compacted" for e in rows) == 1  # one marker, with the totals
    marker = next(e for e in rows if e.kind == "history.compacted")
    assert marker.data["deleted"] >= 10


def test_an_event_is_bounded(api, settings):
    settings.CONDUCTOR = {**settings.CONDUCTOR, "HISTORY_EVENT_MAX_BYTES": 3000}
    t = unique("h_many")
    api.register_task_defs(task_def(t))
    name = unique("h_wf")
    api.register_workflow(workflow_def(name, [simple(t, f"t{i}") for i in range(40)]))
    wid = api.start(name)
    for _ in range(40):
        api.complete(api.poll_one(t), {"blob": "z" * 1500})
    api.ok(api.post(f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid}))
    action = next(e for e in events(wid) if e.kind == "action")
    assert len(history.bounded(action.data, 10**9)) <= 3000
    assert action.data["tasksBeforeTotal"] == 40 and 0 < len(action.data["tasksBefore"]) < 40
    assert "output" not in action.data["tasksBefore"][0]


def _fields_flow(api):
    """set v=1, task a, set v=2, task b; the workflow's output is b's."""
    a, b = unique("hf_a"), unique("hf_b")
    api.register_task_defs(task_def(a), task_def(b))
    name = unique("hf_wf")
    api.register_workflow(workflow_def(name, [
        {"name": "set1", "taskReferenceName": "set1", "type": "SET_VARIABLE", "inputParameters": {"v": 1}},
        simple(a, "a"),
        {"name": "set2", "taskReferenceName": "set2", "type": "SET_VARIABLE", "inputParameters": {"v": 2}},
        simple(b, "b")], outputParameters={"answer": "${b.output.answer}"}))
    return name, a, b


def _at(wf, kind, pred=lambda e: True, nth=0):
    """The seq of the ``nth`` event of ``kind`` matching ``pred``."""
    return [e.id for e in events(wf.workflow_id) if e.kind == kind and pred(e)][nth]


def test_workflow_input_output_and_variables_are_replayed(api):
    name, a, b = _fields_flow(api)
    wid = api.start(name, {"order": 7}, correlationId="first")
    api.complete(api.poll_one(a), {"x": 1})
    api.complete(api.poll_one(b), {"answer": 42})
    started_at = api.workflow(wid)["startTime"]
    updated = [e for e in events(wid) if e.kind == "workflow.updated"]
    # set1 ran within the start (the row was inserted with v=1): two changes since
    assert [e.data["fields"] for e in updated] == [["variables"], ["output"]]
    assert [e.data["before"] for e in updated] == [{"variables": {"v": 1}}, {"output": {}}]
    assert updated[1].data["sizes"] == {"output": len('{"answer":42}')}
    done = events(wid)[-1].id
    api.ok(api.post(f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid, "workflowInput": {"order": 8},
                                                "correlationId": "second"}))
    rerun = next(e for e in events(wid) if e.kind == "workflow.updated" and "input" in e.data["fields"])
    assert rerun.data["fields"] == ["input", "output", "variables", "createTime", "correlationId"]
    assert rerun.data["before"]["input"] == {"order": 7} and rerun.data["before"]["correlationId"] == "first"

    wf = store.load_workflow(wid, include_tasks=False)
    at = lambda seq: history.moment(wf, seq)  # noqa: E731
    first = at(_at(wf, "task.scheduled", lambda e: e.data["ref"] == "a"))
    assert (first.state.input, first.state.variables, first.state.output) == ({"order": 7}, {"v": 1}, {})
    assert first.unknown == {} and first.rerun is None
    # the events of one change: tasks first, then the workflow's fields, then its status
    assert at(_at(wf, "task.scheduled", lambda e: e.data["ref"] == "b")).state.variables == {"v": 1}
    second = at(_at(wf, "workflow.updated"))
    assert second.state.variables == {"v": 2} and second.state.output == {}
    ended = at(done)
    assert ended.state.status == "COMPLETED" and ended.state.output == {"answer": 42}
    assert (ended.state.input, ended.state.correlation_id, ended.state.create_time) == ({"order": 7}, "first", started_at)
    assert ended.state.end_time and ended.rerun is None
    now = at(events(wid)[-1].id)
    assert (now.state.input, now.state.output, now.state.variables) == ({"order": 8}, {}, {"v": 1})
    assert now.state.correlation_id == "second" and now.state.create_time == api.workflow(wid)["startTime"]
    assert now.rerun["action"] == "rerun" and now.rerun["seq"] == next(e.id for e in events(wid) if e.kind == "action")
    assert history.last_rerun(wid) == now.rerun and history.last_rerun(wid, upto=done) is None


def test_replayed_fields_are_bounded_and_say_what_is_missing(api, settings):
    settings.CONDUCTOR = {**settings.CONDUCTOR, "HISTORY_EVENT_MAX_BYTES": 2000}
    name, a, b = _fields_flow(api)
    big = {"blob": "q" * 5000}
    wid = api.start(name, big)
    api.complete(api.poll_one(a))
    api.complete(api.poll_one(b), {"answer": "r" * 3000})
    done = events(wid)[-1].id
    api.ok(api.post(f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid, "workflowInput": {"small": 1}}))
    change = next(e for e in events(wid) if e.kind == "workflow.updated" and "input" in e.data["fields"])
    assert len(history.bounded(change.data, 10**9)) <= 2000
    # the small ones kept, the large ones counted
    assert change.data["before"]["variables"] == {"v": 2} and change.data["before"]["input"]["omittedBytes"] > 5000
    assert change.data["before"]["output"]["omittedBytes"] > 3000

    wf = store.load_workflow(wid, include_tasks=False)
    then = history.moment(wf, done)
    assert then.state.variables == {"v": 2}
    assert set(then.unknown) == {"input", "output"} and "bytes then" in then.unknown["input"]
    assert then.state.input == {} and then.state.output == {}  # never the present value shown as the past

    # an execution that began before its fields were recorded: unknown, not guessed
    started = events(wid)[0]
    ExecutionEvent.objects.filter(pk=started.pk).update(data={"status": "RUNNING", "version": 1})
    legacy = history.moment(wf, done)
    assert set(legacy.unknown) == set(history.TRACKED_FIELDS) and "began before" in legacy.unknown["variables"]


def test_a_compacted_field_change_is_unknown_not_guessed(api):
    name, a, b = _fields_flow(api)
    wid = api.start(name, {"n": 1})
    api.complete(api.poll_one(a))
    first_set = next(e for e in events(wid) if e.kind == "workflow.updated")
    ExecutionEvent.objects.filter(pk=first_set.pk).update(data={"fields": ["variables"], "compacted": True})
    wf = store.load_workflow(wid, include_tasks=False)
    then = history.moment(wf, events(wid)[1].id)
    assert then.unknown == {"variables": "detail compacted out of the history"} and then.state.input == {"n": 1}


def test_a_rerun_never_names_the_execution_as_its_own_origin(api):
    name, a, b = two_step(api)
    wid = api.start(name)
    api.ok(api.delete(f"/workflow/{wid}", params={"reason": "stop"}))
    WorkflowExecution.objects.filter(pk=wid).update(re_run_from_workflow_id=wid)  # as earlier versions wrote it
    api.ok(api.post(f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid}))
    assert api.workflow(wid).get("reRunFromWorkflowId") is None  # Conductor reruns in place and leaves it unset
    assert history.last_rerun(wid)["action"] == "rerun"


def test_history_goes_with_remove_and_retention(api):
    name, a, b = two_step(api)
    gone = api.start(name)
    api.ok(api.delete(f"/workflow/{gone}", params={"reason": "x"}))
    assert events(gone)
    api.ok(api.delete(f"/workflow/{gone}/remove"))
    assert not events(gone)

    old = api.start(name)
    api.ok(api.delete(f"/workflow/{old}", params={"reason": "x"}))
    WorkflowExecution.objects.filter(pk=old).update(end_time=now_ms() - 40 * 86_400_000)
    kept = api.start(name)
    call_command("purge_executions", "--older-than", "30d", "--status", "TERMINATED", stdout=StringIO())
    assert not WorkflowExecution.objects.filter(pk=old).exists() and not events(old)
    assert events(kept)


def _waits(api, refs=("w1", "w2", "w3")):
    name = unique("h_wait")
    api.register_workflow(workflow_def(name, [{"name": r, "taskReferenceName": r, "type": "WAIT"} for r in refs]))
    return api.start(name)


def test_completing_wait_tasks_is_an_action(api, operator_user):
    from apps.ui import actions

    wid = _waits(api)
    # by reference through the API
    api.ok(api.post(f"/tasks/{wid}/w1/COMPLETED", {"ok": 1}))
    # a signal through the API
    api.ok(api.post(f"/tasks/{wid}/COMPLETED/signal", {"ok": 2}))
    # "Complete task" in the UI
    w3 = next(t for t in api.workflow(wid)["tasks"] if t["referenceTaskName"] == "w3")
    result = actions.perform(operator_user, "complete_task", wid, {"task_id": w3["taskId"], "output": {"ok": 3},
                                                                     "reason": "checked by hand"})
    assert result.ok, result.message
    acts = [e.data for e in events(wid) if e.kind == "action"]
    assert [(a["action"], a.get("by")) for a in acts] == [
        ("update_task_by_ref", "api"), ("signal", "api"), ("complete_task", f"user:{operator_user.username}")]
    assert acts[0]["params"] == {"taskReferenceName": "w1", "status": "COMPLETED"}
    assert acts[2]["reason"] == "checked by hand"
    done = [e.data["ref"] for e in events(wid) if e.kind == "task.updated" and e.data["to"] == "COMPLETED"]
    assert done == ["w1", "w2", "w3"]
    assert events(wid)[-1].data["to"] == "COMPLETED"


def test_an_async_system_task_started_by_the_cluster_is_recorded(api, settings):
    name, a, _ = two_step(api)
    wid = api.start(name)
    task_id = api.workflow(wid)["tasks"][0]["taskId"]
    assert executor.system_task_claim(task_id)
    started = events(wid)[-1]
    assert (started.kind, started.task_id, started.data["to"]) == ("task.polled", task_id, "IN_PROGRESS")
    assert started.data["workerId"] == settings.CONDUCTOR["INSTANCE_ID"]
    count = len(events(wid))
    assert executor.system_task_claim(task_id)  # already IN_PROGRESS (a re-run after a crash): no new event
    assert len(events(wid)) == count
