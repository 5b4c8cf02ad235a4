"""``/api/files`` through HTTP (Django's test client), on SQLite and PostgreSQL: Conductor's
FileResource paths, bodies and status codes, signed content URLs, multipart, limits, bad
input, workflow-scoped access, and removal with the execution."""
from __future__ import annotations

import hashlib
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.factories import Api
from tests.files.conftest import create, fetch, file_id, local, put, upload

pytestmark = pytest.mark.django_db


def test_create_upload_complete_download(api, owner, files_dir):
    data = b"line one\nline two\n" * 1000
    created = create(api, owner, "report.txt", "text/plain")
    assert created["fileHandleId"].startswith("conductor://file/")
    assert (created["uploadStatus"], created["storageType"], created["workflowId"]) == ("UPLOADING", "CONDUCTOR", owner)
    assert created["uploadUrl"].startswith(f"http://files.example.test/api/files/content/{owner}/{file_id(created)}?")
    assert created["uploadUrlExpiresAt"] > time.time() * 1000
    fid = file_id(created)
    meta = api.ok(api.get(f"/files/{owner}/{fid}")).json()
    assert (meta["uploadStatus"], meta["fileSize"], meta["fileName"]) == ("UPLOADING", 0, "report.txt")
    assert api.get(f"/files/{owner}/{fid}/download-url").status_code == 400  # not uploaded yet

    assert put(api, created["uploadUrl"], data).status_code == 204
    done = api.ok(api.post(f"/files/{owner}/{fid}/upload-complete")).json()
    assert done["uploadStatus"] == "UPLOADED" and done["contentHash"] == hashlib.sha256(data).hexdigest()

    meta = api.ok(api.get(f"/files/{owner}/{fid}")).json()
    assert (meta["uploadStatus"], meta["fileSize"], meta["contentType"]) == ("UPLOADED", len(data), "text/plain")
    assert meta["contentHash"] == done["contentHash"] and meta["workflowId"] == owner
    assert "storagePath" not in meta
    url = api.ok(api.get(f"/files/{owner}/{fid}/download-url")).json()
    assert url["fileHandleId"] == created["fileHandleId"] and url["expiresAt"] > time.time() * 1000
    status, body, resp = fetch(api, url["downloadUrl"])
    assert (status, body) == (200, data)
    assert resp["Content-Type"] == "text/plain" and resp["Content-Length"] == str(len(data))
    assert resp["Content-Disposition"].startswith("attachment") and resp["X-Content-Type-Options"] == "nosniff"
    assert (files_dir / owner / fid).read_bytes() == data

    # the content is frozen once UPLOADED
    assert api.refused(put(api, created["uploadUrl"], b"other"), 409)["message"].startswith("File is not accepting")
    assert api.refused(api.post(f"/files/{owner}/{fid}/upload-complete"), 409)["message"] == f"File already uploaded: {fid}"
    # a fresh upload URL can be had (Conductor's retry path); a handle is accepted as the id
    again = api.ok(api.get(f"/files/{owner}/{fid}/upload-url")).json()
    assert again["uploadUrl"] != created["uploadUrl"] or again["expiresAt"] >= created["uploadUrlExpiresAt"]


def test_complete_without_content_and_rewrite_before_complete(api, owner):
    created = create(api, owner)
    fid = file_id(created)
    assert "PUT its content" in api.refused(api.post(f"/files/{owner}/{fid}/upload-complete"), 409)["message"]
    assert put(api, created["uploadUrl"], b"first").status_code == 204
    assert put(api, created["uploadUrl"], b"second try").status_code == 204  # replaced before complete
    api.ok(api.post(f"/files/{owner}/{fid}/upload-complete"))
    status, body, _ = fetch(api, api.get(f"/files/{owner}/{fid}/download-url").json()["downloadUrl"])
    assert (status, body) == (200, b"second try")


def test_signed_urls_are_their_own_credential(api, owner, settings):
    created = upload(api, owner, b"abc")
    fid = file_id(created)
    download = api.get(f"/files/{owner}/{fid}/download-url").json()["downloadUrl"]
    parts = urlsplit(download)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    anonymous = Api()
    assert anonymous.refused(anonymous.client.get(parts.path), 403)  # no signature
    tampered = ("B" if query["sig"][0] == "A" else "A") + query["sig"][1:]
    for name, value in (("sig", tampered), ("exp", str(int(query["exp"]) + 1)), ("kid", "zz"),
                        ("op", "upload")):
        resp = anonymous.client.get(f"{parts.path}?{urlencode({**query, name: value})}")
        assert resp.status_code == 403, (name, resp.status_code)
    # signed for this workflow and file only
    other = create(api, owner)
    assert anonymous.client.get(f"/api/files/content/{owner}/{file_id(other)}?{parts.query}").status_code == 403
    # an upload URL is not a download URL and the other way round (405)
    assert api.refused(api.client.get(local(created["uploadUrl"])), 405)
    assert api.refused(put(api, download, b"x"), 405)
    # expired: signed with a time-to-live that has passed
    from apps.files import signing

    old, _ = signing.sign("download", owner, fid, 60, now=time.time() - 120)
    assert "expired" in api.refused(anonymous.client.get(f"{parts.path}?{urlencode(old)}"), 403)["message"]
    # the URL is Host-independent: whatever origin the client used, the path and query work
    settings.ALLOWED_HOSTS = ["*"]
    assert anonymous.client.get(local(download), HTTP_HOST="proxy.internal:9000").status_code == 200
    # without CONDUCTOR_FILES_BASE_URL the URL names the origin the caller reached
    settings.CONDUCTOR_FILES = {**settings.CONDUCTOR_FILES, "BASE_URL": ""}
    url = api.client.get(f"/api/files/{owner}/{fid}/download-url", HTTP_HOST="conductor.internal:8443").json()
    assert url["downloadUrl"].startswith(f"http://conductor.internal:8443/api/files/content/{owner}/{fid}?")
    # a key rotation: URLs signed by the old key stay valid while it is listed second
    settings.CONDUCTOR_FILES = {**settings.CONDUCTOR_FILES, "SIGNING_KEYS": "k1:first-secret"}
    signed = api.get(f"/files/{owner}/{fid}/download-url").json()["downloadUrl"]
    settings.CONDUCTOR_FILES = {**settings.CONDUCTOR_FILES, "SIGNING_KEYS": "k2:second-secret,k1:first-secret"}
    assert fetch(api, signed)[0] == 200
    settings.CONDUCTOR_FILES = {**settings.CONDUCTOR_FILES, "SIGNING_KEYS": "k2:second-secret"}
    assert fetch(api, signed)[0] == 403


def test_multipart_upload(api, owner):
    created = create(api, owner, "big.bin", "application/octet-stream")
    fid = file_id(created)
    init = api.ok(api.post(f"/files/{owner}/{fid}/multipart")).json()
    assert init["fileHandleId"] == created["fileHandleId"] and init["uploadId"]
    upload_id = init["uploadId"]
    chunks = [bytes([n]) * (300 + n) for n in range(1, 4)]
    etags = {}
    for number in (3, 1, 2):  # any order
        part = api.ok(api.get(f"/files/{owner}/{fid}/multipart/{upload_id}/part/{number}")).json()
        resp = put(api, part["uploadUrl"], chunks[number - 1])
        assert resp.status_code == 200, resp.content
        etags[number] = resp["ETag"]
    assert etags[1].startswith('"')
    complete = f"/files/{owner}/{fid}/multipart/{upload_id}/complete"
    body = api.refused(api.post(complete, {"partETags": [etags[1], etags[3], etags[2]]}), 400)
    assert body["message"].startswith("partETags[1]")
    assert api.refused(api.post(complete, {"partETags": [etags[1], etags[2], etags[3], '"x"']}))["message"] \
        .startswith("partETags[3]: part 4 was not uploaded")
    assert api.refused(api.post(complete, {"partETags": []}))["validationErrors"][0]["path"] == "partETags"
    done = api.ok(api.post(complete, {"partETags": [etags[1], etags[2], etags[3]]})).json()
    whole = b"".join(chunks)
    assert done == {"fileHandleId": created["fileHandleId"], "uploadStatus": "UPLOADED",
                    "contentHash": hashlib.sha256(whole).hexdigest()}
    status, body, _ = fetch(api, api.get(f"/files/{owner}/{fid}/download-url").json()["downloadUrl"])
    assert (status, body) == (200, whole)
    # the session is closed: its part URLs and complete are gone
    assert api.get(f"/files/{owner}/{fid}/multipart/{upload_id}/part/1").status_code == 404


def test_multipart_abort(api, owner, files_dir, django_capture_on_commit_callbacks):
    created = create(api, owner)
    fid = file_id(created)
    upload_id = api.post(f"/files/{owner}/{fid}/multipart").json()["uploadId"]
    part = api.get(f"/files/{owner}/{fid}/multipart/{upload_id}/part/1").json()
    assert put(api, part["uploadUrl"], b"part").status_code == 200
    assert (files_dir / ".multipart" / upload_id / "1").exists()
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"/files/{owner}/{fid}/multipart/{upload_id}").status_code == 204
    assert not (files_dir / ".multipart" / upload_id).exists()
    assert put(api, part["uploadUrl"], b"late").status_code == 404
    assert api.refused(api.post(f"/files/{owner}/{fid}/multipart/{upload_id}/complete", {"partETags": ["a"]}), 404)


def test_size_limit(api, owner, settings, files_dir):
    settings.CONDUCTOR_FILES = {**settings.CONDUCTOR_FILES, "MAX_BYTES": 1000}
    created = create(api, owner)
    fid = file_id(created)
    body = api.refused(put(api, created["uploadUrl"], b"x" * 1001), 413)
    assert body["message"] == "Upload exceeds the configured maximum size of 1000 bytes"
    assert api.refused(api.post(f"/files/{owner}/{fid}/upload-complete"), 409)  # nothing was kept
    assert not any(p.is_file() for p in files_dir.rglob("*"))  # no staged leftovers
    assert put(api, created["uploadUrl"], b"x" * 1000).status_code == 204
    # a multipart total above the limit
    other = create(api, owner)
    oid = file_id(other)
    upload_id = api.post(f"/files/{owner}/{oid}/multipart").json()["uploadId"]
    tags = []
    for number in (1, 2):
        part = api.get(f"/files/{owner}/{oid}/multipart/{upload_id}/part/{number}").json()
        tags.append(put(api, part["uploadUrl"], b"y" * 600)["ETag"])
    assert api.refused(api.post(f"/files/{owner}/{oid}/multipart/{upload_id}/complete", {"partETags": tags}), 413)
    assert api.get(f"/files/{owner}/{oid}").json()["uploadStatus"] == "UPLOADING"


@pytest.mark.parametrize("body, field", [
    ({"fileName": "a.txt"}, "workflowId"),
    ({"workflowId": "", "fileName": "a.txt"}, "workflowId"),
    ({"workflowId": 7, "fileName": "a.txt"}, "workflowId"),
    ({"workflowId": "W"}, "fileName"),
    ({"workflowId": "W", "fileName": "../etc/passwd"}, "fileName"),
    ({"workflowId": "W", "fileName": "a\x01b"}, "fileName"),
    ({"workflowId": "W", "fileName": "x" * 256}, "fileName"),
    ({"workflowId": "W", "fileName": "a.txt", "contentType": "not a type"}, "contentType"),
    ({"workflowId": "W", "fileName": "a.txt", "taskId": "no-such-task"}, "taskId"),
])
def test_bad_create_bodies_name_the_field(api, owner, body, field):
    body = {k: (owner if v == "W" else v) for k, v in body.items()}
    refused = api.refused(api.post("/files", body), 400)
    assert [e["path"] for e in refused["validationErrors"]] == [field], refused


def test_other_bad_input(api, owner):
    assert api.refused(api.post("/files", raw="[1]"), 400)
    assert api.refused(api.post("/files", raw="{nope"), 400)
    assert api.refused(api.post("/files", {"workflowId": "no-such-wf", "fileName": "a"}), 404)["message"] == \
        "No such workflow found by id: no-such-wf"
    task_id = api.workflow(owner, include_tasks=True)["tasks"][0]["taskId"]
    assert create(api, owner, taskId=task_id)["taskId"] == task_id
    assert api.refused(api.get(f"/files/{owner}/no-such-file"), 404)
    created = create(api, owner)
    fid = file_id(created)
    upload_id = api.post(f"/files/{owner}/{fid}/multipart").json()["uploadId"]
    for number in ("0", "10001", "x"):
        assert "partNumber" in api.refused(api.get(f"/files/{owner}/{fid}/multipart/{upload_id}/part/{number}"))["message"]
    assert api.refused(api.get(f"/files/{owner}/{fid}/multipart/nope/part/1"), 404)
    assert api.refused(api.post(f"/files/{owner}/{fid}/multipart/{upload_id}/complete", raw="nope"), 400)
    assert api.refused(api.client.post(local(created["uploadUrl"])), 405)


def test_access_is_scoped_to_the_workflow_family(api, owner):
    from apps.engine.models import WorkflowExecution

    name = api.workflow(owner)["workflowName"]
    child, grandchild, stranger = api.start(name, {}), api.start(name, {}), api.start(name, {})
    WorkflowExecution.objects.filter(pk=child).update(parent_workflow_id=owner)
    WorkflowExecution.objects.filter(pk=grandchild).update(parent_workflow_id=child)
    created = upload(api, owner, b"family data")
    fid = file_id(created)
    for reader in (owner, child, grandchild):
        assert api.ok(api.get(f"/files/{reader}/{fid}")).json()["workflowId"] == owner
        status, body, _ = fetch(api, api.ok(api.get(f"/files/{reader}/{fid}/download-url")).json()["downloadUrl"])
        assert (status, body) == (200, b"family data")
    assert api.refused(api.get(f"/files/{stranger}/{fid}"), 403)["message"] == f"Workflow cannot access file: {fid}"
    assert api.refused(api.get(f"/files/{stranger}/{fid}/download-url"), 403)
    # a file of the grandchild is readable by its ancestors, not by a stranger
    below = upload(api, grandchild, b"deep")
    assert api.ok(api.get(f"/files/{owner}/{file_id(below)}"))
    assert api.refused(api.get(f"/files/{stranger}/{file_id(below)}"), 403)
    # only the owner writes
    pending = create(api, owner)
    pid = file_id(pending)
    for path in (f"/files/{child}/{pid}/upload-url", ):
        assert api.refused(api.get(path), 403)["message"] == f"Workflow does not own file: {pid}"
    assert api.refused(api.post(f"/files/{child}/{pid}/upload-complete"), 403)
    assert api.refused(api.post(f"/files/{child}/{pid}/multipart"), 403)


def test_files_go_with_their_execution(api, owner, files_dir, django_capture_on_commit_callbacks):
    from apps.engine import retention
    from apps.files.models import StoredFile

    kept = upload(api, owner, b"kept")
    name = api.workflow(owner)["workflowName"]
    task_type = api.workflow(owner, include_tasks=True)["tasks"][0]["taskType"]
    gone_wf = api.start(name, {})
    gone = upload(api, gone_wf, b"gone")
    pending = create(api, gone_wf)
    upload_id = api.post(f"/files/{gone_wf}/{file_id(pending)}/multipart").json()["uploadId"]
    part = api.get(f"/files/{gone_wf}/{file_id(pending)}/multipart/{upload_id}/part/1").json()
    put(api, part["uploadUrl"], b"p")
    assert (files_dir / gone_wf / file_id(gone)).exists()
    # what a killed upload process would leave beside it
    (files_dir / gone_wf / f"{file_id(gone)}.staged-0123abcd").write_bytes(b"half")
    (files_dir / gone_wf / f".{file_id(gone)}.staged-0123abcd.x1y2.part").write_bytes(b"half")
    # a running execution cannot be removed (Conductor), so the file stays
    assert api.delete(f"/workflow/{gone_wf}/remove").status_code == 400
    for task in api.poll(task_type, count=5):  # both executions' tasks
        api.complete(task)
    assert api.workflow(gone_wf)["status"] == "COMPLETED"
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"/workflow/{gone_wf}/remove").status_code == 200
    assert not StoredFile.objects.filter(workflow_id=gone_wf).exists()
    assert not (files_dir / gone_wf).exists() and not (files_dir / ".multipart" / upload_id).exists()
    assert api.refused(api.get(f"/files/{gone_wf}/{file_id(gone)}"), 404)
    assert (files_dir / owner / file_id(kept)).read_bytes() == b"kept"

    # the retention job takes the files of what it purges
    assert api.workflow(owner)["status"] == "COMPLETED"
    with django_capture_on_commit_callbacks(execute=True):
        counts = retention.purge({"COMPLETED": 0}, now=int(time.time() * 1000) + 10_000)
    assert counts.get("COMPLETED", 0) >= 1
    assert not StoredFile.objects.filter(workflow_id=owner).exists() and not (files_dir / owner).exists()


def test_the_admin_lists_files_read_only(api, owner, admin_client):
    created = upload(api, owner, b"shown", name="shown.txt")
    page = admin_client.get("/admin/files/storedfile/", {"q": owner})
    assert page.status_code == 200 and b"shown.txt" in page.content
    assert admin_client.get("/admin/files/storedfile/add/").status_code == 403
    detail = admin_client.get(f"/admin/files/storedfile/{file_id(created)}/change/")
    assert detail.status_code == 200 and b"UPLOADED" in detail.content
