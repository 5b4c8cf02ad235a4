"""Web security (issue #10, item 5): ``check --deploy`` clean under the production
settings, SECRET_KEY handling, sign-in attempts rate-limited (django-axes), and a
read-only operator or application that cannot act through any URL."""
from __future__ import annotations

import itertools
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.auth.conftest import TokenApi, make_key, token_for
from tests.factories import Api, simple_task, task_def, unique, workflow_def
from tests.ui.conftest import make_user

ROOT = Path(__file__).resolve().parents[2]


def _manage(args: list[str], env: dict, tmp_path) -> subprocess.CompletedProcess:
    """``manage.py args`` in a fresh process with ``env`` over a minimal environment."""
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    base.update({"DATABASE_URL": f"sqlite:///{tmp_path / 'check.sqlite3'}", "CONDUCTOR_VAR_DIR": str(tmp_path / "var")})
    base.update(env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=base, capture_output=True, text=True,
                          timeout=240)


PRODUCTION = {"DEBUG": "False", "SECRET_KEY": secrets.token_urlsafe(50), "CONDUCTOR_HTTPS": "on",
              "ALLOWED_HOSTS": "conductor.example.com", "CSRF_TRUSTED_ORIGINS": "https://conductor.example.com"}


def test_check_deploy_is_clean_under_the_production_settings(tmp_path):
    done = _manage(["check", "--deploy", "--fail-level", "WARNING"], PRODUCTION, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_names_what_is_missing_without_tls(tmp_path):
    done = _manage(["check", "--deploy", "--fail-level", "WARNING"], {**PRODUCTION, "CONDUCTOR_HTTPS": "off"},
                   tmp_path)
    assert done.returncode != 0
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in done.stderr + done.stdout, check


def test_a_placeholder_secret_key_is_refused_outside_debug(tmp_path):
    done = _manage(["check"], {**PRODUCTION, "SECRET_KEY": "CHANGE-ME-to-50-random-characters"}, tmp_path)
    assert done.returncode != 0 and "SECRET_KEY is still the placeholder" in done.stderr


def test_without_secret_key_a_random_one_is_kept_in_var_dir(tmp_path):
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"}
    code = ["shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)"]
    first = _manage(code, env, tmp_path)
    second = _manage(code, env, tmp_path)
    assert first.returncode == 0, first.stderr
    key = first.stdout.split()[-1]
    assert key == second.stdout.split()[-1] and len(key) >= 50 and "insecure" not in key
    path = tmp_path / "var" / "secret_key"
    assert path.read_text().strip() == key and (path.stat().st_mode & 0o077) == 0


def test_https_settings_redirect_plain_http_but_not_the_probes(settings, client, db):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_REDIRECT_EXEMPT = [r"^health(/ready)?$", r"^api/health(/ready)?$", r"^metrics$"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 3600
    assert client.get("/login/").status_code == 301
    assert client.get("/api/health").status_code == 200
    resp = client.get("/login/", HTTP_X_FORWARDED_PROTO="https")
    assert resp.status_code == 200 and resp["Strict-Transport-Security"].startswith("max-age=3600")


# --- sign-in rate limit ----------------------------------------------------------------------------

@pytest.mark.django_db
def test_sign_in_is_locked_after_the_failure_limit(client, settings):
    from django.contrib.auth.models import User

    limit = settings.AXES_FAILURE_LIMIT
    assert limit == 5
    User.objects.create_user("alice", password="right-password")
    User.objects.create_user("bob", password="bobs-password")
    for _ in range(limit - 1):
        resp = client.post("/login/", {"username": "alice", "password": "wrong"})
        assert resp.status_code == 200 and not resp.wsgi_request.user.is_authenticated
    # the last allowed failure locks the pair; the right password no longer gets in
    assert client.post("/login/", {"username": "alice", "password": "wrong"}).status_code == 429
    resp = client.post("/login/", {"username": "alice", "password": "right-password"})
    assert resp.status_code == 429 and "_auth_user_id" not in client.session
    # the admin's sign-in shares the count
    assert client.post("/admin/login/", {"username": "alice", "password": "right-password"}).status_code == 429
    # another user from the same address is not locked
    resp = client.post("/login/", {"username": "bob", "password": "bobs-password"})
    assert resp.status_code == 302 and client.session["_auth_user_id"]


@pytest.mark.django_db
def test_a_successful_sign_in_clears_the_count(client, settings):
    from django.contrib.auth.models import User

    User.objects.create_user("carol", password="pw-carol")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post("/login/", {"username": "carol", "password": "wrong"})
    assert client.post("/login/", {"username": "carol", "password": "pw-carol"}).status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert client.post("/login/", {"username": "carol", "password": "wrong"}).status_code == 200


# --- a read-only operator or application cannot act -------------------------------------------------

def _snapshot() -> dict:
    """Every row of the project's own models (engine, metadata, scheduler, UI, API keys,
    listeners): what any action would change."""
    from django.apps import apps

    out = {}
    for model in apps.get_models():
        if model.__module__.startswith("apps."):
            out[model.__name__] = sorted(repr(row) for row in model.objects.values_list())
    return out


@pytest.fixture
def world(db):
    """A running workflow with a scheduled task, a schedule, a bulk job and an event
    handler: something for every action to act on."""
    from apps.scheduler import services as schedules
    from apps.ui.models import BulkJob

    api = Api()
    name = unique("ro_wf")
    api.register_task_defs(task_def(name))
    api.register_workflow(workflow_def(name, [simple_task(name, "a")]))
    wid = api.start(name)
    task_id = api.workflow(wid, include_tasks=True)["tasks"][0]["taskId"]
    schedule = unique("ro_sched")
    schedules.schedule_save({"name": schedule, "cronExpression": "0 0 * * * *", "startWorkflowRequest": {"name": name}})
    job = BulkJob.objects.create(id=unique("job"), username="someone", action="terminate", reason="r",
                                 targets=[wid], status="QUEUED")
    api.ok(api.post("/event", {"name": unique("ro_ev"), "event": "conductor:x:y", "active": True,
                               "actions": [{"action": "complete_task", "complete_task": {"workflowId": wid,
                                                                                        "taskRefName": "a"}}]}))
    return {"workflow_name": name, "workflow_id": wid, "task_id": task_id, "schedule": schedule, "job": job.id}


def _routes(resolver=None, prefix: str = ""):
    """``(route, pattern)`` of every URL pattern of the site, admin included."""
    for p in (resolver or get_resolver()).url_patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            yield from _routes(p, route)
        elif isinstance(p, URLPattern):
            yield route, p


def _fill(route: str, values: dict[str, list[str]]) -> list[str]:
    """Every concrete path of a Django route (``path()`` converters or a regex's named
    groups), each parameter taking each of its candidate values."""
    import re

    route = route.lstrip("^").rstrip("$").replace("\\Z", "").replace("\\.", ".").replace("\\", "")
    names = re.findall(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>[^)]*\)", route)
    names = [a or b for a, b in names]
    template = re.sub(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>[^)]*\)", "{}", route)
    paths = []
    for combo in itertools.product(*[values.get(n, ["x"]) for n in names]):
        paths.append("/" + template.format(*combo))
    return paths


def test_a_read_only_user_cannot_act_through_any_ui_url(client, world):
    """Every URL pattern of the site (UI, scheduler pages, admin) is POSTed by a user
    who may only view, with every action name in place of ``name``: each answers 403
    (405 where the page takes no POST, 404 where the name is not that page's action; the
    admin sends a non-staff user to its sign-in), every real action is among the 403s,
    and no row changes."""
    from apps.ui import actions

    viewer = make_user("ro_viewer", "view_executions")
    client.force_login(viewer)
    names = [*actions.WORKFLOW_ACTIONS, *actions.TASK_ACTIONS, world["workflow_name"], world["schedule"]]
    values = {"workflow_id": [world["workflow_id"]], "task_id": [world["task_id"]], "job_id": [world["job"]],
              "name": names, "action": ["pause", "resume"], "version": ["1"], "what": ["input", "json"],
              "object_id": ["1"], "app_label": ["ui", "metadata", "api"], "path": ["ui/favicon.svg"]}
    before = _snapshot()
    seen = {}
    for route, pattern in _routes():
        if route in ("login/", "logout/", "admin/login/", "admin/logout/") or route.startswith("api"):
            continue
        for path in _fill(route, values):
            query = f"?task={world['task_id']}&ref=a" if "task-action" in path else ""
            resp = client.post(path + query, {"reason": "r", "name": world["workflow_name"], "version": "1",
                                              "ids": world["workflow_id"], "action": "terminate",
                                              "query": "", "confirm": "yes", "task": world["task_id"]})
            seen[path] = resp.status_code
            if route.startswith("admin"):
                assert resp.status_code in (302, 404, 405), (path, resp.status_code)
                if resp.status_code == 302:
                    assert resp["Location"].startswith("/admin/login/"), (path, resp["Location"])
            else:
                assert resp.status_code in (403, 404, 405), (path, resp.status_code)
    acting = [p for p, s in seen.items() if s == 403]
    # the operator's actions are among them: every workflow and task action, start, bulk, schedules
    needles = [f"/action/{a}" for a in actions.WORKFLOW_ACTIONS] + [f"/task-action/{a}" for a in actions.TASK_ACTIONS]
    for needle in needles + ["/start/", "/executions/bulk", "/executions/bulk-query", "/cancel",
                             f"/schedules/{world['schedule']}/pause", f"/schedules/{world['schedule']}/resume"]:
        assert any(p.endswith(needle) for p in acting), needle
    assert len(seen) > 100
    assert _snapshot() == before


def _api_routes():
    from apps.api.urls import urlpatterns
    from apps.scheduler.urls import urlpatterns as scheduler

    return [("api/" + str(p.pattern)) for p in urlpatterns] + [("api/scheduler/" + str(p.pattern)) for p in scheduler]


def test_a_read_only_application_cannot_write_through_any_api_path(world, auth_on):
    """Every /api route with real ids, under every write method (and the GETs that act:
    polls, schedule switches, scheduler admin): 403 for a read-only key, and no row
    changes."""
    reader = TokenApi(token_for(*make_key("read_only", unique("ro_app"))))
    values = {"workflow_id": [world["workflow_id"]], "name_or_id": [world["workflow_id"], world["workflow_name"]],
              "name": [world["workflow_name"], world["schedule"]], "task_id": [world["task_id"]],
              "task_type": [world["workflow_name"]], "task_ref_name": ["a"], "status": ["COMPLETED"],
              "version": ["1"], "correlation_id": ["c"], "name_or_event": ["conductor:x:y"]}
    body = {"name": world["workflow_name"], "workflowId": world["workflow_id"], "taskId": world["task_id"],
            "status": "COMPLETED"}
    before = _snapshot()
    count = 0
    for route in _api_routes():
        for path in _fill(route, values):
            path = path[len("/api"):]
            if path in ("/token", "/health", "/health/ready"):
                continue
            for method in ("post", "put", "delete"):
                if path.startswith("/external-payloads/") and method != "put":
                    continue  # a signed URI answers PUT and GET only (405); its PUT needs the signature
                resp = getattr(reader, method)(path, body)
                if path.startswith("/a2a/callback/"):  # its credential is the AGENT task's own token:
                    # the world's task is no AGENT task, so it is unknown there (no row changes)
                    assert resp.status_code in (403, 404, 405), (method, path, resp.status_code)  # 405: POST only
                    count += 1
                    continue
                assert resp.status_code == 403, (method, path, resp.status_code, resp.content[:200])
                count += 1
            if path.startswith(("/tasks/poll/", "/scheduler/schedules/", "/scheduler/admin/")) \
                    and path.endswith(("/pause", "/resume", "/requeue")) or path.startswith("/tasks/poll/"):
                assert reader.get(path).status_code == 403, path  # GETs that act
                count += 1
    assert count > 200
    assert _snapshot() == before
