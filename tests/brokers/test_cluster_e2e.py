"""The whole path in a real server (uvicorn + ``manage.py qcluster``) against a real NATS:
an EVENT task on ``nats_stream:`` is sent by the cluster's outbox job after commit, and
the cluster's consumer thread hands it to the handler that starts a workflow."""
from __future__ import annotations

import os
import time

import httpx
import pytest

from tests.factories import unique, workflow_def

pytestmark = [pytest.mark.e2e]


def test_an_event_task_starts_a_workflow_through_the_clusters_consumer(nats_server, tmp_path):
    from tests.e2e.conftest import ConductorServer, PostgresDatabase

    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if session_url.startswith("postgres") else None
    server = ConductorServer(tmp_path, pg.url if pg else f"sqlite:///{tmp_path / 'conductor.sqlite3'}")
    server.env.update({"CONDUCTOR_NATS_URL": nats_server.url, "CONDUCTOR_BROKER_HANDLER_REFRESH_SECONDS": "1"})
    sink, publisher, started = f"nats_stream:{unique('e2e')}", unique("pub"), unique("started")
    try:
        server.start()
        http = httpx.Client(base_url=server.url, headers=server.auth_headers(), timeout=30)
        http.put("/metadata/workflow", json=[
            workflow_def(started, [{"name": "noop", "taskReferenceName": "noop", "type": "NOOP"}]),
            workflow_def(publisher, [{"name": "notify", "taskReferenceName": "notify", "type": "EVENT",
                                      "sink": sink, "inputParameters": {"orderId": "${workflow.input.orderId}"}}]),
        ]).raise_for_status()
        http.post("/event", json={"name": unique("h"), "event": sink, "active": True, "actions": [{
            "action": "start_workflow",
            "start_workflow": {"name": started, "correlationId": "${orderId}", "input": {"orderId": "${orderId}"}}}],
        }).raise_for_status()
        task_ids = {}
        for order in ("e-1", "e-2"):
            wf_id = http.post(f"/workflow/{publisher}", json={"orderId": order}).raise_for_status().text
            task_ids[order] = http.get(f"/workflow/{wf_id}").json()["tasks"][0]["taskId"]
        found: dict = {}
        deadline = time.monotonic() + 60
        while len(found) < 2 and time.monotonic() < deadline:
            for order in task_ids:
                runs = http.get(f"/workflow/{started}/correlated/{order}", params={"includeClosed": "true"}).json()
                if runs:
                    found[order] = runs
            time.sleep(0.5)
        assert sorted(found) == ["e-1", "e-2"], server.diagnostics()
        for order, runs in found.items():
            assert len(runs) == 1
            assert runs[0]["input"]["conductor.event.messageId"] == task_ids[order]
    finally:
        server.stop()
        if pg is not None:
            pg.drop()
