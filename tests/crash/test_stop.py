"""Stopping on SIGTERM: a long ``POST /api/workflow/execute`` wait and a long poll in
flight never delay a stop.

A server (uvicorn) and its cluster (qcluster) are started on a fresh database with the
synchronous-wait cap raised far above the stop bound (``CONDUCTOR_MAX_SYNC_WAIT_SECONDS``
600). One client opens ``execute`` with ``waitForSeconds=600`` on a workflow whose only
task nobody polls; another opens a batch poll with the longest long poll on a queue
nothing is added to. Once the server shows both in flight (the execution exists; the
poll is recorded in the queue's poll data), uvicorn gets SIGTERM: it must be gone within
``STOP_LIMIT_SECONDS`` (far below the 600 s wait), and each client must have an answer
or a closed connection by then (not a client-side timeout: its timeout is longer than
the wait). Then the cluster gets SIGTERM and must be gone within the same bound. The
bounds are generous: the test proves "not held by the wait", not a speed.
"""
from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import httpx
import pytest

from tests.crash.harness import _group_members

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

STOP_LIMIT_SECONDS = 60          # generous; the execute wait below is 600 s
EXECUTE_WAIT_SECONDS = 600
CLIENT_TIMEOUT_SECONDS = 900     # longer than the wait: only the server can end the call
IN_FLIGHT_LIMIT_SECONDS = 60


@pytest.fixture
def long_sync_waits(monkeypatch):
    """The synchronous-wait cap raised to 600 s for the server the test starts (the
    crash fixture's server copies the environment when it is made: request this first)."""
    monkeypatch.setenv("CONDUCTOR_MAX_SYNC_WAIT_SECONDS", str(EXECUTE_WAIT_SECONDS))


def _terminate(proc, limit: float) -> float:
    """SIGTERM to ``proc`` (its main process, as systemd's KillMode=mixed does);
    seconds until its whole process group has ended, or ``inf`` past ``limit``."""
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    while proc.poll() is None or _group_members(proc.pid):
        if time.monotonic() - started > limit:
            return float("inf")
        time.sleep(0.1)
    return time.monotonic() - started


def _call(outcomes: dict, key: str, fn) -> None:
    """Run the HTTP call ``fn()`` and record how it ended: ``("answer", status)``,
    ``("closed", exception name)`` or ``("client-timeout", ...)``."""
    try:
        r = fn()
        outcomes[key] = ("answer", r.status_code)
    except httpx.TimeoutException as exc:
        outcomes[key] = ("client-timeout", type(exc).__name__)
    except httpx.TransportError as exc:
        outcomes[key] = ("closed", type(exc).__name__)
    outcomes[key + "_at"] = time.monotonic()


def test_sigterm_is_not_held_by_a_long_execute_wait_or_a_long_poll(long_sync_waits, crash_server):
    server = crash_server
    assert server.env["CONDUCTOR_MAX_SYNC_WAIT_SECONDS"] == str(EXECUTE_WAIT_SECONDS)
    api = server.url
    headers = server.auth_headers()
    suffix = uuid.uuid4().hex[:8]
    task_name, idle_queue, wf_name = f"stop_task_{suffix}", f"stop_idle_{suffix}", f"stop_wf_{suffix}"
    with httpx.Client(base_url=api, headers=headers, timeout=30) as http:
        r = http.post("/metadata/taskdefs", json=[
            {"name": n, "retryCount": 0, "responseTimeoutSeconds": 600, "timeoutSeconds": 0,
             "ownerEmail": "stop@example.com"} for n in (task_name, idle_queue)])
        assert r.status_code in (200, 204), r.text
        r = http.post("/metadata/workflow", json={
            "name": wf_name, "version": 1, "schemaVersion": 2, "ownerEmail": "stop@example.com",
            "tasks": [{"name": task_name, "taskReferenceName": "never_polled", "type": "SIMPLE"}]})
        assert r.status_code in (200, 204), r.text

        outcomes: dict = {}
        cid = f"stop-{suffix}"
        worker_id = f"stop-worker-{suffix}"
        clients = [httpx.Client(base_url=api, headers=headers, timeout=CLIENT_TIMEOUT_SECONDS) for _ in range(2)]
        execute = threading.Thread(target=_call, daemon=True, args=(outcomes, "execute", lambda: clients[0].post(
            f"/workflow/execute/{wf_name}/1", params={"waitForSeconds": EXECUTE_WAIT_SECONDS},
            json={"name": wf_name, "version": 1, "correlationId": cid, "input": {}})))
        execute.start()

        def long_polls():
            # a long poll answers [] after at most 5 s (Conductor's cap): keep one open
            while "stop" not in outcomes:
                _call(outcomes, "poll", lambda: clients[1].get(
                    f"/tasks/poll/batch/{idle_queue}", params={"workerid": worker_id, "count": 1, "timeout": 5000}))
                if outcomes["poll"][0] != "answer" or outcomes["poll"][1] != 200:
                    return
        poller = threading.Thread(target=long_polls, daemon=True)
        poller.start()

        # both in flight on the server: the execution exists, the poll is recorded
        until = time.monotonic() + IN_FLIGHT_LIMIT_SECONDS
        while True:
            assert time.monotonic() < until, "the execute call and the long poll never reached the server"
            running = http.get(f"/workflow/{wf_name}/correlated/{cid}", params={"includeClosed": "true"}).json()
            polls = http.get("/tasks/queue/polldata", params={"taskType": idle_queue}).json()
            if running and any(p.get("workerId") == worker_id for p in polls):
                break
            time.sleep(0.2)
        assert running[0]["status"] == "RUNNING"
        assert execute.is_alive(), f"the execute call ended early: {outcomes.get('execute')}"

    outcomes["stop"] = True
    server_stop = _terminate(server.processes["server"], STOP_LIMIT_SECONDS)
    server.processes.pop("server")
    execute.join(timeout=10)
    poller.join(timeout=10)
    for c in clients:
        c.close()
    assert server_stop < STOP_LIMIT_SECONDS, "uvicorn did not stop on SIGTERM while a long wait was open"
    assert not execute.is_alive() and not poller.is_alive(), f"a client still waits after the stop: {outcomes}"
    assert outcomes["execute"][0] in ("answer", "closed"), outcomes
    assert outcomes["poll"][0] in ("answer", "closed"), outcomes

    cluster_stop = _terminate(server.processes["qcluster"], STOP_LIMIT_SECONDS)
    server.processes.pop("qcluster")
    assert cluster_stop < STOP_LIMIT_SECONDS, "the cluster did not stop on SIGTERM"
    print(f"\nSIGTERM with a {EXECUTE_WAIT_SECONDS} s execute wait and a long poll open: uvicorn gone after "
          f"{server_stop:.1f} s (execute: {outcomes['execute']}, poll: {outcomes['poll']}); "
          f"cluster gone after {cluster_stop:.1f} s")
