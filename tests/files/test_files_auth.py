"""With API authentication on: the roles of ``/api/files`` (a worker creates and uploads,
a read-only key reads metadata and download URLs but gets no upload URL), and the signed
content URLs working without a token."""
from __future__ import annotations

import pytest

from tests.auth.conftest import TokenApi, make_key, token_for
from tests.files.conftest import fetch, file_id, put

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_role(db, settings, monkeypatch):
    from apps.api import auth

    monkeypatch.setitem(settings.CONDUCTOR, "API_AUTH", True)
    auth.forget_cached_keys()
    yield lambda role: TokenApi(token_for(*make_key(role)))
    auth.forget_cached_keys()


def test_roles_of_the_file_calls(owner, as_role):
    worker, reader, operator = as_role("worker"), as_role("read_only"), as_role("operator")
    anonymous = TokenApi(None)
    body = {"workflowId": owner, "fileName": "out.csv", "contentType": "text/csv"}
    assert anonymous.post("/files", body).status_code == 401
    assert "needs the worker role" in reader.refused(reader.post("/files", body), 403)["message"]
    created = worker.ok(worker.post("/files", body), 201).json()
    fid = file_id(created)
    # the content URL needs no token: its signature is the credential
    assert put(anonymous, created["uploadUrl"], b"a,b\n1,2\n").status_code == 204
    assert reader.get(f"/files/{owner}/{fid}/upload-url").status_code == 403
    assert reader.post(f"/files/{owner}/{fid}/upload-complete").status_code == 403
    assert reader.post(f"/files/{owner}/{fid}/multipart").status_code == 403
    worker.ok(worker.get(f"/files/{owner}/{fid}/upload-url"))
    worker.ok(worker.post(f"/files/{owner}/{fid}/upload-complete"))
    assert reader.ok(reader.get(f"/files/{owner}/{fid}")).json()["uploadStatus"] == "UPLOADED"
    url = reader.ok(reader.get(f"/files/{owner}/{fid}/download-url")).json()["downloadUrl"]
    assert fetch(anonymous, url)[:2] == (200, b"a,b\n1,2\n")
    assert anonymous.get(f"/files/{owner}/{fid}").status_code == 401
    # an operator holds the worker's rights too
    other = operator.ok(operator.post("/files", body), 201).json()
    upload_id = operator.ok(operator.post(f"/files/{owner}/{file_id(other)}/multipart")).json()["uploadId"]
    assert reader.get(f"/files/{owner}/{file_id(other)}/multipart/{upload_id}/part/1").status_code == 403
    assert reader.delete(f"/files/{owner}/{file_id(other)}/multipart/{upload_id}").status_code == 403
    operator.ok(operator.get(f"/files/{owner}/{file_id(other)}/multipart/{upload_id}/part/1"))
    assert operator.delete(f"/files/{owner}/{file_id(other)}/multipart/{upload_id}").status_code == 204
