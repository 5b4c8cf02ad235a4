"""The official Python SDK against a server with API authentication on (issue #10): it
trades CONDUCTOR_AUTH_KEY / CONDUCTOR_AUTH_SECRET for a token at /api/token and its calls
and workers run with it; without a key, or with a wrong one, nothing gets in."""
from __future__ import annotations

import httpx
import pytest
from conductor.client.configuration.configuration import Configuration
from conductor.client.configuration.settings.authentication_settings import AuthenticationSettings
from conductor.client.http.models import StartWorkflowRequest
from conductor.client.orkes_clients import OrkesClients

pytestmark = pytest.mark.e2e


def test_a_call_without_a_token_is_refused(conductor_server):
    assert httpx.get(f"{conductor_server.url}/health", timeout=10).status_code == 200
    for method, path in (("GET", "/metadata/taskdefs"), ("GET", "/tasks/poll/batch/x"), ("POST", "/workflow"),
                         ("POST", "/tasks"), ("GET", "/workflow/x")):
        resp = httpx.request(method, conductor_server.url + path, json={} if method == "POST" else None, timeout=10)
        assert resp.status_code == 401, (method, path, resp.text)
        assert resp.json()["error"] == "INVALID_TOKEN"


def test_the_sdk_signs_in_with_its_key(sdk_config):
    clients = OrkesClients(configuration=sdk_config)
    names = clients.get_metadata_client().get_all_task_defs()
    assert isinstance(names, list)
    assert sdk_config.AUTH_TOKEN  # the SDK got a token from /api/token and sent it


def test_a_wrong_secret_gets_nowhere(conductor_server):
    config = Configuration(server_api_url=conductor_server.url,
                           authentication_settings=AuthenticationSettings(key_id=conductor_server.key_id,
                                                                          key_secret="wrong"))
    workflow_client = OrkesClients(configuration=config).get_workflow_client()
    with pytest.raises(Exception) as info:
        workflow_client.start_workflow(StartWorkflowRequest(name="anything", input={}))
    assert "401" in str(info.value) or "Unauthorized" in str(info.value) or "INVALID_TOKEN" in str(info.value)
