"""A NUL character or a lone UTF-16 surrogate in a UI path, query value or form field is a
400 with the styled error page, on every UI route (issue #10): PostgreSQL cannot store or
compare such text, so these answered 500 there (``/executions/?q=%00``,
``/audit/?target=%00``, ``/execution/a%00b``, ...) while the API already answered 400.
"""
from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.urls import URLPattern, URLResolver, get_resolver

from tests.ui.conftest import make_user

pytestmark = pytest.mark.django_db

NUL = "%00"
# the query parameters the UI pages read, each given the bad value at once
QUERY = "&".join(f"{k}={NUL}" for k in ("q", "name", "target", "group", "status", "version", "task", "at", "tab",
                                        "from", "to", "a", "b", "kind", "taskdef", "correlationId", "format"))


def ui_routes() -> list[tuple[str, list[str]]]:
    """``(route with <name> placeholders, parameter names)`` of every pattern outside
    /api and /admin (the UI, the scheduler's pages, health and metrics)."""
    out = []

    def walk(patterns, prefix):
        for p in patterns:
            route = prefix + str(p.pattern)
            if isinstance(p, URLResolver):
                if route.startswith(("api/", "admin/")):
                    continue
                walk(p.url_patterns, route)
            elif isinstance(p, URLPattern):
                out.append(route)

    walk(get_resolver().url_patterns, "")
    routes = []
    for route in out:
        # regex routes (the static files) become a path with one placeholder
        route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<str:\1>", route).lstrip("^").rstrip("$")
        routes.append((route, re.findall(r"<(?:\w+:)?(\w+)>", route)))
    return routes


def fill(route: str, value: str) -> str:
    """The route with every ``<str:x>``/``<path:x>`` set to ``value`` and ``<int:x>`` to 1."""
    route = re.sub(r"<int:\w+>", "1", route)
    return "/" + re.sub(r"<(?:\w+:)?\w+>", value, route)


def bad_request_page(resp, what: str):
    assert resp.status_code == 400, (what, resp.status_code, resp.content[:300])
    page = resp.content.decode()
    assert 'id="error-page"' in page and "Bad request" in page, (what, page[:300])
    assert "NUL character" in page or "surrogate" in page, (what, page[:500])


def test_every_ui_route_refuses_nul_in_path_and_query(client):
    client.force_login(make_user("bad_text_admin", superuser=True))
    routes = ui_routes()
    assert len(routes) > 30, routes  # the walk found the UI
    for route, params in routes:
        if params:
            url = fill(route, f"a{NUL}b")
            bad_request_page(client.get(url), url)
        url = fill(route, "x") + "?" + QUERY
        bad_request_page(client.get(url), url)


@pytest.mark.parametrize("url,form", [("/start/", {"name": "x", "correlation_id": "c\x00"}),
                                      ("/executions/bulk", {"ids": "a\x00", "action": "pause"}),
                                      ("/login/", {"username": "u\x00", "password": "p"})])
def test_form_fields_with_nul_are_refused(client, url, form):
    client.force_login(make_user("bad_text_op", superuser=True))
    bad_request_page(client.post(url, form), url)


def test_api_paths_keep_conductors_error_body(client):
    resp = client.get("/api/workflow/a%00b")
    assert resp.status_code == 400
    assert resp.json()["status"] == 400 and "NUL" in resp.json()["message"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/execution/a\ud800b", "/definitions/\udfff/1", "/schedules/\ud800"])
def test_a_lone_surrogate_in_the_path_is_refused(path):
    """Under ASGI the path is text already decoded by the server, and may hold a lone
    surrogate; the page is the same 400."""
    from conductor_web.asgi import application

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": b"/x", "query_string": b"", "root_path": "",
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080), "headers": [(b"host", b"127.0.0.1")]}

    async def run():
        comm = ApplicationCommunicator(application, scope)
        await comm.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await comm.receive_output(timeout=30)
        body = await comm.receive_output(timeout=30)
        return start["status"], body.get("body", b"")

    status, body = async_to_sync(run)()
    assert status == 400, body[:300]
    assert b"surrogate" in body and b'id="error-page"' in body


@pytest.mark.parametrize("escape", ["%FF", "%ED%A0%80"])
def test_percent_escapes_that_are_not_utf8_are_refused(client, escape):
    """``%FF`` and ``%ED%A0%80`` (a surrogate in UTF-8) were read as U+FFFD: the page
    searched for, or the workflow was started with, text the browser never sent."""
    client.force_login(make_user("bad_utf8_op", superuser=True))
    for resp in (client.get(f"/executions/?q=a{escape}"),
                 client.post("/start/", f"name=x&correlation_id=c{escape}",
                             content_type="application/x-www-form-urlencoded")):
        assert resp.status_code == 400, resp.content[:300]
        page = resp.content.decode()
        assert 'id="error-page"' in page and "not valid UTF-8" in page, page[:500]
    assert "Query parameter &#x27;q&#x27;" in client.get(f"/executions/?status=RUNNING&q=a{escape}").content.decode()
