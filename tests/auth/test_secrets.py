"""The secrets store, the environment store and ``${workflow.secrets.NAME}`` through the API
with authentication on (docs/secrets.md): roles, encryption at rest, resolution in a
worker's poll (batch and update-v2) and an HTTP task's call, masking of a value a worker or
a remote service sends back on every surface that shows an execution, and the missing-secret
reason. The real SDK clients and workers against a started server: tests/e2e/test_secrets_sdk.py."""
from __future__ import annotations

import json

import pytest

from tests.auth.conftest import TokenApi, make_key, token_for
from tests.cases.harness import install_job_capture
from tests.factories import simple_task, task_def, unique, workflow_def
from tests.support.http_stub import HttpStub, Reply

VALUE = "s3cr3t-Value-9f2c"  # what no stored row and no page may hold


@pytest.fixture
def admin(db, auth_on) -> TokenApi:
    return TokenApi(token_for(*make_key("admin", "secrets-admin")))


def put_secret(api: TokenApi, name: str, value: str):
    """``PUT /api/secrets/{name}`` as the Python SDK sends it: ``json.dumps(value)`` with
    its quotes stripped, ``Content-Type: application/json``."""
    return api.put(f"/secrets/{name}", raw=json.dumps(value).strip('"'))


def everything_stored() -> str:
    """Every row of the executions, their tasks, logs, history, listener deliveries and the
    audit log, as one JSON text (the secret's own encrypted row left out)."""
    from django.apps import apps
    from django.core import serializers

    models = [m for label in ("engine", "ui", "listeners") for m in apps.get_app_config(label).get_models()]
    return "".join(serializers.serialize("json", m.objects.all()) for m in models)


def test_secrets_api_roles_and_encryption_at_rest(admin, as_role):
    from cryptography.fernet import Fernet
    from django.conf import settings

    from apps.metadata.models import Secret

    name = unique("api_key")
    assert put_secret(admin, name, 'quote " and \\ slash').status_code == 200
    got = admin.get(f"/secrets/{name}")
    assert (got.status_code, got.content.decode(), got["Content-Type"]) == (200, 'quote " and \\ slash', "text/plain")
    raw = admin.client.put(f"/api/secrets/{name}2", data="plain text \\n kept", content_type="text/plain",
                           HTTP_X_AUTHORIZATION=admin.token)  # curl's shape: kept as sent
    assert raw.status_code == 200
    assert admin.get(f"/secrets/{name}2").content.decode() == "plain text \\n kept"
    java = admin.client.put(f"/api/secrets/{name}3", data="C:\\new", content_type="application/json",
                            HTTP_USER_AGENT="okhttp/4.12.0", HTTP_X_AUTHORIZATION=admin.token)  # the Java SDK
    assert java.status_code == 200
    assert admin.get(f"/secrets/{name}3").content.decode() == "C:\\new"
    assert put_secret(admin, name + "4", "é \\ ü").status_code == 200  # the Python SDK: \u00e9 ...
    assert admin.get(f"/secrets/{name}4").content.decode() == "é \\ ü"

    token = Secret.objects.get(pk=name).token
    assert "quote" not in token
    key = (settings.SECRETS_KEYS or [(settings.VAR_DIR / "secrets_key").read_text().strip()])[0]
    assert Fernet(key.encode()).decrypt(token.encode()).decode() == 'quote " and \\ slash'

    assert name in admin.get("/secrets").json() and name in admin.post("/secrets").json()
    meta = {m["name"]: m for m in admin.get("/secrets/v2").json()}
    assert set(meta[name]) == {"name", "createTime", "updateTime"}
    assert admin.get("/secrets-v2").json() == admin.get("/secrets/v2").json()
    assert admin.get(f"/secrets/{name}/exists").json() is True
    assert admin.get(f"/secrets/{unique('nope')}/exists").json() is False

    for role in ("read_only", "worker", "operator"):
        api = as_role(role)
        assert api.get(f"/secrets/{name}").status_code == 403, role
        assert put_secret(api, name, "overwritten").status_code == 403, role
        assert api.delete(f"/secrets/{name}").status_code == 403, role
        assert api.get(f"/secrets/{name}/exists").json() is True  # names are not secret
        assert name in api.get("/secrets").json()
    assert admin.get(f"/secrets/{name}").content.decode() == 'quote " and \\ slash'

    bad = admin.put("/secrets/no%20spaces", raw="x")
    assert bad.status_code == 400 and bad.json()["validationErrors"][0]["path"] == "key"
    empty = admin.put(f"/secrets/{name}", raw="")
    assert empty.status_code == 400 and "value" in empty.json()["message"]
    assert admin.get(f"/secrets/{unique('nope')}").status_code == 404

    assert admin.delete(f"/secrets/{name}").status_code == 200
    assert admin.get(f"/secrets/{name}").status_code == 404
    assert admin.delete(f"/secrets/{name}").status_code == 200  # Conductor: 200 either way


def test_environment_api_and_roles(admin, as_role, monkeypatch):
    monkeypatch.setenv("CONDUCTOR_ENV_REGION_T", "eu-west")
    monkeypatch.setenv("NOT_PREFIXED_T", "hidden")
    name = unique("feature")
    assert admin.put(f"/environment/{name}", raw=json.dumps("on").strip('"')).status_code == 200
    listed = {v["name"]: v["value"] for v in admin.get("/environment").json()}
    assert listed[name] == "on" and listed["REGION_T"] == "eu-west"
    assert "NOT_PREFIXED_T" not in listed and not any(k.startswith("CONDUCTOR_ENV_") for k in listed)
    assert admin.get(f"/environment/{name}").content.decode() == "on"
    assert admin.get("/environment/REGION_T").content.decode() == "eu-west"
    assert admin.get("/environment/NOT_PREFIXED_T").status_code == 404

    reader = as_role("read_only")
    assert reader.get(f"/environment/{name}").content.decode() == "on"
    for role in ("read_only", "worker", "operator"):
        assert as_role(role).put(f"/environment/{name}", raw="off").status_code == 403, role
        assert as_role(role).delete(f"/environment/{name}").status_code == 403, role
    assert admin.delete(f"/environment/{name}").status_code == 200
    assert admin.get(f"/environment/{name}").status_code == 404


def test_workflow_env_reads_the_store_and_the_prefix_only(admin, monkeypatch):
    monkeypatch.setenv("CONDUCTOR_ENV_STAGE_T", "blue")
    monkeypatch.setenv("SECRET_PROBE_T", "hunter2")
    monkeypatch.setenv("NETFLIX_STACK", "stack-7")
    admin.put("/environment/cfg_t", raw='{"url": "https://example.test"}')
    name = unique("env_read")
    admin.ok(admin.post("/metadata/workflow", workflow_def(name, [
        {"name": "set", "taskReferenceName": "set", "type": "SET_VARIABLE",
         "inputParameters": {"a": "${workflow.env.STAGE_T}"}}],
        outputParameters={"stage": "${workflow.env.STAGE_T}", "url": "${workflow.env.cfg_t.url}",
                          "probe_env": "${workflow.env.SECRET_PROBE_T}", "probe_bare": "${SECRET_PROBE_T}",
                          "home": "${HOME}", "key": "${SECRET_KEY}", "stack": "${NETFLIX_STACK}",
                          "prefixed_bare": "${CONDUCTOR_ENV_STAGE_T}"}), params={"overwrite": True}))
    wid = admin.ok(admin.post("/workflow", {"name": name, "input": {}})).content.decode()
    out = admin.get(f"/workflow/{wid}").json()["output"]
    assert out == {"stage": "blue", "url": "https://example.test", "probe_env": None, "probe_bare": None,
                   "home": None, "key": None, "stack": "stack-7", "prefixed_bare": None}


def _secret_workflow(admin, task_type: str, name: str, secret: str, extra_input: dict | None = None) -> str:
    admin.ok(admin.post("/metadata/taskdefs", [task_def(task_type)]))
    admin.ok(admin.post("/metadata/workflow", workflow_def(name, [simple_task(task_type, "use", {
        "token": f"${{workflow.secrets.{secret}}}", "header": f"Bearer ${{workflow.secrets.{secret}}}",
        "plain": "${workflow.input.x}", **(extra_input or {})})]), params={"overwrite": True}))
    return admin.ok(admin.post("/workflow", {"name": name, "input": {"x": 1}})).content.decode()


def test_a_polled_task_gets_the_value_and_nothing_shown_or_stored_holds_it(admin, as_role, client):
    from django.contrib.auth.models import User

    from apps.engine.models import TaskExecution

    secret, task_type, name = unique("tok"), unique("sec_worker"), unique("sec_wf")
    put_secret(admin, secret, VALUE)
    put_secret(admin, secret + "_json", json.dumps({"user": "svc", "pw": VALUE + "-pw"}))
    wid = _secret_workflow(admin, task_type, name, secret, {"pw": f"${{workflow.secrets.{secret}_json.pw}}"})
    worker = as_role("worker")

    stored = TaskExecution.objects.get(workflow_id=wid).input_data
    assert stored["token"] == f"${{workflow.secrets.{secret}}}"

    (task,) = worker.get(f"/tasks/poll/batch/{task_type}?workerid=w1&count=1").json()
    assert task["inputData"] == {"token": VALUE, "header": f"Bearer {VALUE}", "plain": 1, "pw": VALUE + "-pw"}
    # shown again (not a poll): the expression
    assert admin.get(f"/tasks/{task['taskId']}").json()["inputData"]["token"] == f"${{workflow.secrets.{secret}}}"

    # a worker that echoes the value into its output, its reason and its logs
    resp = worker.post("/tasks", {"workflowInstanceId": wid, "taskId": task["taskId"], "status": "COMPLETED",
                                  "workerId": "w1", "reasonForIncompletion": f"used {VALUE}",
                                  "outputData": {"echo": VALUE, "nested": [{"auth": f"Bearer {VALUE}"}],
                                                 VALUE: "as a key", "pw": VALUE + "-pw"},
                                  "logs": [{"log": f"calling with {VALUE}", "createdTime": 1}]})
    assert resp.status_code == 200, resp.content
    worker.post(f"/tasks/{task['taskId']}/log", raw=f"again {VALUE}")

    wf = admin.get(f"/workflow/{wid}").json()
    assert wf["status"] == "COMPLETED"
    out = wf["tasks"][0]["outputData"]
    assert out == {"echo": "***", "nested": [{"auth": "Bearer ***"}], "***": "as a key", "pw": "***"}
    assert [entry["log"] for entry in admin.get(f"/tasks/{task['taskId']}/log").json()] == \
        ["calling with ***", "again ***"]

    user = User.objects.create_superuser("sec-admin", "s@example.com", "pw")
    client.force_login(user)
    responses = {
        "workflow": admin.get(f"/workflow/{wid}"),
        "task": admin.get(f"/tasks/{task['taskId']}"),
        "search": admin.get("/workflow/search", {"query": f"workflowType IN ({name})"}),
        "search_tasks": admin.get("/tasks/search", {"query": f"workflowId='{wid}'"}),
        "execution_page": client.get(f"/execution/{wid}"),
        "execution_data": client.get(f"/execution/{wid}/live.json"),
        "history": client.get(f"/execution/{wid}/history.json"),
        "compare": client.get("/compare", {"a": wid, "b": wid}),
    }
    for surface, resp in responses.items():
        assert resp.status_code == 200, (surface, resp.status_code)
        assert VALUE.encode() not in resp.content, surface
    assert b"***" in responses["workflow"].content and b"***" in responses["execution_data"].content
    assert VALUE not in everything_stored()


def test_update_v2_hands_the_next_task_with_its_secret(admin, as_role):
    secret, task_type = unique("tok"), unique("sec_v2")
    put_secret(admin, secret, VALUE)
    first = _secret_workflow(admin, task_type, unique("sec_v2_wf"), secret)
    second_name = unique("sec_v2_wf")
    second = _secret_workflow(admin, task_type, second_name, secret)
    worker = as_role("worker")
    (task,) = worker.get(f"/tasks/poll/batch/{task_type}?workerid=w1&count=1").json()
    nxt = worker.post("/tasks/update-v2", {"workflowInstanceId": task["workflowInstanceId"],
                                           "taskId": task["taskId"], "status": "COMPLETED", "workerId": "w1",
                                           "outputData": {}})
    assert nxt.status_code == 200, nxt.content
    body = nxt.json()
    assert {task["workflowInstanceId"], body["workflowInstanceId"]} == {first, second}
    assert body["inputData"]["token"] == VALUE and body["inputData"]["header"] == f"Bearer {VALUE}"


def test_a_missing_secret_fails_the_task_naming_it(admin, as_role):
    task_type, missing = unique("sec_missing"), unique("never_stored")
    wid = _secret_workflow(admin, task_type, unique("sec_missing_wf"), missing)
    assert as_role("worker").get(f"/tasks/poll/batch/{task_type}?workerid=w1&count=1").json() == []
    wf = admin.get(f"/workflow/{wid}").json()
    (task,) = wf["tasks"]
    assert task["status"] == "FAILED" and wf["status"] == "FAILED"
    assert missing in task["reasonForIncompletion"] and "does not exist" in task["reasonForIncompletion"]


def test_workflow_test_endpoint_keeps_the_expression(admin):
    secret = unique("tok")
    put_secret(admin, secret, VALUE)
    task_type = unique("sec_sim")
    resp = admin.post("/workflow/test", {
        "name": unique("sec_sim_wf"), "workflowDef": workflow_def("sim", [simple_task(task_type, "use", {
            "token": f"${{workflow.secrets.{secret}}}"})]),
        "taskRefToMockOutput": {"use": [{"status": "COMPLETED", "output": {"ok": True}}]}})
    assert resp.status_code == 200, resp.content
    assert VALUE.encode() not in resp.content
    assert resp.json()["tasks"][0]["inputData"]["token"] == f"${{workflow.secrets.{secret}}}"


@pytest.fixture
def jobs(transactional_db, monkeypatch) -> list:
    captured: list = []
    install_job_capture(monkeypatch, captured)
    return captured


def test_http_task_sends_the_secret_and_stores_it_masked(jobs, auth_on):
    admin = TokenApi(token_for(*make_key("admin", "http-admin")))
    secret = unique("http_tok")
    put_secret(admin, secret, VALUE)
    stub = HttpStub(lambda request: Reply(200, {"echoed": request.headers.get("authorization"),
                                                 "body": request.json()}))
    try:
        name = unique("sec_http")
        admin.ok(admin.post("/metadata/workflow", workflow_def(name, [
            {"name": "call", "taskReferenceName": "call", "type": "HTTP", "inputParameters": {"http_request": {
                "uri": f"{stub.url}/hook", "method": "POST",
                "headers": {"Authorization": f"Bearer ${{workflow.secrets.{secret}}}"},
                "body": {"key": f"${{workflow.secrets.{secret}}}", "n": 1}}}}]), params={"overwrite": True}))
        wid = admin.ok(admin.post("/workflow", {"name": name, "input": {}})).content.decode()
        while jobs:
            func, args, kwargs = jobs.pop(0)
            func(*args, **kwargs)
        (request,) = stub.requests
        assert request.headers["authorization"] == f"Bearer {VALUE}"
        assert request.json() == {"key": VALUE, "n": 1}
        wf = admin.get(f"/workflow/{wid}").json()
        (task,) = wf["tasks"]
        assert task["status"] == "COMPLETED", task
        assert task["outputData"]["response"]["body"] == {"echoed": "Bearer ***", "body": {"key": "***", "n": 1}}
        assert task["inputData"]["http_request"]["headers"]["Authorization"] == f"Bearer ${{workflow.secrets.{secret}}}"
        assert VALUE not in everything_stored()
    finally:
        stub.close()


def test_http_task_with_a_missing_secret_fails_without_calling(jobs, auth_on):
    admin = TokenApi(token_for(*make_key("admin", "http-admin2")))
    missing = unique("gone")
    stub = HttpStub(lambda request: Reply(200, {}))
    try:
        name = unique("sec_http_missing")
        admin.ok(admin.post("/metadata/workflow", workflow_def(name, [
            {"name": "call", "taskReferenceName": "call", "type": "HTTP", "inputParameters": {"http_request": {
                "uri": f"{stub.url}/hook", "method": "GET",
                "headers": {"X-Key": f"${{workflow.secrets.{missing}}}"}}}}]), params={"overwrite": True}))
        wid = admin.ok(admin.post("/workflow", {"name": name, "input": {}})).content.decode()
        while jobs:
            func, args, kwargs = jobs.pop(0)
            func(*args, **kwargs)
        assert stub.requests == []
        (task,) = admin.get(f"/workflow/{wid}").json()["tasks"]
        assert task["status"] == "FAILED" and missing in task["reasonForIncompletion"]
    finally:
        stub.close()


def test_a_reference_planted_in_data_is_not_resolved(admin, as_role):
    """A ``${workflow.secrets.X}`` that reaches a task's input from data (here the workflow
    input an operator gives) names nothing the definition asked for: the worker receives it
    as written, not the value (otherwise any operator could read any secret)."""
    secret, other = unique("tok"), unique("other")
    put_secret(admin, secret, VALUE)
    put_secret(admin, other, "other-" + VALUE)
    task_type, name = unique("sec_plant"), unique("sec_plant_wf")
    admin.ok(admin.post("/metadata/taskdefs", [task_def(task_type)]))
    admin.ok(admin.post("/metadata/workflow", workflow_def(name, [simple_task(task_type, "use", {
        "token": f"${{workflow.secrets.{secret}}}", "url": "${workflow.input.url}"})]), params={"overwrite": True}))
    operator = as_role("operator")
    planted = f"https://evil.invalid/?k=${{workflow.secrets.{other}}}"
    wid = operator.ok(operator.post("/workflow", {"name": name, "input": {"url": planted}})).content.decode()
    (task,) = as_role("worker").get(f"/tasks/poll/batch/{task_type}?workerid=w1&count=1").json()
    assert task["workflowInstanceId"] == wid
    assert task["inputData"] == {"token": VALUE, "url": planted}


def test_a_reference_planted_in_the_string_that_writes_a_secret_is_not_resolved(admin, as_role):
    """A string of the definition that writes one secret and takes data (``url:
    "${workflow.input.base}?k=${workflow.secrets.A}"``): a reference planted in the data
    stays as written, even to a secret the definition writes elsewhere in the task."""
    a, b = unique("tok_a"), unique("tok_b")
    put_secret(admin, a, VALUE)
    put_secret(admin, b, "b-" + VALUE)
    task_type, name = unique("sec_plant2"), unique("sec_plant2_wf")
    admin.ok(admin.post("/metadata/taskdefs", [task_def(task_type)]))
    admin.ok(admin.post("/metadata/workflow", workflow_def(name, [simple_task(task_type, "use", {
        "url": f"${{workflow.input.base}}?k=${{workflow.secrets.{a}}}",
        "header": f"${{workflow.secrets.{b}}}"})]), params={"overwrite": True}))
    operator = as_role("operator")
    planted = f"https://evil.invalid/${{workflow.secrets.{b}}}"
    operator.ok(operator.post("/workflow", {"name": name, "input": {"base": planted}}))
    (task,) = as_role("worker").get(f"/tasks/poll/batch/{task_type}?workerid=w1&count=1").json()
    assert task["inputData"] == {"url": f"{planted}?k={VALUE}", "header": "b-" + VALUE}


def test_an_inline_definition_naming_a_secret_needs_the_admin_role(admin, as_role):
    secret = unique("tok")
    put_secret(admin, secret, VALUE)
    task_type = unique("sec_inline")
    admin.ok(admin.post("/metadata/taskdefs", [task_def(task_type)]))
    body = {"name": unique("sec_inline_wf"), "input": {},
            "workflowDef": workflow_def("inline", [simple_task(task_type, "use", {
                "token": f"${{workflow.secrets.{secret}}}"})])}
    refused = as_role("operator").post("/workflow", body)
    assert refused.status_code == 403 and "admin role" in refused.json()["message"]
    executed = as_role("operator").post("/workflow/execute/inline/1", body)
    assert executed.status_code == 403
    assert as_role("worker").get(f"/tasks/poll/batch/{task_type}?workerid=w1&count=1").json() == []
    assert admin.post("/workflow", body).status_code == 200
    without = {**body, "workflowDef": workflow_def("inline", [simple_task(task_type, "use", {"x": 1})])}
    assert as_role("operator").post("/workflow", without).status_code == 200


def test_a_secret_no_key_decrypts_fails_its_task_and_the_batch_is_handed_out(admin, as_role):
    from apps.metadata.models import Secret

    good, bad = unique("tok"), unique("rotated")
    put_secret(admin, good, VALUE)
    put_secret(admin, bad, "lost-" + VALUE)
    Secret.objects.filter(pk=bad).update(token="gAAAAA-not-a-token-of-any-key")
    task_type = unique("sec_batch")
    good_wf = _secret_workflow(admin, task_type, unique("sec_batch_wf"), good)
    bad_wf = _secret_workflow(admin, task_type, unique("sec_batch_wf"), bad)
    polled = as_role("worker").get(f"/tasks/poll/batch/{task_type}?workerid=w1&count=5")
    assert polled.status_code == 200, polled.content
    assert [(t["workflowInstanceId"], t["inputData"]["token"]) for t in polled.json()] == [(good_wf, VALUE)]
    (task,) = admin.get(f"/workflow/{bad_wf}").json()["tasks"]
    assert task["status"] == "FAILED" and "CONDUCTOR_SECRETS_KEYS" in task["reasonForIncompletion"]


def test_workflow_env_never_reads_the_servers_keys_whatever_the_prefix(admin, monkeypatch, settings):
    settings.CONDUCTOR = {**settings.CONDUCTOR, "ENV_PREFIX": "CONDUCTOR_"}
    monkeypatch.setenv("CONDUCTOR_SECRETS_KEYS", settings.SECRETS_KEYS and ",".join(settings.SECRETS_KEYS) or "k")
    monkeypatch.setenv("CONDUCTOR_AREA_T", "north")
    listed = {v["name"]: v["value"] for v in admin.get("/environment").json()}
    assert listed.get("AREA_T") == "north" and "SECRETS_KEYS" not in listed
    assert admin.get("/environment/SECRETS_KEYS").status_code == 404
