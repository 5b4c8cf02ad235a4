"""TaskDef limits hold across server processes: two uvicorn processes on one database, with
pollers of both racing over HTTP (the way workers on several hosts reach a cluster)."""
from __future__ import annotations

import threading
import time
import uuid

import httpx
import pytest

from tests.e2e.conftest import STARTUP_TIMEOUT_SECONDS, free_port, server_argv

pytestmark = pytest.mark.e2e
DEADLINE_SECONDS = 120  # a bound for the loops, not a timing assertion


@pytest.fixture(scope="module")
def two_servers(conductor_server):
    """``[url of the session server, url of a second uvicorn on the same database]``."""
    port = free_port()
    conductor_server._spawn("server-second", server_argv(port))
    second = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while True:
            try:
                if httpx.get(f"{second}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the second uvicorn did not start"
            time.sleep(0.1)
        yield [conductor_server.url, second]
    finally:
        conductor_server._stop_one("server-second")


def setup_runs(url: str, runs: int, headers: dict, **limits) -> str:
    ttype = f"limits_{uuid.uuid4().hex[:8]}"
    task_def = {"name": ttype, "retryCount": 0, "timeoutSeconds": 0, "responseTimeoutSeconds": 0,
                "ownerEmail": "test@example.com", **limits}
    assert httpx.post(f"{url}/metadata/taskdefs", json=[task_def], headers=headers).status_code == 200
    wf = {"name": f"{ttype}_wf", "version": 1, "schemaVersion": 2, "ownerEmail": "test@example.com",
          "tasks": [{"name": ttype, "taskReferenceName": "t", "type": "SIMPLE"}]}
    assert httpx.post(f"{url}/metadata/workflow", json=wf, headers=headers).status_code == 200
    for i in range(runs):
        assert httpx.post(f"{url}/workflow/{ttype}_wf", json={"i": i}, headers=headers).status_code == 200
    return ttype


def poll(client: httpx.Client, url: str, ttype: str, worker: str) -> list[dict]:
    resp = client.get(f"{url}/tasks/poll/batch/{ttype}", params={"workerid": worker, "count": 2, "timeout": 100})
    assert resp.status_code == 200, resp.text
    return resp.json()


def complete(client: httpx.Client, url: str, task: dict) -> None:
    resp = client.post(f"{url}/tasks", json={"taskId": task["taskId"], "workflowInstanceId": task["workflowInstanceId"],
                                             "status": "COMPLETED", "outputData": {}, "workerId": task["workerId"]})
    assert resp.status_code == 200, resp.text


def test_concurrency_limit_across_two_processes(two_servers, conductor_server):
    """concurrentExecLimit 2, 16 runs, 4 pollers on each server: a worker holds a task
    from its delivery until it sends the result, a span inside the server's IN_PROGRESS
    span, so no more than 2 are ever held at once; every run completes."""
    headers = conductor_server.auth_headers()
    ttype = setup_runs(two_servers[0], 16, headers, concurrentExecLimit=2)
    lock = threading.Lock()
    held = [0]
    most = [0]
    done: list[str] = []
    errors: list[BaseException] = []

    def worker(url: str, name: str) -> None:
        try:
            with httpx.Client(timeout=30, headers=headers) as client:
                deadline = time.monotonic() + DEADLINE_SECONDS
                while time.monotonic() < deadline:
                    with lock:
                        if len(done) >= 16:
                            return
                    for task in poll(client, url, ttype, name):
                        with lock:
                            held[0] += 1
                            most[0] = max(most[0], held[0])
                        time.sleep(0.02)
                        with lock:
                            held[0] -= 1
                        complete(client, url, task)
                        with lock:
                            done.append(task["taskId"])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(two_servers[i % 2], f"w{i}"), daemon=True) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_SECONDS + 30)
    assert not errors, errors
    assert len(done) == 16 and len(set(done)) == 16
    assert 1 <= most[0] <= 2


def test_rate_limit_across_two_processes(two_servers, conductor_server):
    """rateLimitPerFrequency 3 per 600 s: pollers of both servers together get 3 tasks."""
    headers = conductor_server.auth_headers()
    ttype = setup_runs(two_servers[0], 10, headers, rateLimitPerFrequency=3, rateLimitFrequencyInSeconds=600)
    got: list[str] = []
    lock = threading.Lock()

    def worker(url: str, name: str) -> None:
        with httpx.Client(timeout=30, headers=headers) as client:
            for _ in range(10):
                for task in poll(client, url, ttype, name):
                    complete(client, url, task)
                    with lock:
                        got.append(task["taskId"])

    threads = [threading.Thread(target=worker, args=(two_servers[i % 2], f"r{i}"), daemon=True) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_SECONDS)
    assert len(got) == 3 and len(set(got)) == 3
    sizes = httpx.get(f"{two_servers[1]}/tasks/queue/sizes", params={"taskType": ttype}, headers=headers).json()
    assert sizes == {ttype: 7}
