"""Fixtures of the file storage tests: a store directory of the test's own, a workflow
that owns files, and the signed content URLs driven through Django's test client."""
from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

import pytest

from tests.factories import Api, simple_task, task_def, unique, workflow_def


@pytest.fixture
def api(db) -> Api:
    return Api()


@pytest.fixture
def files_dir(settings, tmp_path):
    """``CONDUCTOR_FILES["DIR"]`` for this test (and the base URL the content URLs name)."""
    settings.CONDUCTOR_FILES = {**settings.CONDUCTOR_FILES, "DIR": tmp_path / "files",
                                "BASE_URL": "http://files.example.test"}
    return tmp_path / "files"


@pytest.fixture
def owner(api, files_dir) -> str:
    """A RUNNING workflow with one SIMPLE task (ref t1): the owner of the files made here."""
    name, task = unique("files_wf"), unique("files_task")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "t1")]))
    return api.start(name, {})


def local(url: str) -> str:
    """The path and query of an absolute content URL (what the test client requests)."""
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def put(api: Api, url: str, data: bytes):
    return api.client.put(local(url), data=data, content_type="application/octet-stream")


def fetch(api: Api, url: str) -> tuple[int, bytes, object]:
    resp = api.client.get(local(url))
    body = b"".join(resp.streaming_content) if resp.status_code == 200 else resp.content
    return resp.status_code, body, resp


def create(api: Api, workflow_id: str, name: str = "report.txt", content_type: str = "text/plain", **extra) -> dict:
    return api.ok(api.post("/files", {"workflowId": workflow_id, "fileName": name, "contentType": content_type,
                                      **extra}), 201).json()


def file_id(created: dict) -> str:
    return created["fileHandleId"].removeprefix("conductor://file/")


def upload(api: Api, workflow_id: str, data: bytes, **kw) -> dict:
    """create, PUT, upload-complete: the created FileUploadResponse."""
    created = create(api, workflow_id, **kw)
    assert put(api, created["uploadUrl"], data).status_code == 204
    done = api.ok(api.post(f"/files/{workflow_id}/{file_id(created)}/upload-complete")).json()
    assert done == {"fileHandleId": created["fileHandleId"], "uploadStatus": "UPLOADED",
                    "contentHash": hashlib.sha256(data).hexdigest()}
    return created
