"""Group commit of the fast path's task updates (``apps.engine.groupcommit``): concurrent
``update-v2`` / ``POST /api/tasks`` calls share one transaction and one COMMIT, each
answered once after it; a call that fails inside a batch is rolled back alone; a crash in
the middle of a batch loses nothing that was acknowledged.

Batches are made deterministic by holding the committer: a first call waits on an event
while the others queue up behind it, so they form exactly one batch when it is let go."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection, transaction
from tests.asgi_client import asgi_call
from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def api() -> Api:
    return Api()


@pytest.fixture
def one_committer(settings):
    settings.CONDUCTOR = {**settings.CONDUCTOR, "GROUP_COMMIT": True, "GROUP_COMMIT_THREADS": 1,
                          "GROUP_COMMIT_MAX_OPS": 64, "GROUP_COMMIT_WINDOW_MS": 0}
    yield
    from apps.engine import groupcommit

    groupcommit.stop()


async def _post(path: str, body: dict) -> tuple[int, bytes]:
    """One request to the ASGI application (the fast path), awaited on the running loop."""
    return await asgi_call("POST", path, body)


async def _in_one_batch(calls: list[tuple[str, dict]]) -> list[tuple[int, bytes]]:
    """Send ``calls`` (path, body) concurrently while the committer is held, so that they
    are executed as one batch; the answers in the order of ``calls``."""
    from apps.engine import groupcommit

    gate, holding = threading.Event(), threading.Event()

    def hold():
        holding.set()
        assert gate.wait(30)

    held = groupcommit.submit(hold)
    assert await asyncio.to_thread(holding.wait, 30)
    requests = [asyncio.ensure_future(_post(path, body)) for path, body in calls]
    for _ in range(3000):  # every call handed to the committer (bounded: 30 s)
        if groupcommit.waiting() == len(calls):
            break
        await asyncio.sleep(0.01)
    assert groupcommit.waiting() == len(calls)
    gate.set()
    await held
    return list(await asyncio.gather(*requests))


def _started(api: Api, n: int) -> tuple[str, list[dict]]:
    """``n`` workflows of two tasks (a, b) of one new type, the a tasks polled by worker w1."""
    task = unique("gc_task")
    name = unique("gc_wf")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "a"), simple_task(task, "b")]))
    for i in range(n):
        api.start(name, {"i": i})
    polled = api.poll(task, count=n, worker_id="w1")
    assert len(polled) == n and {t["referenceTaskName"] for t in polled} == {"a"}
    return task, polled


def _result(task: dict, **extra) -> dict:
    return {"workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"], "status": "COMPLETED",
            "workerId": "w1", **extra}


def test_concurrent_update_v2_calls_share_one_commit_and_each_gets_its_own_next_task(api, one_committer):
    from apps.engine import groupcommit

    n = 12
    task, polled = _started(api, n)
    before = groupcommit.stats()
    answers = asyncio.run(_in_one_batch(
        [("/api/tasks/update-v2", _result(t, outputData={"n": i})) for i, t in enumerate(polled)]))
    after = groupcommit.stats()
    # the held call's batch, then one batch of all n updates: one transaction, one COMMIT
    assert (after["batches"] - before["batches"], after["calls"] - before["calls"]) == (2, n + 1)
    # on PostgreSQL that batch ran fused (store.fused), and was not rolled back
    fused = 1 if connection.vendor == "postgresql" else 0
    assert (after["fused"] - before["fused"], after["fused_rolled_back"] - before["fused_rolled_back"]) == (fused, 0)
    assert [status for status, _ in answers] == [200] * n
    handed = [json.loads(body) for _, body in answers]
    # each caller its own next task: n distinct b tasks, IN_PROGRESS for w1, none handed twice
    assert len({t["taskId"] for t in handed}) == n
    assert {(t["referenceTaskName"], t["status"], t["workerId"]) for t in handed} == {("b", "IN_PROGRESS", "w1")}
    for i, t in enumerate(polled):
        got = api.task(t["taskId"])
        assert (got["status"], got["outputData"]) == ("COMPLETED", {"n": i})
        # each history in its order: a scheduled, polled, updated; b scheduled, then polled
        # (by one of the n callers)
        b = [x["taskId"] for x in api.workflow(t["workflowInstanceId"], include_tasks=True)["tasks"]
             if x["referenceTaskName"] == "b"]
        events = api.get(f"/workflow/{t['workflowInstanceId']}/history").json()["events"]
        assert [(e["kind"], e.get("taskId")) for e in events if e["kind"].startswith("task.")] == [
            ("task.scheduled", t["taskId"]), ("task.polled", t["taskId"]), ("task.updated", t["taskId"]),
            ("task.scheduled", b[0]), ("task.polled", b[0])]
    # and again, unheld: every workflow completes, nothing left on the queue
    async def unheld():
        return await asyncio.gather(*[_post("/api/tasks/update-v2", _result(t)) for t in handed])

    answers = asyncio.run(unheld())
    assert [status for status, _ in answers] == [204] * n
    for t in handed:
        wf = api.workflow(t["workflowInstanceId"], include_tasks=True)
        assert wf["status"] == "COMPLETED"
        assert [(x["referenceTaskName"], x["status"]) for x in wf["tasks"]] == [("a", "COMPLETED"), ("b", "COMPLETED")]
    assert api.poll(task, count=5, worker_id="w2") == []


def _audited_starts() -> list[tuple[str, bool, str]]:
    from apps.ui.models import AuditLog

    return list(AuditLog.objects.filter(action="api:POST /api/workflow").order_by("pk")
                .values_list("username", "ok", "message"))


def test_starts_join_the_batch_of_task_updates_with_their_audit_rows(api, one_committer):
    from apps.engine import groupcommit

    task, polled = _started(api, 3)
    other_task, name = unique("gc_other"), unique("gc_started")  # not the updates' queue
    api.register_task_defs(task_def(other_task))
    api.register_workflow(workflow_def(name, [simple_task(other_task, "a")]))
    audited_before = len(_audited_starts())
    before = groupcommit.stats()
    answers = asyncio.run(_in_one_batch(
        [("/api/workflow", {"name": name, "input": {"i": 100 + i}, "correlationId": f"c{i}"}) for i in range(4)]
        + [("/api/tasks/update-v2", _result(t)) for t in polled]))
    after = groupcommit.stats()
    assert (after["batches"] - before["batches"], after["calls"] - before["calls"]) == (2, 8)
    # on PostgreSQL the starts and the updates ran as one fused batch, not rolled back
    fused = 1 if connection.vendor == "postgresql" else 0
    assert (after["fused"] - before["fused"], after["fused_rolled_back"] - before["fused_rolled_back"]) == (fused, 0)
    assert [status for status, _ in answers] == [200] * 7
    started = [body.decode() for _, body in answers[:4]]
    assert len(set(started)) == 4
    for i, workflow_id in enumerate(started):
        wf = api.workflow(workflow_id, include_tasks=True)
        assert (wf["status"], wf["input"], wf["correlationId"]) == ("RUNNING", {"i": 100 + i}, f"c{i}")
        assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("a", "SCHEDULED")]
        events = api.get(f"/workflow/{workflow_id}/history").json()["events"]
        assert [e["kind"] for e in events] == ["workflow.started", "task.scheduled"]
    # each start audited in its transaction, as a success of the anonymous caller
    assert _audited_starts()[audited_before:] == [("anonymous", True, "200")] * 4
    # the updates' next tasks are the b tasks; the new a tasks wait on the queue
    assert {json.loads(body)["referenceTaskName"] for _, body in answers[4:]} == {"b"}
    assert api.poll(task, count=10, worker_id="w2") == []
    assert {t["workflowInstanceId"] for t in api.poll(other_task, count=10, worker_id="w2")} == set(started)


def test_a_start_refused_inside_a_batch_is_audited_and_leaves_the_others_started(api, one_committer):
    from apps.engine import groupcommit

    _task, polled = _started(api, 1)
    name = api.workflow(polled[0]["workflowInstanceId"])["workflowName"]
    audited_before = len(_audited_starts())
    key = unique("idem")
    before = groupcommit.stats()
    answers = asyncio.run(_in_one_batch(
        [("/api/workflow", {"name": name, "input": {}, "idempotencyKey": key, "idempotencyStrategy": "FAIL"}),
         ("/api/workflow", {"name": name, "input": {}, "idempotencyKey": key, "idempotencyStrategy": "FAIL"}),
         ("/api/workflow", {"name": name, "input": {"other": True}}),
         ("/api/tasks", _result(polled[0]))]))
    after = groupcommit.stats()
    # on PostgreSQL the fused batch met the key twice (a unique violation at its flush):
    # rolled back and run call by call, where the second start of the key is refused
    rolled_back = 1 if connection.vendor == "postgresql" else 0
    assert after["fused_rolled_back"] - before["fused_rolled_back"] == rolled_back
    statuses = [status for status, _ in answers]
    assert sorted(statuses[:2]) == [200, 409] and statuses[2:] == [200, 200]
    winner = answers[statuses.index(200)][1].decode()
    refused = json.loads(answers[statuses.index(409)][1])
    assert refused["message"] == f"Workflow with idempotencyKey {key} already exists: {winner}"
    assert api.workflow(answers[2][1].decode())["status"] == "RUNNING"
    assert api.task(polled[0]["taskId"])["status"] == "COMPLETED"
    # three rows: two starts with their change, the refusal once answered
    rows = _audited_starts()[audited_before:]
    assert sorted(rows) == sorted([("anonymous", True, "200")] * 2 + [("anonymous", False, f"409 {refused['message']}")])


def test_workflows_ending_in_one_batch_drop_their_message_queues(api, one_committer):
    """A workflow's end drops its workflow message queue in its transaction; in a fused
    batch the DELETEs are held and sent as one for all the batch's workflows
    (``store.delete_for_workflow``): the ended workflows' queues are gone, a running
    workflow's queue is kept."""
    from apps.engine import groupcommit
    from apps.wmq import queue

    task, name = unique("gc_last"), unique("gc_one_task")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "only")]))
    ids = [api.start(name) for _ in range(3)]
    for workflow_id in ids:
        api.ok(api.post(f"/workflow/{workflow_id}/messages", {"for": workflow_id}))
    polled = {t["workflowInstanceId"]: t for t in api.poll(task, count=3, worker_id="w1")}
    before = groupcommit.stats()
    answers = asyncio.run(_in_one_batch([("/api/tasks", _result(polled[w])) for w in ids[:2]]))
    after = groupcommit.stats()
    assert [status for status, _ in answers] == [200, 200]
    fused = 1 if connection.vendor == "postgresql" else 0
    assert (after["fused"] - before["fused"], after["fused_rolled_back"] - before["fused_rolled_back"]) == (fused, 0)
    assert [api.workflow(w)["status"] for w in ids] == ["COMPLETED", "COMPLETED", "RUNNING"]
    assert [queue.size(w) for w in ids] == [0, 0, 1]


def test_a_start_run_again_after_its_batch_rolled_back_decides_from_its_plan(api, one_committer):
    """A fused batch that fails runs again call by call; a start in it is decided again
    from the execution as planned, not from the state its rolled-back first decide made
    (which, for a workflow ending on its first decide, was COMPLETED already: decided
    again it would have been stored with no task). Found by a reviewer; fails without
    ``StartPlan.fresh``."""
    from apps.engine import groupcommit

    name, other, task = unique("gc_instant"), unique("gc_other"), unique("gc_t")
    api.register_workflow(workflow_def(name, [{"name": "sv", "taskReferenceName": "sv", "type": "SET_VARIABLE",
                                               "inputParameters": {"x": 1}}]))
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(other, [simple_task(task, "a")]))
    key = unique("idem")
    api.start(other, idempotencyKey=key)
    before = groupcommit.stats()
    answers = asyncio.run(_in_one_batch([
        ("/api/workflow", {"name": name, "input": {}}),
        ("/api/workflow", {"name": other, "input": {}, "idempotencyKey": key, "idempotencyStrategy": "FAIL"})]))
    after = groupcommit.stats()
    rolled_back = 1 if connection.vendor == "postgresql" else 0
    assert after["fused_rolled_back"] - before["fused_rolled_back"] == rolled_back
    assert [status for status, _ in answers] == [200, 409]
    workflow_id = answers[0][1].decode()
    wf = api.workflow(workflow_id, include_tasks=True)
    assert (wf["status"], wf["variables"]) == ("COMPLETED", {"x": 1})
    assert [(t["referenceTaskName"], t["status"]) for t in wf["tasks"]] == [("sv", "COMPLETED")]
    kinds = [e["kind"] for e in api.get(f"/workflow/{workflow_id}/history").json()["events"]]
    assert kinds[0] == "workflow.started" and "task.scheduled" in kinds


def test_an_update_that_fails_inside_a_batch_leaves_the_others_committed(api, one_committer):
    _task, polled = _started(api, 3)
    other = polled[2]
    calls = [
        ("/api/tasks", _result(polled[0])),
        ("/api/tasks", _result(polled[1], workflowInstanceId="no-such-workflow")),  # 404
        ("/api/tasks", _result(polled[1], workflowInstanceId=other["workflowInstanceId"])),  # another's task: 400
        ("/api/tasks", {**_result(polled[1]), "status": "NOT_A_STATUS"}),  # 400
        ("/api/tasks", _result(other)),
    ]
    answers = asyncio.run(_in_one_batch(calls))
    assert [status for status, _ in answers] == [200, 404, 400, 400, 200]
    assert json.loads(answers[1][1])["message"] == "No such workflow found by id: no-such-workflow"
    assert [api.task(t["taskId"])["status"] for t in polled] == ["COMPLETED", "IN_PROGRESS", "COMPLETED"]


def test_a_database_error_inside_a_batch_is_rolled_back_alone(one_committer):
    """A call whose statement fails (a duplicate key: on PostgreSQL that aborts the
    transaction) after writing is rolled back to its savepoint; the calls before and
    after it in the same batch are committed."""
    from django.db import IntegrityError

    from apps.engine import groupcommit
    from apps.metadata.models import TaskDef

    names = [unique("gc_def") for _ in range(3)]
    TaskDef.objects.create(name=names[1] + "_taken", definition={}, create_time=0, update_time=0)

    def create(name: str, then_clash: bool = False) -> str:
        TaskDef.objects.create(name=name, definition={"name": name}, create_time=0, update_time=0)
        if then_clash:
            TaskDef.objects.create(name=name + "_taken", definition={}, create_time=0, update_time=0)
        return name

    before = groupcommit.stats()["batches"]
    first, failed, last = asyncio.run(_submitted_in_one_batch(
        [(create, names[0]), (create, names[1], True), (create, names[2])]))
    assert groupcommit.stats()["batches"] - before == 2
    assert (first, last) == (names[0], names[2])
    assert isinstance(failed, IntegrityError)
    assert set(TaskDef.objects.filter(name__in=names).values_list("name", flat=True)) == {names[0], names[2]}


async def _submitted_in_one_batch(calls: list[tuple], keys: list[str] | None = None) -> list:
    """``groupcommit.submit(fn, *args, key=key)`` of each ``(fn, *args)`` (``keys``: the
    workflow id of each, or none) while the committer is held, so that they form one
    batch; their results or exceptions in order."""
    from apps.engine import groupcommit

    gate, holding = threading.Event(), threading.Event()
    held = groupcommit.submit(lambda: (holding.set(), gate.wait(30)))
    assert await asyncio.to_thread(holding.wait, 30)
    futures = [groupcommit.submit(*call, key=key) for call, key in zip(calls, keys or [None] * len(calls))]
    gate.set()
    await held
    return await asyncio.gather(*futures, return_exceptions=True)


def test_a_connection_lost_inside_a_batch_fails_every_call_of_it(one_committer):
    """A call that breaks the connection: its savepoint cannot be rolled back, so the
    whole transaction is lost (Django rolls it back at the end of the block without
    raising); every call of the batch is answered with an error, none with success."""
    from django.db import connection

    from apps.metadata.models import TaskDef

    names = [unique("gc_lost") for _ in range(3)]

    def create(name: str, then_break: bool = False) -> str:
        TaskDef.objects.create(name=name, definition={"name": name}, create_time=0, update_time=0)
        if then_break:
            connection.connection.close()  # the database connection under Django's, gone
            raise RuntimeError("lost")
        return name

    answers = asyncio.run(_submitted_in_one_batch([(create, names[0]), (create, names[1], True), (create, names[2])]))
    assert [isinstance(a, Exception) for a in answers] == [True, True, True], answers
    assert not TaskDef.objects.filter(name__in=names).exists()
    # the committer goes on with a new connection
    assert asyncio.run(_submitted_in_one_batch([(create, names[2])])) == [names[2]]
    assert TaskDef.objects.filter(name=names[2]).exists()


@pytest.mark.postgres
def test_the_next_batch_executes_while_one_commits_and_waits_for_its_workflow(api, one_committer, settings,
                                                                                monkeypatch):
    """GROUP_COMMIT_PIPELINE: while a batch's COMMIT is held, the committer's other thread
    takes the next batch: another workflow's update executes and commits meanwhile, and a
    call on the workflow the committing batch changed waits for that COMMIT on the row's
    lock, then sees the change (one workflow's calls still apply in order)."""
    from django.db.backends.postgresql.base import DatabaseWrapper

    from apps.api import fastpath
    from apps.engine import groupcommit, store

    settings.CONDUCTOR = {**settings.CONDUCTOR, "GROUP_COMMIT_PIPELINE": 2}
    _task, (first, second) = _started(api, 2)
    commit, marked, holding, gate = DatabaseWrapper.commit, threading.local(), threading.Event(), threading.Event()

    def held_commit(self):
        if getattr(marked, "hold", False):
            marked.hold = False
            holding.set()
            assert gate.wait(30)
        return commit(self)

    def update_first():
        marked.hold = True  # this batch's COMMIT waits for the gate
        return fastpath._grouped_update(_result(first), False, "test")

    def status_of_first() -> str:
        wf = store.lock_workflow(first["workflowInstanceId"])
        return next(t.status for t in wf.tasks if t.task_id == first["taskId"])

    def waiting_on_a_lock() -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
            return cursor.fetchone()[0] > 0

    monkeypatch.setattr(DatabaseWrapper, "commit", held_commit)

    async def scenario():
        held = groupcommit.submit(update_first, key=first["workflowInstanceId"])
        assert await asyncio.to_thread(holding.wait, 30)
        # the other thread's batch: executed and committed while the first COMMIT is held
        other = await asyncio.wait_for(groupcommit.submit(
            fastpath._grouped_update, _result(second), False, "test", key=second["workflowInstanceId"]), 30)
        assert not gate.is_set() and not held.done()
        seen = groupcommit.submit(status_of_first, key=first["workflowInstanceId"])
        for _ in range(3000):  # until it waits for the row the held batch locked (bounded: 30 s)
            if await asyncio.to_thread(waiting_on_a_lock):
                break
            await asyncio.sleep(0.01)
        assert not seen.done()
        gate.set()
        return await held, other, await seen

    first_answer, other_answer, seen = asyncio.run(scenario())
    assert first_answer[0][0] == other_answer[0][0] == 200
    assert seen == "COMPLETED"
    assert api.task(second["taskId"])["status"] == "COMPLETED"


@pytest.mark.postgres
def test_a_fused_batch_whose_task_changed_under_it_is_run_again_call_by_call(api, one_committer):
    """A fused batch holds its compare-and-set task UPDATEs until its flush; when a task
    changed meanwhile (here: another call of the same batch moved it) the flush finds it,
    and the whole batch is rolled back and run again call by call, each with the engine's
    own checks: the answers and the stored state are those of the calls run one by one."""
    from apps.api import fastpath
    from apps.engine import groupcommit
    from apps.engine.models import TaskExecution

    _task, polled = _started(api, 2)
    first, second = polled

    def update_first():
        return fastpath._grouped_update(_result(first, outputData={"late": True}), True, "test")

    def cancel_first() -> int:  # another workflow's call, writing the first's task at once
        return TaskExecution.objects.filter(task_id=first["taskId"], status="IN_PROGRESS").update(status="CANCELED")

    before = groupcommit.stats()
    (answer, _handed), moved = asyncio.run(_submitted_in_one_batch(
        [(update_first,), (cancel_first,)], keys=[first["workflowInstanceId"], second["workflowInstanceId"]]))
    after = groupcommit.stats()
    assert (after["fused"] - before["fused"], after["fused_rolled_back"] - before["fused_rolled_back"]) == (0, 1)
    # run again one by one: the update completed the task and was handed the next one; the
    # other call then found nothing IN_PROGRESS to move
    assert answer[0] == 200 and json.loads(answer[2])["referenceTaskName"] == "b"
    assert moved == 0
    got = api.task(first["taskId"])
    assert (got["status"], got["outputData"]) == ("COMPLETED", {"late": True})


@pytest.mark.postgres
def test_a_workflow_locked_twice_in_a_fused_batch_makes_it_run_call_by_call(api, one_committer):
    """A side effect of one workflow's update may lock another workflow of the same
    batch, whose own update then reads it again: its first writes are held and a second
    read would not see them. The second lock rolls the fused batch back (FusedConflict)
    and the calls run one by one: both take effect."""
    from apps.api import fastpath
    from apps.engine import executor, groupcommit, store

    _task, polled = _started(api, 2)
    first, second = polled

    def update_first_and_touch_second():
        answer = fastpath._grouped_update(_result(first), True, "test")
        with transaction.atomic(savepoint=not store.fusing()):
            loaded = store.Loaded(store.lock_workflow(second["workflowInstanceId"]))
            loaded.wf.variables = {**(loaded.wf.variables or {}), "touched": True}
            store.save(loaded, executor.decide(loaded.wf, executor.now_ms()), workflow_changed=True)
        return answer

    def update_second():
        return fastpath._grouped_update(_result(second, outputData={"second": True}), True, "test")

    before = groupcommit.stats()
    (answer, _), (answer2, _) = asyncio.run(_submitted_in_one_batch(
        [(update_first_and_touch_second,), (update_second,)],
        keys=[first["workflowInstanceId"], second["workflowInstanceId"]]))
    after = groupcommit.stats()
    assert (after["fused"] - before["fused"], after["fused_rolled_back"] - before["fused_rolled_back"]) == (0, 1)
    assert answer[0] == 200 and answer2[0] == 200
    wf = api.workflow(second["workflowInstanceId"], include_tasks=True)
    assert wf["variables"].get("touched") is True
    assert api.task(second["taskId"])["outputData"] == {"second": True}
    assert api.task(first["taskId"])["status"] == "COMPLETED"


@pytest.mark.postgres
def test_a_savepoint_rolled_back_inside_a_fused_call_makes_the_batch_run_call_by_call(api, one_committer):
    """A service that fails inside a savepoint whose caller goes on (a sub-workflow's
    start refused): in a fused batch its writes are held, and rolling the savepoint back
    would not undo them. The rollback marks the batch, which is then run call by call:
    the rolled-back write is not stored, the updates are."""
    from apps.api import fastpath
    from apps.engine import executor, groupcommit, store

    _task, polled = _started(api, 3)
    first, second, third = polled

    def update_first_with_a_rolled_back_write():
        answer = fastpath._grouped_update(_result(first), True, "test")
        try:
            with transaction.atomic():
                loaded = store.Loaded(store.lock_workflow(second["workflowInstanceId"]))
                loaded.wf.variables = {**(loaded.wf.variables or {}), "rolled_back": True}
                store.save(loaded, executor.decide(loaded.wf, executor.now_ms()), workflow_changed=True)
                raise ValueError("the nested service fails after its save")
        except ValueError:
            pass
        return answer

    before = groupcommit.stats()
    (answer, _), (answer3, _) = asyncio.run(_submitted_in_one_batch(
        [(update_first_with_a_rolled_back_write,), (fastpath._grouped_update, _result(third), True, "test")],
        keys=[first["workflowInstanceId"], third["workflowInstanceId"]]))
    after = groupcommit.stats()
    assert (after["fused"] - before["fused"], after["fused_rolled_back"] - before["fused_rolled_back"]) == (0, 1)
    assert (answer[0], answer3[0]) == (200, 200)
    assert "rolled_back" not in (api.workflow(second["workflowInstanceId"])["variables"] or {})
    assert [api.task(t["taskId"])["status"] for t in polled] == ["COMPLETED", "IN_PROGRESS", "COMPLETED"]


@pytest.mark.postgres
def test_a_fused_batch_whose_commit_fails_is_not_run_again(api, one_committer, monkeypatch):
    """The COMMIT of a fused batch raises after the database committed (the connection
    lost while the acknowledgement was in flight): every call is answered with the error,
    as a lone update would be, and none runs a second time (its logs are written once)."""
    from django.db import OperationalError
    from django.db.backends.postgresql.base import DatabaseWrapper

    from apps.api import fastpath
    from apps.engine import groupcommit
    from apps.engine.models import TaskExecLog

    commit, fused, failed, in_fused = DatabaseWrapper.commit, groupcommit._execute_fused, [], threading.local()

    def marked(batch, *args):
        in_fused.on = True
        try:
            return fused(batch, *args)
        finally:
            in_fused.on = False

    def commit_then_fail(self):
        commit(self)
        if getattr(in_fused, "on", False) and not failed:
            failed.append(True)
            raise OperationalError("server closed the connection unexpectedly (simulated, after COMMIT)")

    _task, polled = _started(api, 2)
    monkeypatch.setattr(groupcommit, "_execute_fused", marked)
    monkeypatch.setattr(DatabaseWrapper, "commit", commit_then_fail)
    before = groupcommit.stats()
    answers = asyncio.run(_submitted_in_one_batch(
        [(fastpath._grouped_update, {**_result(t), "logs": [{"log": "once"}]}, True, "test") for t in polled],
        keys=[t["workflowInstanceId"] for t in polled]))
    monkeypatch.setattr(DatabaseWrapper, "commit", commit)
    after = groupcommit.stats()
    assert failed and [isinstance(a, OperationalError) for a in answers] == [True, True], answers
    assert after["fused_rolled_back"] == before["fused_rolled_back"]
    assert TaskExecLog.objects.filter(task_id__in=[t["taskId"] for t in polled]).count() == 2
    assert [api.task(t["taskId"])["status"] for t in polled] == ["COMPLETED", "COMPLETED"]


def _database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = quote(s.get("USER") or "", safe="") + (":" + quote(s["PASSWORD"], safe="") if s.get("PASSWORD") else "")
    host = f"{s.get('HOST') or 'localhost'}:{s.get('PORT') or 5432}"
    return f"postgres://{auth}@{host}/{s['NAME']}"


def test_a_crash_in_the_middle_of_a_batch_loses_nothing_acknowledged(api):
    """A server process (tests/support/group_commit_child.py) acknowledges one update after
    its batch's COMMIT, then is killed (SIGKILL) while its next batch, holding a second
    update already executed, has not committed: the first stays COMPLETED, the second
    left no trace (its task still IN_PROGRESS, never acknowledged), and the worker's
    retry of it then completes its workflow."""
    task, polled = _started(api, 2)
    env = {**os.environ, "DATABASE_URL": _database_url(), "DJANGO_SETTINGS_MODULE": "conductor_web.settings",
           "CONDUCTOR_GROUP_COMMIT_THREADS": "1"}
    child = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "group_commit_child.py"),
                              json.dumps([_result(t) for t in polled])],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in child.stdout:
            lines.append(line.strip())
            if line.startswith("mid-batch"):
                break
        assert lines[-1:] == ["mid-batch"], (lines, child.stderr.read() if child.poll() is not None else "")
        assert lines[0] == f"acknowledged {polled[0]['taskId']} 200"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    assert api.task(polled[0]["taskId"])["status"] == "COMPLETED"
    second = api.task(polled[1]["taskId"])
    assert (second["status"], second["outputData"]) == ("IN_PROGRESS", {})
    wf = api.workflow(polled[1]["workflowInstanceId"], include_tasks=True)
    assert [t["referenceTaskName"] for t in wf["tasks"]] == ["a"], "the b task of the lost batch was kept"
    # the worker was never answered, so it sends again: the update applies once
    api.ok(api.post("/tasks", _result(polled[1], outputData={"again": True})))
    assert api.task(polled[1]["taskId"])["outputData"] == {"again": True}
    assert [t["referenceTaskName"] for t in api.workflow(polled[1]["workflowInstanceId"], include_tasks=True)["tasks"]] \
        == ["a", "b"]
