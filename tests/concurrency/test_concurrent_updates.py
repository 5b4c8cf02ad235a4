"""Concurrent task updates never lose or duplicate work: racing completions of one task
(case 30), racing completions and failures, and many workers driving many workflows."""
from __future__ import annotations

import threading
import time

import pytest

from apps.engine import executor
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.metadata import services
from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)

STALL_SECONDS = 60  # no task handed out to any worker for this long: stuck


def charge_ship(count: int) -> tuple[str, str, list[str]]:
    """``count`` started workflows ``charge -> ship`` (case 30), charges already polled."""
    name = unique("c30")
    charge, ship = f"{name}_charge", f"{name}_ship"
    services.task_defs_register(task_defs=[task_def(charge), task_def(ship)])
    services.workflow_def_register(workflow_def=workflow_def(name, [
        simple_task(charge, "charge"), simple_task(ship, "ship", {"receipt": "${charge.output.receipt}"})]))
    ids = [executor.workflow_start(name=name, input={}) for _ in range(count)]
    polled = Api().poll(charge, count=count, worker_id="poller")
    assert len(polled) == count
    return charge, ship, ids


def tasks_of(wf_id: str) -> list[TaskExecution]:
    return list(TaskExecution.objects.filter(workflow_id=wf_id).order_by("seq"))


def test_two_racing_completions_schedule_the_next_task_once(threads):
    charge, ship, wf_ids = charge_ship(10)
    charges = {t.workflow_id: t.task_id for t in TaskExecution.objects.filter(task_def_name=charge)}

    def update(wf_id, receipt, worker):
        def run():
            resp = Api().post("/tasks", {"workflowInstanceId": wf_id, "taskId": charges[wf_id], "status": "COMPLETED",
                                         "outputData": {"receipt": receipt}, "workerId": worker})
            return resp.status_code, resp.content.decode()
        return run

    calls = []
    for i, wf_id in enumerate(wf_ids):
        calls += [update(wf_id, f"r-1-{i}", "worker-A"), update(wf_id, f"r-2-{i}", "worker-B")]
    results = threads(calls)
    assert all(status == 200 for status, _ in results), results
    assert all(body in charges.values() for _, body in results)

    for i, wf_id in enumerate(wf_ids):
        rows = tasks_of(wf_id)
        assert [r.reference_task_name for r in rows] == ["charge", "ship"], wf_id
        first, nxt = rows
        assert first.status == "COMPLETED"
        winner = {"worker-A": f"r-1-{i}", "worker-B": f"r-2-{i}"}[first.worker_id]
        assert first.output_data == {"receipt": winner}  # one update applied whole, never a mix
        assert nxt.status == "SCHEDULED"
        assert nxt.input_data == {"receipt": winner}
        assert WorkflowExecution.objects.get(pk=wf_id).status == "RUNNING"

    api = Api()
    for task in api.poll(ship, count=20):
        api.complete(task)
    assert set(WorkflowExecution.objects.filter(pk__in=wf_ids).values_list("status", flat=True)) == {"COMPLETED"}
    assert TaskExecution.objects.filter(task_def_name=ship).count() == 10


def test_racing_completion_and_failures_apply_exactly_one_result(threads):
    charge, ship, wf_ids = charge_ship(8)
    charges = {t.workflow_id: t.task_id for t in TaskExecution.objects.filter(task_def_name=charge)}
    variants = [("COMPLETED", "wA", {"receipt": "ok-A"}, None),
                ("COMPLETED", "wB", {"receipt": "ok-B"}, None),
                ("FAILED", "wC", {"err": "C"}, "failed-C"),
                ("FAILED_WITH_TERMINAL_ERROR", "wD", {"err": "D"}, "fatal-D")]

    def update(wf_id, status, worker, output, reason):
        def run():
            body = {"workflowInstanceId": wf_id, "taskId": charges[wf_id], "status": status, "outputData": output,
                    "workerId": worker}
            if reason:
                body["reasonForIncompletion"] = reason
            return Api().post("/tasks", body).status_code
        return run

    calls = [update(wf_id, *v) for wf_id in wf_ids for v in variants]
    assert set(threads(calls)) == {200}

    by_worker = {v[1]: v for v in variants}
    for wf_id in wf_ids:
        rows = tasks_of(wf_id)
        first = rows[0]
        status, worker, output, reason = by_worker[first.worker_id]
        assert (first.status, first.output_data, first.reason_for_incompletion) == (status, output, reason)
        wf = WorkflowExecution.objects.get(pk=wf_id)
        if status == "COMPLETED":
            assert [r.reference_task_name for r in rows] == ["charge", "ship"]
            assert rows[1].input_data == {"receipt": output["receipt"]}
            assert wf.status == "RUNNING"
        else:
            assert [r.reference_task_name for r in rows] == ["charge"]
            assert wf.status == "FAILED"
            assert wf.reason_for_incompletion == \
                f"Task {first.task_id} failed with status: FAILED and reason: '{reason}'"


def test_many_workers_drive_many_workflows_to_completion(threads):
    """40 workflows of 3 chained tasks of one type, 6 workers polling in batches and taking
    their next task from update-v2: every task runs exactly once, every workflow completes."""
    name = unique("chain")
    step = f"{name}_step"
    services.task_defs_register(task_defs=[task_def(step)])
    services.workflow_def_register(workflow_def=workflow_def(name, [
        simple_task(step, "s1", {"n": "${workflow.input.n}"}),
        simple_task(step, "s2", {"n": "${s1.output.n}"}),
        simple_task(step, "s3", {"n": "${s2.output.n}"}),
    ], outputParameters={"n": "${s3.output.n}"}))
    wf_ids = [executor.workflow_start(name=name, input={"n": i * 10}) for i in range(40)]
    total = 40 * 3
    done = []
    lock = threading.Lock()
    # bounds, not speeds (issue #14): the workers stop once every task ran, or give up
    # when nothing was handed out for STALL_SECONDS, or at the deadline (inside the 120 s
    # run_in_threads allows each thread); a loaded machine can pause all six for seconds
    deadline = time.monotonic() + 110
    progress = [time.monotonic()]

    def worker(worker_id):
        def run():
            api = Api()
            executed = []
            in_hand = []
            while time.monotonic() < deadline:
                if not in_hand:
                    with lock:
                        if len(done) >= total or time.monotonic() - progress[0] > STALL_SECONDS:
                            return executed  # all done, or stuck
                    in_hand = api.poll(step, count=3, worker_id=worker_id)
                    if not in_hand:
                        time.sleep(0.005)
                        continue
                task = in_hand.pop(0)
                assert task["status"] == "IN_PROGRESS"
                executed.append(task["taskId"])
                with lock:
                    done.append(task["taskId"])
                    progress[0] = time.monotonic()
                resp = api.post("/tasks/update-v2", {
                    "workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"], "workerId": worker_id,
                    "status": "COMPLETED", "outputData": {"n": task["inputData"]["n"] + 1, "by": worker_id}})
                assert resp.status_code in (200, 204), resp.content
                if resp.status_code == 200 and resp.content:
                    in_hand.append(resp.json())
            return executed
        return run

    results = threads([worker(f"w{i}") for i in range(6)])
    executed = [tid for per_thread in results for tid in per_thread]
    assert len(executed) == total
    assert len(set(executed)) == total
    rows = list(TaskExecution.objects.filter(workflow_id__in=wf_ids))
    assert len(rows) == total
    assert {r.task_id for r in rows} == set(executed)
    assert all(r.status == "COMPLETED" and r.poll_count == 1 and r.retry_count == 0 for r in rows)
    workflows = {w.workflow_id: w for w in WorkflowExecution.objects.filter(pk__in=wf_ids)}
    for i, wf_id in enumerate(wf_ids):
        assert workflows[wf_id].status == "COMPLETED"
        assert workflows[wf_id].output == {"n": i * 10 + 3}
