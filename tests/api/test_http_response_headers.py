"""The HTTP task's ``output.response.headers`` keep each header name as the server sent it
(Conductor OSS's HttpTask: ``Content-Type``, ``Server``), so a parameter such as
``${call.output.response.headers.Content-Type}`` resolves; found by the reference run
against Conductor OSS 3.32.3 (docs/differences.md)."""
from __future__ import annotations

import pytest

from tests.cases.harness import MockHttp, install_job_capture
from tests.factories import unique, workflow_def


@pytest.fixture
def remote():
    mock = MockHttp()
    mock.routes[("GET", "/item")] = (200, {"id": 7})
    yield mock
    mock.stop()


def test_response_header_names_keep_their_case(api, transactional_db, monkeypatch, remote):
    jobs: list = []
    install_job_capture(monkeypatch, jobs)
    name = unique("http_headers")
    api.register_workflow(workflow_def(name, [
        {"name": "fetch_item", "taskReferenceName": "call", "type": "HTTP",
         "inputParameters": {"http_request": {"uri": f"{remote.base_url}/item", "method": "GET"}}},
    ], outputParameters={"type": "${call.output.response.headers.Content-Type}"}))
    workflow_id = api.start(name)
    while jobs:
        func, args, kwargs = jobs.pop(0)
        func(*args, **kwargs)

    wf = api.workflow(workflow_id, include_tasks=True)
    assert wf["status"] == "COMPLETED", wf.get("reasonForIncompletion")
    headers = wf["tasks"][0]["outputData"]["response"]["headers"]
    assert headers["Content-Type"] == ["application/json"], headers
    assert "content-type" not in headers and "Server" in headers, headers
    assert wf["output"] == {"type": ["application/json"]}
