"""API authentication (issue #10): access keys traded at POST /api/token for a JWT sent
as X-Authorization, as the Orkes SDKs do; 401 with the SDK's error codes; roles."""
from __future__ import annotations

import json
import time

import jwt
import pytest
from django.urls import URLPattern, URLResolver

from tests.asgi_client import asgi_request
from tests.auth.conftest import TokenApi, make_key, token_for
from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db


def _api_paths():
    """Every /api route (Conductor's and the scheduler's) with its parameters filled in."""
    from apps.api.urls import urlpatterns
    from apps.scheduler.urls import urlpatterns as scheduler

    out = []
    for prefix, p in [("", p) for p in urlpatterns] + [("scheduler/", p) for p in scheduler]:
        assert isinstance(p, URLPattern) and not isinstance(p, URLResolver)
        route = str(p.pattern)
        for conv, value in (("<str:", "x"), ("<int:", "1")):
            while conv in route:
                start = route.index(conv)
                route = route[:start] + value + route[route.index(">", start) + 1:]
        out.append("/api/" + prefix + route)
    return out


OPEN = {"/api/health", "/api/health/ready", "/api/token"}
# the signed URIs of external payload storage: their signature is the credential (403 without);
# tests/auth/test_external_payload_auth.py
SIGNED = ("/api/external-payloads/",)
# the A2A push callback: the token the AGENT task gave the remote agent is its credential
# (403 with a wrong one: tests/agent2agent/test_agent_tasks.py)
CALLBACK = "/api/a2a/callback/"


@pytest.mark.parametrize("method", ["get", "post", "put", "delete"])
def test_every_api_path_refuses_a_call_without_a_token(auth_on, client, method):
    paths = [p for p in _api_paths() if p not in OPEN and not p.startswith(SIGNED) and not p.startswith(CALLBACK)]
    assert len(paths) > 60
    if method == "post":  # no API key needed, and no such AGENT task
        assert client.post(CALLBACK + "x", data="{}", content_type="application/json").status_code == 404
    signed = [p for p in _api_paths() if p.startswith(SIGNED)]
    assert signed
    for path in signed:
        if method in ("get", "put"):
            assert getattr(client, method)(path.replace("<path:path>", "x/y.json")).status_code == 403
    for path in paths:
        if method == "get":
            resp = client.get(path)
        else:
            resp = getattr(client, method)(path, data="{}", content_type="application/json")
        assert resp.status_code == 401, (method, path, resp.status_code)
        body = resp.json()
        assert body["error"] == "INVALID_TOKEN" and body["status"] == 401, body


@pytest.mark.parametrize("method,path", [("GET", "/api/tasks/poll/batch/x"), ("GET", "/api/tasks/poll/x"),
                                         ("POST", "/api/tasks"), ("POST", "/api/tasks/update-v2"),
                                         ("POST", "/api/workflow")])
def test_the_fast_path_refuses_a_call_without_a_token(auth_on, method, path, transactional_db):
    status, out = asgi_request(method, path, {} if method == "POST" else b"")
    assert status == 401, out
    assert json.loads(out)["error"] == "INVALID_TOKEN"


def test_health_stays_open(auth_on, client):
    assert client.get("/api/health").status_code == 200


def test_a_key_is_traded_for_a_token_that_opens_the_api(auth_on):
    key_id, secret = make_key("admin")
    token = token_for(key_id, secret)
    api = TokenApi(token)
    name = unique("auth_wf")
    api.register_task_defs(task_def(name))
    api.register_workflow(workflow_def(name, [simple_task(name, "t")]))
    wid = api.start(name)
    task = api.poll_one(name)
    api.complete(task, {"ok": True})
    assert api.workflow(wid)["status"] == "COMPLETED"
    info = api.ok(api.get("/token/userInfo")).json()
    assert info["id"] == key_id and info["name"] == "app-admin" and info["roles"] == [{"name": "ADMIN"}]

    from apps.api.models import AccessKey

    row = AccessKey.objects.get(pk=key_id)
    assert secret not in row.secret_hash and row.check_secret(secret)
    assert row.last_used_at is not None


def test_the_fast_path_accepts_a_token(auth_on, transactional_db):
    token = token_for(*make_key("worker"))
    status, out = asgi_request("GET", "/api/tasks/poll/batch/nothing_here", b"",
                               query="timeout=0", headers=[(b"x-authorization", token.encode())])
    assert status == 200 and json.loads(out) == []


@pytest.mark.parametrize("body", [{"keyId": "nope", "keySecret": "x"}, {"keyId": None}, {}, [1]])
def test_a_bad_key_gets_401(auth_on, body):
    make_key("admin")
    resp = Api().post("/token", body)
    assert resp.status_code in (400, 401), resp.content
    assert resp.json()["status"] == resp.status_code


def test_a_wrong_secret_gets_401(auth_on):
    key_id, secret = make_key("admin")
    resp = Api().post("/token", {"keyId": key_id, "keySecret": secret + "x"})
    assert resp.status_code == 401


def test_an_expired_token_says_so(auth_on, settings, monkeypatch):
    key_id, secret = make_key("admin")
    monkeypatch.setitem(settings.CONDUCTOR, "API_TOKEN_TTL_SECONDS", -5)
    resp = TokenApi(token_for(key_id, secret)).get("/metadata/taskdefs")
    assert resp.status_code == 401 and resp.json()["error"] == "EXPIRED_TOKEN"


def test_a_forged_token_is_invalid(auth_on):
    key_id, _ = make_key("admin")
    forged = jwt.encode({"sub": key_id, "iss": "conductor-web", "exp": int(time.time()) + 60}, "not-the-signing-key-of-this-server-at-all",
                        algorithm="HS256")
    resp = TokenApi(forged).get("/metadata/taskdefs")
    assert resp.status_code == 401 and resp.json()["error"] == "INVALID_TOKEN"
    resp = TokenApi("garbage").get("/metadata/taskdefs")
    assert resp.status_code == 401 and resp.json()["error"] == "INVALID_TOKEN"


def test_a_revoked_key_stops_working(auth_on):
    from apps.api import auth
    from apps.api.models import AccessKey

    key_id, secret = make_key("admin")
    api = TokenApi(token_for(key_id, secret))
    api.ok(api.get("/metadata/taskdefs"))
    AccessKey.objects.filter(pk=key_id).update(active=False)
    auth.forget_cached_keys()
    assert api.get("/metadata/taskdefs").status_code == 401
    assert Api().post("/token", {"keyId": key_id, "keySecret": secret}).status_code == 401


def test_roles(as_role):
    admin = as_role("admin")
    name = unique("auth_roles")
    admin.register_task_defs(task_def(name))
    admin.register_workflow(workflow_def(name, [simple_task(name, "t")]))

    reader = as_role("read_only")
    reader.ok(reader.get(f"/metadata/workflow/{name}"))
    assert reader.get(f"/tasks/poll/batch/{name}").status_code == 403  # a poll claims tasks
    assert reader.post("/workflow", {"name": name}).status_code == 403

    worker = as_role("worker")
    assert worker.post("/workflow", {"name": name}).status_code == 403
    assert worker.post("/metadata/taskdefs", [task_def(unique("x"))]).status_code == 403

    operator = as_role("operator")
    wid = operator.start(name)
    assert operator.post("/metadata/taskdefs", [task_def(unique("x"))]).status_code == 403
    assert operator.delete(f"/metadata/taskdefs/{name}").status_code == 403
    assert operator.post("/event", {"name": "e", "event": "x:y", "actions": []}).status_code == 403

    task = worker.poll_one(name)
    worker.complete(task)
    assert reader.ok(reader.get(f"/workflow/{wid}")).json()["status"] == "COMPLETED"
    body = reader.post("/workflow", {"name": name}).json()
    assert body["status"] == 403 and "operator" in body["message"]


def test_token_is_404_when_auth_is_off(db):
    key_id, secret = make_key("admin")
    assert Api().post("/token", {"keyId": key_id, "keySecret": secret}).status_code == 404


def test_create_access_key_command(auth_on):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_access_key", "deploy-bot", "--role", "operator", "--env", stdout=out)
    lines = dict(line.split("=", 1) for line in out.getvalue().split())
    api = TokenApi(token_for(lines["CONDUCTOR_AUTH_KEY"], lines["CONDUCTOR_AUTH_SECRET"]))
    assert api.ok(api.get("/token/userInfo")).json()["roles"] == [{"name": "OPERATOR"}]


def test_the_cli_signs_in_with_the_sdk_variables(auth_on, monkeypatch, capsys, transactional_db):
    import httpx
    from django.core.handlers.wsgi import WSGIHandler

    from apps.cli import main as cli_main

    transport = httpx.WSGITransport(app=WSGIHandler())
    monkeypatch.setenv("CONDUCTOR_SERVER_URL", "http://127.0.0.1:8080/api")
    monkeypatch.delenv("CONDUCTOR_AUTH_KEY", raising=False)
    assert cli_main.main(["taskDef", "list"], transport=transport) == 1
    err = capsys.readouterr().err
    assert "Missing X-Authorization" in err
    assert "set CONDUCTOR_AUTH_KEY and CONDUCTOR_AUTH_SECRET" in err  # the CLI's hint
    assert "get one when CONDUCTOR_AUTH_KEY and CONDUCTOR_AUTH_SECRET are set" in err  # the server's message
    key_id, secret = make_key("read_only")
    monkeypatch.setenv("CONDUCTOR_AUTH_KEY", key_id)
    monkeypatch.setenv("CONDUCTOR_AUTH_SECRET", secret)
    assert cli_main.main(["taskDef", "list", "--json"], transport=transport) == 0
    assert isinstance(json.loads(capsys.readouterr().out), list)


def test_scheduler_switches_reached_by_get_need_their_role(as_role):
    """Per-schedule pause/resume answer GET too (the Orkes dialect) and the admin
    switches are GETs: a read-only key may read schedules but not flip them."""
    admin = as_role("admin")
    name = unique("auth_sched")
    admin.ok(admin.post("/scheduler/schedules", {"name": name, "cronExpression": "0 0 * * * *",
                                                 "startWorkflowRequest": {"name": "w"}}))
    reader = as_role("read_only")
    reader.ok(reader.get(f"/scheduler/schedules/{name}"))
    reader.ok(reader.get("/scheduler/search/executions"))
    assert reader.get(f"/scheduler/schedules/{name}/pause").status_code == 403
    assert reader.get("/scheduler/admin/pause").status_code == 403
    assert reader.post("/scheduler/schedules", {"name": name}).status_code == 403
    operator = as_role("operator")
    operator.ok(operator.get(f"/scheduler/schedules/{name}/pause"))
    operator.ok(operator.put(f"/scheduler/schedules/{name}/resume"))
    assert operator.get("/scheduler/admin/requeue").status_code == 403
    admin.ok(admin.get("/scheduler/admin/requeue"))


def test_a_chunked_token_request_signs_in(auth_on, transactional_db):
    """``POST /api/token`` with a chunked body (the TypeScript SDK's transport) answers a token."""
    key_id, secret = make_key("worker", unique("chunked"))
    status, out = asgi_request("POST", "/api/token", {"keyId": key_id, "keySecret": secret})
    assert status == 200, out
    token = json.loads(out)["token"]
    status, out = asgi_request("GET", "/api/token/userInfo", b"", headers=[(b"x-authorization", token.encode())])
    assert status == 200, out
    assert json.loads(out)["id"] == key_id


def test_admin_resource_needs_the_admin_role(as_role):
    """``/api/admin`` (Conductor's AdminResource) reads configuration and repairs
    executions: admin only, reads included; ``/tasks/queue/all/verbose`` is a plain read."""
    reader, operator, admin = as_role("read_only"), as_role("operator"), as_role("admin")
    reader.ok(reader.get("/tasks/queue/all/verbose"))
    for api in (reader, operator):
        assert api.get("/admin/config").status_code == 403
        assert api.get("/admin/queues").status_code == 403
        assert api.get("/admin/task/x").status_code == 403
        assert api.post("/admin/sweep/requeue/w").status_code == 403
        assert api.post("/admin/consistency/verifyAndRepair/w").status_code == 403
    admin.ok(admin.get("/admin/config"))
    admin.ok(admin.get("/admin/queues"))
    assert admin.ok(admin.get("/admin/task/x")).json() == []
    assert admin.ok(admin.post("/admin/sweep/requeue/w")).content == b"true.w"  # Conductor pushes any id
    assert admin.post("/admin/consistency/verifyAndRepair/w").status_code == 404
