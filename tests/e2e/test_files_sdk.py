"""Files between tasks against a real server (uvicorn + qcluster, API auth on): two
conductor-python SDK workers pass a ``conductor://file/<id>`` handle from one task to the
next (``tests/e2e/file_workers.py``), the content goes through uvicorn both ways (a chunked
upload, a streamed download), a file above the API's general body limit is accepted up to
the files limit, and removing the execution removes the stored content."""
import hashlib
import time

import httpx
import pytest

from tests.e2e.file_workers import CONSUME, PRODUCE
from tests.e2e.sdk_helpers import running_workers

pytestmark = pytest.mark.e2e

WAIT_SECONDS = 60


def api(server, method: str, path: str, **kw):
    return httpx.request(method, f"{server.url}{path}", headers=server.auth_headers(), timeout=60, **kw)


def wait_terminal(server, workflow_id: str) -> dict:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        wf = api(server, "GET", f"/workflow/{workflow_id}", params={"includeTasks": "true"}).json()
        if wf["status"] not in ("RUNNING", "PAUSED") or time.monotonic() > deadline:
            return wf
        time.sleep(0.3)


def test_a_handle_passes_from_one_sdk_worker_to_the_next(conductor_server, sdk_config):
    from conductor.client.http.models.start_workflow_request import StartWorkflowRequest
    from conductor.client.orkes_clients import OrkesClients

    server = conductor_server
    for name in (PRODUCE, CONSUME):
        api(server, "POST", "/metadata/taskdefs", json=[{"name": name, "retryCount": 0, "ownerEmail": "e2e@example.com"}])
    api(server, "POST", "/metadata/workflow", params={"overwrite": "true"}, json={
        "name": "e2e_file_handoff", "version": 1, "ownerEmail": "e2e@example.com", "schemaVersion": 2, "tasks": [
            {"name": PRODUCE, "taskReferenceName": "produce", "type": "SIMPLE",
             "inputParameters": {"rows": "${workflow.input.rows}"}},
            {"name": CONSUME, "taskReferenceName": "consume", "type": "SIMPLE",
             "inputParameters": {"report": "${produce.output.report}"}}]}).raise_for_status()
    rows = 20_000
    expected = b"n,square\n" + b"".join(f"{n},{n * n}\n".encode() for n in range(1, rows + 1))
    workflows = OrkesClients(sdk_config).get_workflow_client()
    with running_workers(sdk_config, [PRODUCE, CONSUME]):
        workflow_id = workflows.start_workflow(StartWorkflowRequest(name="e2e_file_handoff", version=1,
                                                                    input={"rows": rows}))
        wf = wait_terminal(server, workflow_id)
    assert wf["status"] == "COMPLETED", [(t["referenceTaskName"], t.get("reasonForIncompletion")) for t in wf["tasks"]]
    produced, consumed = (t["outputData"] for t in wf["tasks"])
    assert produced["report"].startswith("conductor://file/")
    assert produced["sha256"] == consumed["sha256"] == hashlib.sha256(expected).hexdigest()
    assert consumed["size"] == consumed["fileSize"] == len(expected) and consumed["lines"] == rows + 1
    assert consumed["last"] == f"{rows},{rows * rows}" and consumed["fileName"] == "squares.csv"
    assert consumed["producedBy"] == wf["tasks"][0]["taskId"]

    # the stored content goes with the execution
    file_id = produced["report"].removeprefix("conductor://file/")
    stored = server.workdir / "files" / workflow_id / file_id
    assert stored.read_bytes() == expected
    assert api(server, "DELETE", f"/workflow/{workflow_id}/remove").status_code == 200
    assert api(server, "GET", f"/files/{workflow_id}/{file_id}").status_code == 404
    assert not stored.exists() and not stored.parent.exists()


def test_a_file_above_the_api_body_limit_streams_both_ways(conductor_server):
    """17 MiB: above CONDUCTOR_MAX_REQUEST_BODY_BYTES (16 MiB), below the files limit."""
    server = conductor_server
    api(server, "POST", "/metadata/taskdefs", json=[{"name": "e2e_file_idle", "ownerEmail": "e2e@example.com"}])
    api(server, "POST", "/metadata/workflow", params={"overwrite": "true"}, json={
        "name": "e2e_file_owner", "version": 1, "ownerEmail": "e2e@example.com", "schemaVersion": 2,
        "tasks": [{"name": "e2e_file_idle", "taskReferenceName": "idle", "type": "SIMPLE"}]}).raise_for_status()
    workflow_id = api(server, "POST", "/workflow/e2e_file_owner", json={}).text
    created = api(server, "POST", "/files", json={"workflowId": workflow_id, "fileName": "big.bin"}).json()
    block = hashlib.sha256(b"seed").digest() * 32  # 1 KiB
    size = 17 * 1024 * 1024
    put = httpx.put(created["uploadUrl"], content=block * (size // len(block)), timeout=120)
    assert put.status_code == 204, put.text
    file_id = created["fileHandleId"].removeprefix("conductor://file/")
    done = api(server, "POST", f"/files/{workflow_id}/{file_id}/upload-complete").json()
    url = api(server, "GET", f"/files/{workflow_id}/{file_id}/download-url").json()["downloadUrl"]
    digest, got = hashlib.sha256(), 0
    with httpx.stream("GET", url, timeout=120) as resp:
        assert resp.status_code == 200 and resp.headers["content-length"] == str(size)
        for chunk in resp.iter_bytes():
            digest.update(chunk)
            got += len(chunk)
    assert got == size and digest.hexdigest() == done["contentHash"]
    # the content URL needs no token, but the calls around it do
    assert httpx.get(f"{server.url}/files/{workflow_id}/{file_id}", timeout=10).status_code == 401
    assert api(server, "DELETE", f"/workflow/{workflow_id}", params={"reason": "done"}).status_code == 200
