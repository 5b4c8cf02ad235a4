"""Status-listener deliveries survive a crash: a loopback receiver sees every subscribed
transition of every workflow exactly once (as a 200-answered POST), although it refused
deliveries while the server (uvicorn and the qcluster) was killed with SIGKILL and
restarted. Workers are the official SDK's task client; both databases."""
from __future__ import annotations

import os
import time
from collections import Counter

import httpx
import pytest
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.models.task_result import TaskResult
from conductor.client.http.models.task_result_status import TaskResultStatus
from conductor.client.orkes.orkes_task_client import OrkesTaskClient

from tests.crash.harness import CrashServer
from tests.e2e.conftest import PostgresDatabase, _is_postgres
from tests.factories import unique
from tests.listeners.receiver import Receiver

pytestmark = pytest.mark.e2e

WAIT_SECONDS = 90


def _wait(predicate, what: str, timeout: float = WAIT_SECONDS, tick=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tick:
            tick()
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def expected(workflow_id: str) -> list[tuple]:
    return [(workflow_id, "STARTED", None), (workflow_id, "SCHEDULED", "step"), (workflow_id, "COMPLETED", "step"),
            (workflow_id, "COMPLETED", None)]


def seen(receiver: Receiver) -> list[tuple]:
    return [(r["body"]["workflowId"], r["headers"]["x-conductor-event"], r["body"].get("referenceTaskName"))
            for r in receiver.delivered()]


def test_every_transition_is_delivered_once_across_a_restart(tmp_path, monkeypatch):
    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
    with Receiver() as receiver:
        server = CrashServer(tmp_path, pg.url if pg else f"sqlite:///{tmp_path / 'listen.sqlite3'}")
        server.env.update({
            "CONDUCTOR_WORKFLOW_STATUS_LISTENER": "workflow_publisher",
            "CONDUCTOR_TASK_STATUS_LISTENER": "task_publisher",
            "CONDUCTOR_STATUS_NOTIFIER_URL": receiver.url,
            "CONDUCTOR_STATUS_NOTIFIER_ENDPOINT_WORKFLOW": "workflow",
            "CONDUCTOR_STATUS_NOTIFIER_ENDPOINT_TASK": "task",
            "CONDUCTOR_STATUS_NOTIFIER_SUBSCRIBED_WORKFLOW_STATUSES": "RUNNING,COMPLETED",
            "CONDUCTOR_STATUS_NOTIFIER_SUBSCRIBED_TASK_STATUSES": "SCHEDULED,COMPLETED",
            "CONDUCTOR_STATUS_NOTIFIER_RETRY_DELAY_MS": "200",
            "CONDUCTOR_STATUS_NOTIFIER_MAX_ATTEMPTS": "1000",
        })
        try:
            server.start()
            base = server.url
            http = httpx.Client(headers=server.auth_headers(), timeout=30)
            workflow, task = unique("notified"), unique("notified_task")
            assert http.post(f"{base}/metadata/taskdefs", json=[{"name": task, "ownerEmail": "e2e@example.com",
                                                                  "retryCount": 0}]).status_code == 200
            assert http.post(f"{base}/metadata/workflow", json={
                "name": workflow, "version": 1, "schemaVersion": 2, "ownerEmail": "e2e@example.com",
                "workflowStatusListenerEnabled": True,
                "tasks": [{"name": task, "taskReferenceName": "step", "type": "SIMPLE"}]}).status_code == 200
            for key, value in server.sdk_env().items():
                monkeypatch.setenv(key, value)
            tasks = OrkesTaskClient(Configuration())

            def work():
                for t in tasks.batch_poll_tasks(task, worker_id="w1", count=10, timeout_in_millisecond=100) or []:
                    tasks.update_task(TaskResult(workflow_instance_id=t.workflow_instance_id, task_id=t.task_id,
                                                 worker_id="w1", status=TaskResultStatus.COMPLETED, output_data={}))

            def start() -> str:
                r = http.post(f"{base}/workflow/{workflow}", json={})
                assert r.status_code == 200, r.text
                return r.text

            # 1. a healthy receiver hears the whole life of a workflow, in order
            first = start()
            _wait(lambda: seen(receiver) == expected(first), "the first workflow's notifications", tick=work)

            # 2. the receiver refuses while more workflows run; the server is killed
            receiver.failing.set()
            ids = [start() for _ in range(3)]
            _wait(lambda: all(http.get(f"{base}/workflow/{i}", params={"includeTasks": "false"}).json()["status"]
                              == "COMPLETED" for i in ids), "the workflows to complete", tick=work)
            refused = receiver.attempts()
            _wait(lambda: receiver.attempts() >= refused + 2, "refused delivery attempts")
            server.kill("qcluster")
            server.kill("server")

            # 3. restarted, with the receiver back: everything arrives, nothing twice
            receiver.failing.clear()
            server.restart("server")
            server.restart("qcluster")
            want = expected(first) + [e for i in ids for e in expected(i)]
            _wait(lambda: Counter(seen(receiver)) == Counter(want), "every notification after the restart")
            time.sleep(1.0)  # a duplicate would show up here
            counts = Counter(seen(receiver))
            assert counts == Counter(want), counts
            for i in ids:  # per workflow, in the order things happened
                assert [e for e in seen(receiver) if e[0] == i] == expected(i)
            print(f"listener restart: {len(want)} notifications delivered once, "
                  f"{receiver.attempts() - len(want)} refused attempts retried")
        finally:
            if "http" in locals():
                http.close()
            server.kill_all()
            if pg is not None:
                pg.drop()
