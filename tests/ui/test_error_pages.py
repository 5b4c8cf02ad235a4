"""Error pages (#32): a 404 or 403 page carries the signed-in user's own nav (an admin is
not shown as read-only) and a sentence for a person, never an exception's class name; a
client that does not ask for HTML gets Conductor's JSON error body, and outside /api it
says the API is under /api (the Python SDK given the server's address without /api)."""
from __future__ import annotations

import pytest
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.rest import ApiException
from conductor.client.orkes_clients import OrkesClients
from django.contrib.auth.models import User

from tests.ui.conftest import make_user

BROWSER = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def sign_in(client, username: str) -> None:
    """Sign in through the UI's login form (not force_login: the session the form makes)."""
    resp = client.post("/login/", {"username": username, "password": "pw"})
    assert resp.status_code == 302, resp.content[:300]


@pytest.mark.parametrize("path", ["/nope", "/execution/does-not-exist", "/definitions/missing_def/3"])
def test_admin_sees_admin_nav_and_a_sentence_on_a_404(client, db, path):
    User.objects.create_superuser("boss", "boss@example.com", "pw")
    sign_in(client, "boss")
    resp = client.get(path, **BROWSER)
    assert resp.status_code == 404 and resp["Content-Type"].startswith("text/html")
    html = resp.content.decode()
    assert 'id="error-page"' in html
    assert "Start a workflow" in html and 'href="/admin/"' in html
    assert "read-only" not in html
    assert "Resolver404" not in html and "Http404" not in html
    if path == "/nope":
        assert "There is no page at <code>/nope</code>." in html
    elif path.startswith("/execution/"):
        assert "No such workflow found by id: does-not-exist." in html


def test_a_viewer_sees_read_only_on_a_404_and_a_403(client, db):
    make_user("looker", "view_executions")
    sign_in(client, "looker")
    html = client.get("/nope", **BROWSER).content.decode()
    assert "read-only" in html and "Start a workflow" not in html and "There is no page at" in html
    resp = client.get("/start/", **BROWSER)  # operating needs ui.operate_workflows
    assert resp.status_code == 403
    html = resp.content.decode()
    assert "read-only" in html and "You may not operate workflows." in html and 'href="/executions/"' in html


def test_an_operator_keeps_the_operate_nav_on_a_404(client, db):
    make_user("runner", "operate_workflows")
    sign_in(client, "runner")
    html = client.get("/no/such/page", **BROWSER).content.decode()
    assert "Start a workflow" in html and "read-only" not in html and 'href="/admin/"' not in html


@pytest.mark.parametrize("accept", ["application/json", "*/*", "text/plain", None])
def test_a_client_not_asking_for_html_gets_json_saying_the_api_is_under_api(client, db, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    resp = client.get("/metadata/workflow", **headers)
    assert resp.status_code == 404 and resp["Content-Type"] == "application/json"
    body = resp.json()
    assert body["status"] == 404 and body["retryable"] is False
    assert body["message"] == ("No endpoint GET /metadata/workflow: the API is under /api, so point the client at "
                               "http://testserver/api (this path would be http://testserver/api/metadata/workflow)")
    resp = client.post("/workflow", data="{}", content_type="application/json", **headers)
    assert resp.status_code == 404 and "the API is under /api" in resp.json()["message"]


def test_a_view_that_finds_nothing_is_not_told_the_api_is_under_api(client, db):
    make_user("looker", "view_executions")
    sign_in(client, "looker")
    resp = client.get("/execution/does-not-exist", HTTP_ACCEPT="*/*")  # the route exists: its view found nothing
    assert resp.status_code == 404 and b"the API is under /api" not in resp.content
    assert b"No such workflow found by id: does-not-exist" in resp.content


def test_under_api_the_404_is_json_even_for_a_browser(client, db):
    resp = client.get("/api/no-such-endpoint", **BROWSER)
    assert resp.status_code == 404 and resp.json()["message"] == "No endpoint GET /api/no-such-endpoint"


def test_the_python_sdk_without_api_in_its_url_says_where_the_api_is(live_server):
    clients = OrkesClients(Configuration(server_api_url=live_server.url))  # no /api
    with pytest.raises(ApiException) as raised:
        clients.get_metadata_client().get_all_workflow_defs()
    assert raised.value.status == 404
    assert raised.value.message.startswith("No endpoint GET /metadata/workflow: the API is under /api, "
                                           f"so point the client at {live_server.url}/api")
    assert "<html" not in str(raised.value).lower()
    with pytest.raises(ApiException) as raised:
        clients.get_workflow_client().start_workflow_by_name("anything", {})
    assert raised.value.status == 404 and "the API is under /api" in raised.value.message
