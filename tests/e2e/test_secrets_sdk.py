"""Environment and secrets against a real started server (uvicorn + qcluster, API auth on),
whose own process environment holds SECRET_KEY, DATABASE_URL and a probe variable
(docs/secrets.md):

* the abuse test: a definition reading them through ``${workflow.env.X}``, a bare
  ``${NAME}``, an INLINE script and a jq program gets nothing of the process, while what
  Conductor exposes (``CONDUCTOR_ENV_X``, ``NETFLIX_ENV``, the environment store) reads;
* the Python SDK's secret client (``OrkesSecretClient``) end to end, and worker and
  read-only keys refused a secret's value and every write;
* a real SDK worker receives a secret's value in its poll and echoes it back: the stored
  and shown execution holds ``***``; an HTTP task sends it to a loopback stub.
"""
import hashlib
import json
import subprocess
import sys
import time

import httpx
import pytest

from tests.e2e.conftest import REPO_ROOT, ConductorServer, PostgresDatabase, _is_postgres
from tests.e2e.sdk_helpers import running_workers
from tests.e2e.secret_workers import SECRET_TASK
from tests.support.http_stub import HttpStub, Reply

pytestmark = pytest.mark.e2e

PROBE = "hunter2-probe-7c1e"
VALUE = "tok-4f1d-secret-VALUE"
WAIT_SECONDS = 60


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server of this module's own, started with variables a definition must not read."""
    import os

    workdir = tmp_path_factory.mktemp("conductor-secrets")
    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
    srv = ConductorServer(workdir, pg.url if pg else f"sqlite:///{workdir / 'conductor.sqlite3'}")
    srv.env.update({"SECRET_PROBE": PROBE, "CONDUCTOR_ENV_REGION": "eu-north", "NETFLIX_ENV": "e2e-test"})
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        if pg is not None:
            pg.drop()


def key_of(server: ConductorServer, role: str) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "manage.py", "create_access_key", f"e2e-{role}", "--role", role, "--env"],
                          cwd=REPO_ROOT, env=server.env, capture_output=True, text=True, timeout=300, check=True)
    values = dict(line.split("=", 1) for line in proc.stdout.split())
    return values["CONDUCTOR_AUTH_KEY"], values["CONDUCTOR_AUTH_SECRET"]


def config_for(server: ConductorServer, key: tuple[str, str] | None = None):
    from conductor.client.configuration.configuration import Configuration
    from conductor.client.configuration.settings.authentication_settings import AuthenticationSettings

    key_id, key_secret = key or (server.key_id, server.key_secret)
    return Configuration(server_api_url=server.url,
                         authentication_settings=AuthenticationSettings(key_id=key_id, key_secret=key_secret))


def call(server: ConductorServer, method: str, path: str, headers: dict | None = None, **kw) -> httpx.Response:
    return httpx.request(method, server.url + path, headers={**server.auth_headers(), **(headers or {})},
                         timeout=30, **kw)


def run_to_end(server: ConductorServer, definition: dict, workflow_input: dict | None = None) -> dict:
    """Register ``definition``, start it and return the execution once it has ended."""
    assert call(server, "POST", "/metadata/workflow", params={"overwrite": "true"}, json=definition).status_code == 200
    resp = call(server, "POST", "/workflow", json={"name": definition["name"], "input": workflow_input or {}})
    assert resp.status_code == 200, resp.text
    workflow_id = resp.text
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        wf = call(server, "GET", f"/workflow/{workflow_id}").json()
        if wf["status"] in ("COMPLETED", "FAILED", "TERMINATED", "TIMED_OUT"):
            return wf
        time.sleep(0.2)
    raise AssertionError(f"{workflow_id} did not end: {json.dumps(wf)[:3000]}")


def test_a_definition_reads_nothing_of_the_server_process(server):
    assert call(server, "PUT", "/environment/team", content="payments",
                headers={"Content-Type": "text/plain"}).status_code == 200
    names = ["SECRET_KEY", "DATABASE_URL", "SECRET_PROBE", "UNKNOWN_VAR_XYZ", "HOME", "PATH"]
    definition = {
        "name": "e2e_env_probe", "version": 1, "schemaVersion": 2, "ownerEmail": "a@b.c",
        "tasks": [
            {"name": "set", "taskReferenceName": "set", "type": "SET_VARIABLE",
             "inputParameters": {f"env_{n}": f"${{workflow.env.{n}}}" for n in names}},
            {"name": "script", "taskReferenceName": "script", "type": "INLINE", "inputParameters": {
                "evaluatorType": "javascript",
                "fromEnv": "${workflow.env.SECRET_KEY}", "bare": "${SECRET_KEY}",
                "expression": "(function(){ var seen = {}; var g = Object.getOwnPropertyNames(globalThis);"
                              " seen.globals = g.join(','); seen.process = typeof process; seen.std = typeof std;"
                              " seen.os = typeof os; seen.env = typeof env; seen.input = [$.fromEnv, $.bare];"
                              " return seen; })()"}},
            {"name": "jq", "taskReferenceName": "jq", "type": "JSON_JQ_TRANSFORM", "inputParameters": {
                "queryExpression": "{key: $ENV.SECRET_KEY, db: env.DATABASE_URL, probe: $ENV.SECRET_PROBE,"
                                   " unknown: $ENV.UNKNOWN_VAR_XYZ, all: $ENV}"}},
        ],
        "outputParameters": {
            **{f"bare_{n}": f"${{{n}}}" for n in names},
            **{f"env_{n}": f"${{workflow.env.{n}}}" for n in names},
            "region": "${workflow.env.REGION}", "team": "${workflow.env.team}", "netflix_env": "${NETFLIX_ENV}",
            "script": "${script.output.result}", "jq": "${jq.output.result}",
        },
    }
    wf = run_to_end(server, definition)
    assert wf["status"] == "COMPLETED", json.dumps(wf)[:3000]
    out = wf["output"]
    for n in names:
        assert out[f"bare_{n}"] is None and out[f"env_{n}"] is None, n
    assert (out["region"], out["team"], out["netflix_env"]) == ("eu-north", "payments", "e2e-test")
    assert out["script"]["process"] == out["script"]["std"] == out["script"]["os"] == "undefined"
    assert out["script"]["input"] == [None, None]
    assert out["jq"]["key"] is None and out["jq"]["db"] is None and out["jq"]["probe"] is None
    text = json.dumps(wf)
    for leaked in (server.env["SECRET_KEY"], server.env["DATABASE_URL"], PROBE):
        assert leaked not in text


def test_the_sdk_secret_client_and_roles(server):
    from conductor.client.http.rest import ApiException
    from conductor.client.orkes.orkes_secret_client import OrkesSecretClient

    admin = OrkesSecretClient(config_for(server))
    admin.put_secret("e2e_api_key", 'v@lue "quoted" \\ end')
    assert admin.get_secret("e2e_api_key") == 'v@lue "quoted" \\ end'
    assert admin.secret_exists("e2e_api_key") is True
    assert admin.secret_exists("e2e_never") is False
    assert "e2e_api_key" in admin.list_all_secret_names()
    assert "e2e_api_key" in admin.list_secrets_that_user_can_grant_access_to()

    for role in ("worker", "read_only"):
        other = OrkesSecretClient(config_for(server, key_of(server, role)))
        with pytest.raises(ApiException) as refused:
            other.get_secret("e2e_api_key")
        assert refused.value.status == 403, role
        with pytest.raises(ApiException) as refused:
            other.put_secret("e2e_api_key", "overwritten")
        assert refused.value.status == 403, role
        with pytest.raises(ApiException) as refused:
            other.delete_secret("e2e_api_key")
        assert refused.value.status == 403, role
        assert other.secret_exists("e2e_api_key") is True
    assert admin.get_secret("e2e_api_key") == 'v@lue "quoted" \\ end'

    admin.delete_secret("e2e_api_key")
    assert admin.secret_exists("e2e_api_key") is False


def test_a_worker_gets_the_value_and_its_echo_is_masked(server):
    from conductor.client.orkes.orkes_secret_client import OrkesSecretClient

    OrkesSecretClient(config_for(server)).put_secret("e2e_worker_token", VALUE)
    assert call(server, "POST", "/metadata/taskdefs", json=[{"name": SECRET_TASK, "ownerEmail": "a@b.c",
                                                             "retryCount": 0, "responseTimeoutSeconds": 30}]
                ).status_code == 200
    stub = HttpStub(lambda request: Reply(200, {"auth": request.headers.get("authorization")}))
    definition = {
        "name": "e2e_secret_use", "version": 1, "schemaVersion": 2, "ownerEmail": "a@b.c",
        "tasks": [
            {"name": SECRET_TASK, "taskReferenceName": "use", "type": "SIMPLE", "inputParameters": {
                "token": "${workflow.secrets.e2e_worker_token}",
                "header": "Bearer ${workflow.secrets.e2e_worker_token}"}},
            {"name": "call", "taskReferenceName": "call", "type": "HTTP", "inputParameters": {"http_request": {
                "uri": f"{stub.url}/hook", "method": "POST", "body": {"k": "${workflow.secrets.e2e_worker_token}"},
                "headers": {"Authorization": "Bearer ${workflow.secrets.e2e_worker_token}"}}}},
        ],
    }
    try:
        with running_workers(config_for(server), task_types=[SECRET_TASK]):
            wf = run_to_end(server, definition)
        assert wf["status"] == "COMPLETED", json.dumps(wf)[:3000]
        use, http = wf["tasks"]
        assert use["outputData"]["token_sha256"] == hashlib.sha256(VALUE.encode()).hexdigest()
        assert use["outputData"]["header_sha256"] == hashlib.sha256(f"Bearer {VALUE}".encode()).hexdigest()
        assert use["outputData"]["echo"] == "***"
        assert use["inputData"]["token"] == "${workflow.secrets.e2e_worker_token}"
        (request,) = stub.requests
        assert request.headers["authorization"] == f"Bearer {VALUE}" and request.json() == {"k": VALUE}
        assert http["outputData"]["response"]["body"] == {"auth": "Bearer ***"}
        shown = [json.dumps(wf), call(server, "GET", f"/tasks/{use['taskId']}").text,
                 call(server, "GET", "/workflow/search", params={"query": "workflowType IN (e2e_secret_use)"}).text]
        for text in shown:
            assert VALUE not in text
    finally:
        stub.close()
