"""Crash safety: a crash (kill -9 of uvicorn or of the cluster) at any moment loses no
execution and completes no task twice.

200 workflows (SIMPLE a -> WAIT 1 s -> SIMPLE b -> INLINE -> SIMPLE c) are started
through the API while SDK-like worker threads run them; meanwhile uvicorn and the
qcluster are each killed with SIGKILL several times at random moments (1-3 s apart,
sometimes both at once) and restarted on the same port and database after a short
pause. Then, bounded in time, every workflow must end COMPLETED and the engine's
history must agree with the workers' record:

* each reference has exactly one COMPLETED task; WAIT and INLINE ran once; the only
  extra attempts of a worker task are TIMED_OUT ones (a poll answer lost with uvicorn,
  or an update that arrived after the response timeout), and the COMPLETED one is last;
* the result the engine kept for each task is the one that worker delivery sent for
  that very task (``outputData.delivery`` = its taskId), and the workflow output is the
  expected function of its input (every step saw exactly one result of the previous);
* a worker received a (workflowId, ref) more than once only when every earlier
  delivery is TIMED_OUT in the engine; no taskId was ever handed out twice; the work
  itself ran once per (workflowId, ref) (idempotent by record);
* every start, even one re-sent after a crash, created one execution (idempotency key).

The seed of the random crash plan is printed; ``CRASH_SEED=<n>`` replays it.
Runs on PostgreSQL (``scripts/with_postgres.sh``) and on SQLite.
"""
from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections import Counter, defaultdict

import httpx
import pytest

from tests.crash.harness import (
    REFS,
    RESPONSE_TIMEOUT_SECONDS,
    SYSTEM_REFS,
    WORKER_TYPES,
    WORKFLOW_NAME,
    Ledger,
    call_until_answered,
    run_thread,
    correlation_id,
    describe_workflow,
    engine_rows,
    expected_output,
    log_errors,
    start_workflows,
    task_defs,
    worker_loop,
    workflow_def,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(290)]

WORKFLOWS = 200
START_PACE_SECONDS = 0.04        # 200 starts spread over ~8 s, so crashes hit starts too
WORKERS_PER_TYPE = 3
KILL_PLAN = ["server"] * 3 + ["qcluster"] * 3 + ["both"]   # 4 kills of each process
KILL_GAP_SECONDS = (1.0, 3.0)    # between a restart and the next kill
DOWN_SECONDS = (0.2, 1.0)        # pause between a kill and the restart
STARTS_SECONDS = 90              # from the servers being up to every start answered
# From the last restart to every workflow terminal. After a cluster crash the restarted
# cluster's sweeper threads take the lease once the dead holder's expires (5 s) and the
# executions the dead sweeper had claimed are due again 5 s later; the bound is generous
# for a loaded machine.
RECOVERY_SECONDS = 130
TERMINAL = ("COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED")
WORKER_STOP_SECONDS = 15         # a worker's last long poll and update, after the stop signal


def _statuses(http: httpx.Client, cids: list[str], deadline: float, include_tasks: bool = False) -> dict:
    r = call_until_answered(lambda: http.post(
        f"/workflow/{WORKFLOW_NAME}/correlated", json=cids,
        params={"includeClosed": "true", "includeTasks": "true" if include_tasks else "false"}), deadline)
    assert r.status_code == 200, r.text[:500]
    return r.json()


def test_kill_restart_loses_no_execution_and_completes_no_task_twice(crash_server):
    server = crash_server
    seed = int(os.environ.get("CRASH_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    print(f"\ncrash test: seed {seed} (CRASH_SEED={seed} replays the crash plan), "
          f"database {server.database_url.split(':', 1)[0]}, API {server.url}")
    t0 = time.monotonic()
    deadline = t0 + STARTS_SECONDS + RECOVERY_SECONDS  # no worker or update outlives this
    run_key = f"crash-{uuid.uuid4().hex[:8]}"
    auth = server.auth_headers()
    http = httpx.Client(base_url=server.url, timeout=10, headers=auth)

    r = http.post("/metadata/taskdefs", json=task_defs())
    assert r.status_code in (200, 204), r.text
    r = http.post("/metadata/workflow", json=workflow_def())
    assert r.status_code in (200, 204), r.text

    ledger = Ledger()
    stop = threading.Event()
    ids: dict[int, str] = {}
    errors: list[str] = []
    workers = [
        run_thread(errors, worker_loop, server.url, task_type, f"{task_type}-w{i}", ledger, stop, deadline,
                   rng.randrange(1 << 30), auth)
        for task_type in WORKER_TYPES for i in range(WORKERS_PER_TYPE)
    ]
    starter = run_thread(errors, start_workflows, server.url, run_key, WORKFLOWS, START_PACE_SECONDS, ids,
                         ledger, deadline, auth)

    # --- crashes at random moments
    plan = list(KILL_PLAN)
    rng.shuffle(plan)
    timeline = []
    for target in plan:
        time.sleep(rng.uniform(*KILL_GAP_SECONDS))
        names = ("server", "qcluster") if target == "both" else (target,)
        at = time.monotonic() - t0
        for name in names:
            server.kill(name)
        down = rng.uniform(*DOWN_SECONDS)
        time.sleep(down)
        for name in names:
            server.restart(name)
        timeline.append(f"{at:5.1f}s kill -9 {'+'.join(names)}, restart after {down:.1f}s "
                        f"(started {len(ids)}, delivered {len(ledger.deliveries)})")
        print("crash test: " + timeline[-1])
    chaos_end = time.monotonic()

    # --- every workflow started once, then every one terminal (bounded)
    starter.join(max(0.0, t0 + STARTS_SECONDS - time.monotonic()))
    assert not starter.is_alive() and len(ids) == WORKFLOWS, (
        f"only {len(ids)} of {WORKFLOWS} starts answered: {errors} {ledger.unexpected[:5]}")
    cids = [correlation_id(run_key, n) for n in range(WORKFLOWS)]
    recovery_deadline = min(deadline, time.monotonic() + RECOVERY_SECONDS)
    last_report = 0.0
    while True:
        by_cid = _statuses(http, cids, recovery_deadline)
        status = Counter(w["status"] for runs in by_cid.values() for w in runs)
        if sum(status[s] for s in TERMINAL) >= WORKFLOWS:
            break
        if time.monotonic() - last_report > 10:
            last_report = time.monotonic()
            print(f"crash test: {time.monotonic() - t0:5.1f}s {dict(status)}")
        if time.monotonic() > recovery_deadline:
            stuck = [w for runs in by_cid.values() for w in runs if w["status"] not in TERMINAL][:5]
            details = [describe_workflow(_statuses(http, [w["correlationId"]], time.monotonic() + 30,
                                                   include_tasks=True)[w["correlationId"]][0], ledger)
                       for w in stuck]
            pytest.fail(f"not every workflow terminal {RECOVERY_SECONDS}s after the last restart: "
                        f"{dict(status)}\n{log_errors(server)}\ncrashes:\n"
                        + "\n".join(timeline) + "\n" + "\n".join(details) + "\n"
                        + engine_rows(server.database_url, [w["workflowId"] for w in stuck]))
        time.sleep(0.5)
    all_terminal = time.monotonic()
    stop.set()
    for t in workers:
        t.join(WORKER_STOP_SECONDS)
    assert not any(t.is_alive() for t in workers), "a worker thread did not stop"
    by_cid = _statuses(http, cids, time.monotonic() + 60, include_tasks=True)
    http.close()

    figures, violations = check(by_cid, ids, run_key, ledger)
    wall = time.monotonic() - t0
    gaps = sorted(d.polled_at for d in ledger.deliveries)
    longest_gap = max((b - a for a, b in zip(gaps, gaps[1:])), default=0.0)
    print(f"crash test: kills {dict(server.kills)}, restarts {dict(server.restarts)}; "
          f"uvicorn back (kill -> healthy) in {', '.join(f'{s:.1f}' for s in server.server_downtime)} s")
    print(f"crash test: {figures['completed']} of {WORKFLOWS} COMPLETED; engine tasks {figures['engine_tasks']} "
          f"({figures['timed_out']} TIMED_OUT: {figures['lost_poll_answers']} poll answers lost, "
          f"{figures['late_updates']} delivered but updated too late); deliveries {len(ledger.deliveries)}, "
          f"re-deliveries {figures['redeliveries']}; work runs {sum(ledger.work_runs.values())}; "
          f"poll connection errors {ledger.poll_errors}, update re-sends {ledger.update_retries}, "
          f"5xx answers {len(ledger.server_errors)}")
    print(f"crash test: WAIT 1s fired late by {_spread(figures.get('wait_lateness'))}; "
          f"response timeouts noticed late by {_spread(figures.get('timeout_lateness'))}")
    print(f"crash test: wall {wall:.1f}s (crash phase {chaos_end - t0:.1f}s, all terminal "
          f"{all_terminal - chaos_end:.1f}s after the last restart; longest pause between two "
          f"deliveries {longest_gap:.1f}s)")
    print(f"crash test: {log_errors(server)}")
    for line in ledger.server_errors[:5]:
        print(f"crash test: 5xx: {line}")

    assert not errors, errors
    assert not ledger.unexpected, ledger.unexpected[:10]
    if violations:
        broken = {line.split("/", 1)[0].split(":", 1)[0] for line in violations}
        runs = [w for ws in by_cid.values() for w in ws if w["workflowId"] in broken][:3]
        pytest.fail(f"{len(violations)} violations, first ones:\n" + "\n".join(violations[:25]) + "\n"
                    + "\n".join(describe_workflow(w, ledger) for w in runs) + "\n" + log_errors(server),
                    pytrace=False)
    assert figures["completed"] == WORKFLOWS
    assert sum(server.kills.values()) >= len(KILL_PLAN)


def _spread(values: list[float] | None) -> str:
    """``median / p95 / max`` seconds of a list, or ``-`` when empty."""
    if not values:
        return "-"
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
    return f"median {pick(0.5):.1f}s / p95 {pick(0.95):.1f}s / max {values[-1]:.1f}s (n={len(values)})"


def check(by_cid: dict, ids: dict[int, str], run_key: str, ledger: Ledger) -> tuple[dict, list[str]]:
    """Compare the engine's history of every workflow with the workers' record; return
    (figures, violations)."""
    v: list[str] = []
    figures: dict = Counter()
    engine_ids = set()
    for n in range(len(ids)):
        cid = correlation_id(run_key, n)
        runs = by_cid.get(cid) or []
        if len(runs) != 1:
            v.append(f"n={n}: {len(runs)} executions for correlationId {cid} (one start must make one)")
            continue
        wf = runs[0]
        wid = wf["workflowId"]
        engine_ids.add(wid)
        if wid != ids[n]:
            v.append(f"n={n}: start answered {ids[n]}, the execution is {wid}")
        if wf["status"] != "COMPLETED":
            v.append(f"{wid}: {wf['status']} ({wf.get('reasonForIncompletion')})")
            continue
        figures["completed"] += 1
        if wf["output"] != expected_output(n):
            v.append(f"{wid}: output {wf['output']} != {expected_output(n)}")
        attempts = defaultdict(list)
        for t in sorted(wf["tasks"], key=lambda t: t["seq"]):
            attempts[t["referenceTaskName"]].append(t)
            figures["engine_tasks"] += 1
        if set(attempts) != set(REFS):
            v.append(f"{wid}: task references {sorted(attempts)} != {sorted(REFS)}")
        for ref, tasks in attempts.items():
            v.extend(_check_ref(wid, ref, tasks, ledger, figures))
    # the record: nothing handed out twice, nothing foreign, every update answered
    for task_id, ds in ledger.by_task_id.items():
        if len(ds) > 1:
            v.append(f"task {task_id} ({ds[0].workflow_id}/{ds[0].ref}) delivered {len(ds)} times: "
                     f"{[d.worker_id for d in ds]}")
    for d in ledger.deliveries:
        if d.workflow_id not in engine_ids:
            v.append(f"delivery of {d.task_id} for unknown workflow {d.workflow_id}")
        if d.update_status != 200:
            v.append(f"update of {d.workflow_id}/{d.ref} {d.task_id} not answered 200 "
                     f"(status {d.update_status} after {d.update_attempts} attempts)")
    for key, runs in ledger.work_runs.items():
        if runs != 1:
            v.append(f"work of {key} ran {runs} times")
    expected_work = {(wid, ref) for wid in engine_ids for ref in WORKER_TYPES.values()}
    if set(ledger.work_runs) != expected_work:
        missing = expected_work - set(ledger.work_runs)
        v.append(f"work never done for {len(missing)} (workflowId, ref), e.g. {sorted(missing)[:3]}")
    return figures, v


def _check_ref(wid: str, ref: str, tasks: list[dict], ledger: Ledger, figures: Counter) -> list[str]:
    v = []
    where = f"{wid}/{ref}"
    completed = [t for t in tasks if t["status"] == "COMPLETED"]
    if len(completed) != 1:
        return [f"{where}: {len(completed)} COMPLETED tasks ({[t['status'] for t in tasks]})"]
    done = completed[0]
    if ref == "pause" and done["endTime"] and done["startTime"]:
        figures.setdefault("wait_lateness", []).append((done["endTime"] - done["startTime"]) / 1000 - 1)
    if ref in SYSTEM_REFS:
        if len(tasks) != 1:
            v.append(f"{where}: the {done['taskType']} task ran {len(tasks)} times")
        if ledger.by_key.get((wid, ref)):
            v.append(f"{where}: a system task was handed to a worker")
        return v
    # worker task: TIMED_OUT attempts, then the COMPLETED one
    if tasks[-1] is not done:
        v.append(f"{where}: the COMPLETED task is not the last attempt ({[t['status'] for t in tasks]})")
    if [t["retryCount"] for t in tasks] != list(range(len(tasks))):
        v.append(f"{where}: retryCounts {[t['retryCount'] for t in tasks]}")
    for prev, t in zip(tasks, tasks[1:]):
        if t.get("retriedTaskId") != prev["taskId"]:
            v.append(f"{where}: attempt {t['taskId']} retries {t.get('retriedTaskId')}, not {prev['taskId']}")
    for t in tasks[:-1]:
        if t["status"] != "TIMED_OUT":
            v.append(f"{where}: an extra attempt {t['taskId']} is {t['status']}, not TIMED_OUT")
        elif not (t.get("reasonForIncompletion") or "").startswith("responseTimeout"):
            v.append(f"{where}: attempt {t['taskId']} TIMED_OUT for {t.get('reasonForIncompletion')!r}")
        else:
            # how long after its response timeout the engine noticed (the sweeper's delay)
            figures.setdefault("timeout_lateness", []).append(
                (t["endTime"] - t["startTime"]) / 1000 - RESPONSE_TIMEOUT_SECONDS)
    if (done.get("outputData") or {}).get("delivery") != done["taskId"]:
        v.append(f"{where}: the kept result came from delivery {(done.get('outputData') or {}).get('delivery')}, "
                 f"not from the completed task {done['taskId']}")
    by_id = {t["taskId"]: t for t in tasks}
    deliveries = ledger.by_key.get((wid, ref), [])
    delivered = {d.task_id for d in deliveries}
    if done["taskId"] not in delivered:
        v.append(f"{where}: the COMPLETED task {done['taskId']} was never delivered to a worker")
    for d in deliveries:
        t = by_id.get(d.task_id)
        if t is None:
            v.append(f"{where}: delivered task {d.task_id} is not in the engine's history")
        elif t is not done and t["status"] != "TIMED_OUT":
            v.append(f"{where}: delivered again although attempt {d.task_id} is {t['status']}, not TIMED_OUT")
    for t in tasks[:-1]:
        if t["status"] == "TIMED_OUT":
            figures["timed_out"] += 1
            figures["late_updates" if t["taskId"] in delivered else "lost_poll_answers"] += 1
    figures["redeliveries"] += max(0, len(deliveries) - 1)
    return v
