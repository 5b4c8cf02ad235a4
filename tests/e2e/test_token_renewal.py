"""The official Python SDK renews an expired token (issue #10): against a server whose
tokens live 3 seconds (``CONDUCTOR_API_TOKEN_TTL_SECONDS``), an SDK worker process keeps
polling and completing tasks across several expiries, and the SDK's own clients keep
starting and reading workflows: each 401 ``EXPIRED_TOKEN`` makes the SDK trade its key
for a new token at ``POST /api/token`` and retry the call."""
import os
import time

import httpx
import pytest
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.models.task_def import TaskDef
from conductor.client.orkes_clients import OrkesClients
from conductor.client.workflow.conductor_workflow import ConductorWorkflow

from tests.e2e import token_workers
from tests.e2e.conftest import ConductorServer, PostgresDatabase, _is_postgres
from tests.e2e.sdk_helpers import running_workers, wait_for_workflow

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore:Call to deprecated function:DeprecationWarning"),
]
TTL_SECONDS = 3
EXPIRY_WAIT_SECONDS = 60  # a bound (a loaded machine answers slowly), not the TTL's precision


@pytest.fixture
def short_token_server(tmp_path, monkeypatch):
    """A server of its own (uvicorn + qcluster, fresh database) issuing 3-second tokens;
    the SDK's variables point at it."""
    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
    server = ConductorServer(tmp_path, pg.url if pg else f"sqlite:///{tmp_path / 'conductor.sqlite3'}")
    server.env["CONDUCTOR_API_TOKEN_TTL_SECONDS"] = str(TTL_SECONDS)
    try:
        server.start()
        for name, value in server.sdk_env().items():
            monkeypatch.setenv(name, value)
        yield server
    finally:
        server.stop()
        if pg is not None:
            pg.drop()


def _wait_until_expired(server, token: str) -> None:
    """Until ``token`` answers 401 EXPIRED_TOKEN (bounded: EXPIRY_WAIT_SECONDS)."""
    deadline = time.monotonic() + EXPIRY_WAIT_SECONDS
    while time.monotonic() < deadline:
        resp = httpx.get(f"{server.url}/metadata/taskdefs", headers={"X-Authorization": token}, timeout=30)
        if resp.status_code == 401:
            assert resp.json()["error"] == "EXPIRED_TOKEN"
            return
        time.sleep(0.2)
    pytest.fail(f"a {TTL_SECONDS}s token still worked after {EXPIRY_WAIT_SECONDS}s")


def test_an_sdk_worker_keeps_working_across_token_expiry(short_token_server):
    config = Configuration()
    clients = OrkesClients(configuration=config)
    clients.get_metadata_client().register_task_def(TaskDef(name=token_workers.ECHO_TASK, timeout_seconds=120,
                                                            response_timeout_seconds=60))
    executor = clients.get_workflow_executor()
    workflow = ConductorWorkflow(executor=executor, name="e2e_token_renewal", version=1)
    workflow >> token_workers.token_echo(task_ref_name="echo", value="${workflow.input.value}")
    workflow.register(overwrite=True)
    first_token = short_token_server.auth_headers()["X-Authorization"]
    with running_workers(config, [token_workers.ECHO_TASK]):
        for round_ in range(3):
            workflow_id = workflow.start_workflow_with_input(workflow_input={"value": f"round-{round_}"})
            done = wait_for_workflow(executor, config, workflow_id)
            assert done.status == "COMPLETED", done.reason_for_incompletion
            assert done.tasks[0].output_data == {"echo": f"round-{round_}"}
            # a token issued now expires after every token the SDK (test process and
            # worker process) holds now: once it is stale, so are theirs, and the next
            # round only runs if both renew theirs
            token = httpx.post(f"{short_token_server.url}/token", timeout=10,
                               json={"keyId": short_token_server.key_id,
                                     "keySecret": short_token_server.key_secret}).json()["token"]
            _wait_until_expired(short_token_server, token)
    _wait_until_expired(short_token_server, first_token)
