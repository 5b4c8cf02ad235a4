"""Two conductor-python SDK workers passing a file between tasks (module level:
``TaskHandler`` spawns a process per worker that re-imports this module). The Python SDK
2.0.0 has no file client, so they call ``/api/files`` through the SDK's own ``ApiClient``
(which signs in with the configured key) and send the signed URLs with plain HTTP, no
token. No ``from __future__ import annotations``: the SDK reads the annotations."""
import hashlib

import httpx
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.api_client import ApiClient
from conductor.client.http.models.task import Task
from conductor.client.worker.worker_task import worker_task

PRODUCE = "e2e_file_produce"
CONSUME = "e2e_file_consume"
PREFIX = "conductor://file/"


def call(method: str, path: str, body=None):
    """One /api call through the SDK's ApiClient (token included), the JSON answer as a dict."""
    client = ApiClient(Configuration())
    return client.call_api(path, method, body=body, auth_settings=["api_key"], response_type="object",
                           _return_http_data_only=True)


def report_rows(rows: int):
    """The CSV the producer writes, as pieces (sent chunked, no Content-Length)."""
    yield b"n,square\n"
    for n in range(1, rows + 1):
        yield f"{n},{n * n}\n".encode()


@worker_task(task_definition_name=PRODUCE)
def produce(task: Task) -> dict:
    """Writes a CSV of ``rows`` lines as a file of its workflow; returns its handle."""
    workflow_id = task.workflow_instance_id
    created = call("POST", "/files", {"workflowId": workflow_id, "fileName": "squares.csv", "contentType": "text/csv",
                                      "taskId": task.task_id})
    put = httpx.put(created["uploadUrl"], content=report_rows(int(task.input_data["rows"])), timeout=60)
    put.raise_for_status()
    file_id = created["fileHandleId"][len(PREFIX):]
    done = call("POST", f"/files/{workflow_id}/{file_id}/upload-complete")
    return {"report": created["fileHandleId"], "sha256": done["contentHash"]}


@worker_task(task_definition_name=CONSUME)
def consume(task: Task) -> dict:
    """Downloads the file the handle names (streamed) and reports what it holds."""
    workflow_id, handle = task.workflow_instance_id, task.input_data["report"]
    file_id = handle[len(PREFIX):]
    meta = call("GET", f"/files/{workflow_id}/{file_id}")
    url = call("GET", f"/files/{workflow_id}/{file_id}/download-url")["downloadUrl"]
    digest, size, lines, last = hashlib.sha256(), 0, 0, b""
    with httpx.stream("GET", url, timeout=60) as resp:
        resp.raise_for_status()
        for chunk in resp.iter_bytes():
            digest.update(chunk)
            size += len(chunk)
            lines += chunk.count(b"\n")
            last = (last + chunk)[-64:]
    return {"sha256": digest.hexdigest(), "size": size, "lines": lines,
            "last": last.rstrip(b"\n").rsplit(b"\n", 1)[-1].decode(), "fileName": meta["fileName"],
            "producedBy": meta["taskId"], "fileSize": meta["fileSize"]}
