"""The file storage services behind ``/api/files`` (Conductor's ``FileStorageServiceImpl``).

Who may do what (Conductor's rules):

* a file is created for an existing workflow execution (``workflowId``, optionally one of
  its tasks, ``taskId``) and answered with a ``conductor://file/<id>`` handle and a signed
  upload URL;
* upload URLs, content writes, upload-complete and the multipart calls are the owning
  workflow's alone (its id in the path; 403 for any other);
* metadata, download URLs and content reads are open to the owner's family: the owner
  itself, its ancestors and its descendants (parent/sub-workflows), so a sub-workflow reads
  what its parent wrote and the other way round (403 otherwise);
* content is immutable once UPLOADED (a later write answers 409).

Content moves as streams (``storage``): a write goes to a staged key without any lock or
transaction, then the row is locked briefly to check the state and move it into place, so
no slow or user-supplied step runs under a lock. Rows are removed with their execution (the
foreign key cascades in ``retention.delete_executions``); ``connect_cleanup`` removes their
content after that transaction commits.
"""
from __future__ import annotations

import re
import uuid
from urllib.parse import quote, urlencode

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete

from apps.api.bodylimit import FILE_CONTENT_PREFIX
from apps.core.clock import now_ms
from apps.core.errors import Conflict, ConductorError, InvalidInput, NotFound, validation_failed
from apps.files import signing
from apps.files.models import STORAGE_TYPE, UPLOADED, UPLOADING, MultipartUpload, StoredFile
from apps.files.storage import get_store

HANDLE_PREFIX = "conductor://file/"
MAX_PARTS = 10_000  # S3's and the SDK's bound on a multipart upload
FAMILY_DEPTH = 64  # parent links followed at most (a chain of sub-workflows)
_FILE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_CONTENT_TYPE = re.compile(r"^[\w.+-]+/[\w.+-]+(\s*;.*)?$")
_UNSAFE_NAME = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')


class AccessDenied(ConductorError):
    """403: the workflow in the path may not use this file (Conductor's AccessForbiddenException)."""

    status = 403


def handle_of(file_id: str) -> str:
    """``conductor://file/<fileId>``: the handle tasks pass to each other."""
    return HANDLE_PREFIX + file_id


def file_id_of(value: str) -> str:
    """The bare fileId of a path value, which may also be a whole handle (Conductor's
    converter is idempotent). NotFound for anything that cannot be an id of ours."""
    value = value[len(HANDLE_PREFIX):] if value.startswith(HANDLE_PREFIX) else value
    if not _FILE_ID.match(value):
        raise NotFound(f"File not found: {value}")
    return value


def max_bytes() -> int:
    """The largest file accepted, in bytes (``CONDUCTOR_FILES_MAX_BYTES``)."""
    return int(settings.CONDUCTOR_FILES["MAX_BYTES"])


def _key(row: StoredFile) -> str:
    return f"{row.workflow_id}/{row.file_id}"


def _row(file_id: str, *, lock: bool = False) -> StoredFile:
    rows = StoredFile.objects.select_for_update() if lock else StoredFile.objects
    row = rows.filter(pk=file_id_of(file_id)).first()
    if row is None:
        raise NotFound(f"File not found: {file_id}")
    return row


def _owned(workflow_id: str, file_id: str, *, lock: bool = False) -> StoredFile:
    """The file when ``workflow_id`` owns it; NotFound / AccessDenied otherwise."""
    row = _row(file_id, lock=lock)
    if row.workflow_id != workflow_id:
        raise AccessDenied(f"Workflow does not own file: {row.file_id}")
    return row


def _ancestors(workflow_id: str) -> list[str]:
    from apps.engine.models import WorkflowExecution

    chain, current = [], workflow_id
    for _ in range(FAMILY_DEPTH):
        parent = WorkflowExecution.objects.filter(pk=current).values_list("parent_workflow_id", flat=True).first()
        if not parent or parent in chain:
            break
        chain.append(parent)
        current = parent
    return chain


def _family_readable(workflow_id: str, file_id: str) -> StoredFile:
    """The file when ``workflow_id`` is its owner, an ancestor or a descendant of it."""
    row = _row(file_id)
    owner = row.workflow_id
    if workflow_id != owner and owner not in _ancestors(workflow_id) and workflow_id not in _ancestors(owner):
        raise AccessDenied(f"Workflow cannot access file: {row.file_id}")
    return row


def _content_url(origin: str, row: StoredFile, workflow_id: str, op: str, **part) -> tuple[str, int]:
    query, expires_at = signing.sign(op, workflow_id, row.file_id, settings.CONDUCTOR_FILES["URL_TTL_SECONDS"],
                                     **part)
    path = f"{FILE_CONTENT_PREFIX}{quote(workflow_id, safe='')}/{quote(row.file_id, safe='')}"
    return f"{origin}{path}?{urlencode(query)}", expires_at


def _text(body: dict, name: str, *, required: bool, limit: int = 255) -> str | None:
    value = body.get(name)
    if value is None or (isinstance(value, str) and not value.strip() and not required):
        if required:
            raise validation_failed([{"path": name, "message": f"{name} is required"}])
        return None
    if not isinstance(value, str) or not value.strip():
        raise validation_failed([{"path": name, "message": f"{name} must be a non-blank string",
                                  "invalidValue": value}])
    if len(value) > limit:
        raise validation_failed([{"path": name, "message": f"{name} is longer than {limit} characters"}])
    return value


def file_json(row: StoredFile) -> dict:
    """Conductor's ``FileHandle`` (the metadata; the storage path is never shown)."""
    return {"fileHandleId": handle_of(row.file_id), "fileName": row.file_name, "contentType": row.content_type,
            "fileSize": row.size_bytes if row.upload_status == UPLOADED else 0,
            "contentHash": row.content_hash if row.upload_status == UPLOADED else None,
            "storageType": row.storage_type, "uploadStatus": row.upload_status, "workflowId": row.workflow_id,
            "taskId": row.task_id, "createdAt": row.created_time, "updatedAt": row.updated_time}


def create_file(body, origin: str) -> dict:
    """``POST /api/files``: a new UPLOADING file of ``body["workflowId"]`` -> Conductor's
    ``FileUploadResponse`` with a signed upload URL (``origin`` + path). Errors: 400 naming
    the field (workflowId, fileName, contentType, taskId), 404 for an unknown workflow."""
    from apps.engine.models import TaskExecution, WorkflowExecution

    if not isinstance(body, dict):
        raise InvalidInput("The body must be a JSON object (FileUploadRequest)")
    workflow_id = _text(body, "workflowId", required=True, limit=64)
    file_name = _text(body, "fileName", required=True)
    if file_name in (".", "..") or _UNSAFE_NAME.search(file_name):
        raise validation_failed([{"path": "fileName", "message": "fileName must be a plain file name (no path "
                                  "separators, control characters or :*?\"<>|)", "invalidValue": file_name}])
    content_type = _text(body, "contentType", required=False) or "application/octet-stream"
    if not _CONTENT_TYPE.match(content_type):
        raise validation_failed([{"path": "contentType", "message": "contentType must be a media type such as "
                                  "text/plain", "invalidValue": content_type}])
    task_id = _text(body, "taskId", required=False, limit=64)
    if not WorkflowExecution.objects.filter(pk=workflow_id).exists():
        raise NotFound(f"No such workflow found by id: {workflow_id}")
    if task_id and not TaskExecution.objects.filter(pk=task_id, workflow_id=workflow_id).exists():
        raise validation_failed([{"path": "taskId", "message": f"taskId is not a task of workflow {workflow_id}",
                                  "invalidValue": task_id}])
    now = now_ms()
    row = StoredFile.objects.create(file_id=str(uuid.uuid4()), workflow_id=workflow_id, task_id=task_id,
                                    file_name=file_name, content_type=content_type, storage_type=STORAGE_TYPE,
                                    upload_status=UPLOADING, created_time=now, updated_time=now)
    url, expires_at = _content_url(origin, row, workflow_id, "upload")
    return {"fileHandleId": handle_of(row.file_id), "fileName": file_name, "contentType": content_type,
            "storageType": STORAGE_TYPE, "uploadStatus": UPLOADING, "uploadUrl": url,
            "uploadUrlExpiresAt": expires_at, "createdAt": now, "workflowId": workflow_id, "taskId": task_id}


def upload_url(workflow_id: str, file_id: str, origin: str) -> dict:
    """``GET /api/files/{workflowId}/{fileId}/upload-url``: a fresh signed upload URL
    (``FileUploadUrlResponse``); the owner only."""
    row = _owned(workflow_id, file_id)
    url, expires_at = _content_url(origin, row, workflow_id, "upload")
    return {"fileHandleId": handle_of(row.file_id), "uploadUrl": url, "expiresAt": expires_at}


def download_url(workflow_id: str, file_id: str, origin: str) -> dict:
    """``GET /api/files/{workflowId}/{fileId}/download-url`` (``FileDownloadUrlResponse``):
    the family; 400 until the file is UPLOADED (Conductor's IllegalArgumentException)."""
    row = _family_readable(workflow_id, file_id)
    if row.upload_status != UPLOADED:
        raise InvalidInput(f"File not yet uploaded: {row.file_id}, status={row.upload_status}")
    url, expires_at = _content_url(origin, row, workflow_id, "download")
    return {"fileHandleId": handle_of(row.file_id), "downloadUrl": url, "expiresAt": expires_at}


def metadata(workflow_id: str, file_id: str) -> dict:
    """``GET /api/files/{workflowId}/{fileId}``: the file's FileHandle, for the family."""
    return file_json(_family_readable(workflow_id, file_id))


def _commit_staged(workflow_id: str, file_id: str, staged: str, written, *, upload_id: str | None = None) -> StoredFile:
    """Lock the row, check it still takes content, move the staged content into place and
    record it; the staged content is removed on any refusal."""
    store = get_store()
    try:
        with transaction.atomic():
            row = _owned(workflow_id, file_id, lock=True)
            if row.upload_status != UPLOADING:
                raise Conflict(f"File is not accepting content uploads: {row.file_id}")
            if upload_id is not None and not MultipartUpload.objects.filter(pk=upload_id, file_id=row.file_id).exists():
                raise NotFound(f"Multipart upload not found: {upload_id}")
            store.move(staged, _key(row))
            row.has_content, row.size_bytes, row.content_hash = True, written.size, written.sha256
            row.updated_time = now_ms()
            if upload_id is not None:
                row.upload_status = UPLOADED
                MultipartUpload.objects.filter(pk=upload_id).delete()  # its parts go after commit
            row.save(update_fields=["has_content", "size_bytes", "content_hash", "updated_time", "upload_status"])
            return row
    except BaseException:
        store.delete(staged)
        raise


def _staged_key(row: StoredFile) -> str:
    return f"{row.workflow_id}/{row.file_id}.staged-{uuid.uuid4().hex}"


def write_content(workflow_id: str, file_id: str, source, *, upload_id: str | None = None,
                  part_number: int | None = None) -> str | None:
    """``PUT /api/files/content/{workflowId}/{fileId}`` (signed): stream ``source`` (``read(n)``)
    into the file, or into one part of ``upload_id``. Returns the part's ETag (SHA-256, hex)
    for a part, None for the whole file. Errors: 403/404 as ``_owned``, 409 once UPLOADED,
    413 above ``max_bytes()``, 400 for a partNumber out of 1..10000."""
    row = _owned(workflow_id, file_id)
    if row.upload_status != UPLOADING:
        raise Conflict(f"File is not accepting content uploads: {row.file_id}")
    store = get_store()
    if upload_id is None:
        staged = _staged_key(row)
        written = store.write(staged, source, max_bytes())
        _commit_staged(workflow_id, row.file_id, staged, written)
        return None
    _part_number(part_number)
    if not MultipartUpload.objects.filter(pk=upload_id, file_id=row.file_id).exists():
        raise NotFound(f"Multipart upload not found: {upload_id}")
    return store.write_part(upload_id, part_number, source, max_bytes()).sha256


def _part_number(value) -> int:
    if not isinstance(value, int) or not 1 <= value <= MAX_PARTS:
        raise InvalidInput(f"partNumber: must be between 1 and {MAX_PARTS} (got {value})")
    return value


def open_content(workflow_id: str, file_id: str):
    """``GET /api/files/content/{workflowId}/{fileId}`` (signed): ``(open binary file, row)``
    of an UPLOADED file, for the family; 400 before upload-complete."""
    row = _family_readable(workflow_id, file_id)
    if row.upload_status != UPLOADED:
        raise InvalidInput(f"File has not been uploaded: {row.file_id}")
    return get_store().open(_key(row)), row


def confirm_upload(workflow_id: str, file_id: str) -> dict:
    """``POST /api/files/{workflowId}/{fileId}/upload-complete``: UPLOADED, the content
    frozen -> ``FileUploadCompleteResponse``. 409 when already UPLOADED or when no content
    was written yet."""
    with transaction.atomic():
        row = _owned(workflow_id, file_id, lock=True)
        if row.upload_status == UPLOADED:
            raise Conflict(f"File already uploaded: {row.file_id}")
        if not row.has_content:
            raise Conflict(f"File not found on storage backend: {row.file_id} (PUT its content to the upload URL "
                           "first)")
        row.upload_status, row.updated_time = UPLOADED, now_ms()
        row.save(update_fields=["upload_status", "updated_time"])
    return {"fileHandleId": handle_of(row.file_id), "uploadStatus": UPLOADED, "contentHash": row.content_hash}


def multipart_init(workflow_id: str, file_id: str) -> dict:
    """``POST /api/files/{workflowId}/{fileId}/multipart`` -> ``{fileHandleId, uploadId}``."""
    row = _owned(workflow_id, file_id)
    if row.upload_status != UPLOADING:
        raise Conflict(f"File is not accepting content uploads: {row.file_id}")
    upload = MultipartUpload.objects.create(upload_id=uuid.uuid4().hex, file_id=row.file_id, created_time=now_ms())
    return {"fileHandleId": handle_of(row.file_id), "uploadId": upload.upload_id}


def _open_upload(workflow_id: str, file_id: str, upload_id: str) -> StoredFile:
    row = _owned(workflow_id, file_id)
    if not MultipartUpload.objects.filter(pk=upload_id, file_id=row.file_id).exists():
        raise NotFound(f"Multipart upload not found: {upload_id}")
    return row


def multipart_part_url(workflow_id: str, file_id: str, upload_id: str, part_number: int, origin: str) -> dict:
    """``GET .../multipart/{uploadId}/part/{partNumber}``: a signed URL for one part (PUT it;
    the answer's ``ETag`` header is the part's completion token)."""
    _part_number(part_number)
    row = _open_upload(workflow_id, file_id, upload_id)
    url, expires_at = _content_url(origin, row, workflow_id, "upload", upload_id=upload_id, part_number=part_number)
    return {"fileHandleId": handle_of(row.file_id), "uploadUrl": url, "expiresAt": expires_at}


def multipart_complete(workflow_id: str, file_id: str, upload_id: str, body) -> dict:
    """``POST .../multipart/{uploadId}/complete`` with ``{"partETags": [...]}`` (part 1's
    ETag first): the parts joined in that order, the file UPLOADED. 400 naming partETags
    (missing, a part not uploaded or an ETag that is not its part's), 413 above the limit."""
    row = _open_upload(workflow_id, file_id, upload_id)
    tags = body.get("partETags") if isinstance(body, dict) else None
    if not isinstance(tags, list) or not tags or not all(isinstance(t, str) for t in tags):
        raise validation_failed([{"path": "partETags", "message": "partETags must be a non-empty list of the "
                                  "ETags of parts 1..n"}])
    if len(tags) > MAX_PARTS:
        raise validation_failed([{"path": "partETags", "message": f"at most {MAX_PARTS} parts"}])
    parts = [(number, tag.strip().strip('"')) for number, tag in enumerate(tags, start=1)]
    staged = _staged_key(row)
    store = get_store()
    written = store.assemble(upload_id, parts, staged, max_bytes())
    row = _commit_staged(workflow_id, row.file_id, staged, written, upload_id=upload_id)
    return {"fileHandleId": handle_of(row.file_id), "uploadStatus": UPLOADED, "contentHash": row.content_hash}


def multipart_abort(workflow_id: str, file_id: str, upload_id: str) -> None:
    """``DELETE .../multipart/{uploadId}``: the session and its parts are dropped."""
    _open_upload(workflow_id, file_id, upload_id)
    MultipartUpload.objects.filter(pk=upload_id).delete()


def _content_removed(sender, instance: StoredFile, **kwargs) -> None:
    key = _key(instance)
    transaction.on_commit(lambda: get_store().delete(key))


def _parts_removed(sender, instance: MultipartUpload, **kwargs) -> None:
    upload_id = instance.upload_id
    transaction.on_commit(lambda: get_store().discard_parts(upload_id))


def connect_cleanup() -> None:
    """Remove stored content once the rows are gone and the transaction committed: a file
    deleted with its execution (``retention.delete_executions``), a multipart session
    completed, aborted or deleted with its file. Called once from the app's ``ready``."""
    post_delete.connect(_content_removed, sender=StoredFile, dispatch_uid="files-content-removed")
    post_delete.connect(_parts_removed, sender=MultipartUpload, dispatch_uid="files-parts-removed")
