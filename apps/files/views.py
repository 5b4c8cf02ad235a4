"""``/api/files``: Conductor's FileResource, and the content endpoint its signed URLs name.

JSON calls (DRF, Conductor's bodies and error body; roles in ``apps.api.auth``):

* ``POST /api/files`` -> 201 FileUploadResponse;
* ``GET /api/files/{workflowId}/{fileId}`` (FileHandle), ``.../upload-url``,
  ``.../download-url``; ``POST .../upload-complete``;
* ``POST .../multipart`` -> ``{fileHandleId, uploadId}``,
  ``GET .../multipart/{uploadId}/part/{partNumber}``, ``POST .../multipart/{uploadId}/complete``,
  ``DELETE .../multipart/{uploadId}`` (204).

Content (``/api/files/content/{workflowId}/{fileId}``, a plain Django view: no parser ever
reads the body whole): ``PUT`` streams the body into the store (204; a multipart part
answers 200 with its ``ETag``), ``GET`` streams the file out (as an attachment, never
rendered by a browser on this origin). Its credential is the URL's signature (403 without,
405 for the other operation's method), not a token.
"""
from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.api.exceptions import error_response
from apps.api.parsers import require_json
from apps.api.views.base import ConductorApi, empty
from apps.core.errors import ConductorError, InvalidInput
from apps.files import services, signing
from apps.files.storage import CHUNK_BYTES

TAGS = ["file-resource"]


def _param(name: str, where: str = "path", description: str = "") -> dict:
    return {"name": name, "in": where, "required": where == "path", "schema": {"type": "string"},
            "description": description}


_SIGNED = [_param("workflowId"), _param("fileId"),
           *(_param(n, "query", d) for n, d in (("op", "upload or download"), ("exp", "expiry, epoch seconds"),
                                                 ("kid", "signing key id"), ("sig", "HMAC-SHA256, base64url"),
                                                 ("uploadId", "multipart session (a part URL)"),
                                                 ("partNumber", "1..10000 (a part URL)")))]
# The content endpoint is a plain Django view (its body is streamed, never parsed): its
# description for /api-docs, merged by apps.api.openapi.complete_document.
OPENAPI_OPERATIONS = {"/api/files/content/{workflowId}/{fileId}": {
    "put": {"operationId": "uploadFileContent", "tags": TAGS, "security": [], "parameters": _SIGNED,
            "summary": "Stream raw file content to a signed upload URL (its signature is the credential)",
            "requestBody": {"content": {"application/octet-stream": {"schema": {"type": "string",
                                                                                 "format": "binary"}}}},
            "responses": {"204": {"description": "Stored"},
                          "200": {"description": "A multipart part stored; its ETag header is its token"}}},
    "get": {"operationId": "downloadFileContent", "tags": TAGS, "security": [], "parameters": _SIGNED,
            "summary": "Stream raw file content from a signed download URL",
            "responses": {"200": {"description": "The content", "content": {"application/octet-stream": {
                "schema": {"type": "string", "format": "binary"}}}}}}}}


def origin(request) -> str:
    """Scheme and host put in front of the content URLs: ``CONDUCTOR_FILES_BASE_URL``, or
    the origin this client reached."""
    return settings.CONDUCTOR_FILES["BASE_URL"] or request.build_absolute_uri("/").rstrip("/")


class FilesApi(ConductorApi):
    """``POST /api/files``: create a file record and get its upload URL (201)."""

    @extend_schema(operation_id="createFile", tags=TAGS, request=dict, responses={201: dict})
    def post(self, request):
        body = require_json(request.data, "FileUploadRequest")
        return Response(services.create_file(body, origin(request)), status=201)


class FileApi(ConductorApi):
    """``GET /api/files/{workflowId}/{fileId}``: the file's metadata (FileHandle)."""

    @extend_schema(operation_id="getFileMetadata", tags=TAGS, responses=dict)
    def get(self, request, workflow_id, file_id):
        return Response(services.metadata(workflow_id, file_id))


class UploadUrlApi(ConductorApi):
    """``GET /api/files/{workflowId}/{fileId}/upload-url``: a fresh signed upload URL."""

    @extend_schema(operation_id="getUploadUrl", tags=TAGS, responses=dict)
    def get(self, request, workflow_id, file_id):
        return Response(services.upload_url(workflow_id, file_id, origin(request)))


class DownloadUrlApi(ConductorApi):
    """``GET /api/files/{workflowId}/{fileId}/download-url``: a signed download URL."""

    @extend_schema(operation_id="getDownloadUrl", tags=TAGS, responses=dict)
    def get(self, request, workflow_id, file_id):
        return Response(services.download_url(workflow_id, file_id, origin(request)))


class UploadCompleteApi(ConductorApi):
    """``POST /api/files/{workflowId}/{fileId}/upload-complete``: the file is UPLOADED."""

    @extend_schema(operation_id="confirmUpload", tags=TAGS, request=None, responses=dict)
    def post(self, request, workflow_id, file_id):
        return Response(services.confirm_upload(workflow_id, file_id))


class MultipartApi(ConductorApi):
    """``POST /api/files/{workflowId}/{fileId}/multipart``: start a multipart upload."""

    @extend_schema(operation_id="initiateMultipartUpload", tags=TAGS, request=None, responses=dict)
    def post(self, request, workflow_id, file_id):
        return Response(services.multipart_init(workflow_id, file_id))


class MultipartPartApi(ConductorApi):
    """``GET .../multipart/{uploadId}/part/{partNumber}``: a signed URL for one part."""

    @extend_schema(operation_id="getPartUploadUrl", tags=TAGS, responses=dict)
    def get(self, request, workflow_id, file_id, upload_id, part_number):
        return Response(services.multipart_part_url(workflow_id, file_id, upload_id, _int(part_number, "partNumber"),
                                                    origin(request)))


class MultipartCompleteApi(ConductorApi):
    """``POST .../multipart/{uploadId}/complete`` with ``{"partETags": [...]}``."""

    @extend_schema(operation_id="completeMultipartUpload", tags=TAGS, request=dict, responses=dict)
    def post(self, request, workflow_id, file_id, upload_id):
        body = require_json(request.data, "MultipartCompleteRequest")
        return Response(services.multipart_complete(workflow_id, file_id, upload_id, body))


class MultipartAbortApi(ConductorApi):
    """``DELETE .../multipart/{uploadId}``: abort (204)."""

    @extend_schema(operation_id="abortMultipartUpload", tags=TAGS, request=None, responses={204: None})
    def delete(self, request, workflow_id, file_id, upload_id):
        services.multipart_abort(workflow_id, file_id, upload_id)
        return empty(204)


def _int(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidInput(f"{name}: {text!r} is not a number") from None


async def _chunks(handle):
    """The file's content in CHUNK_BYTES pieces, each read in a pool thread (closed at the end)."""
    read = sync_to_async(handle.read, thread_sensitive=False)
    try:
        while chunk := await read(CHUNK_BYTES):
            yield chunk
    finally:
        await sync_to_async(handle.close, thread_sensitive=False)()


def _download(request, workflow_id: str, file_id: str):
    from django.core.handlers.asgi import ASGIRequest

    handle, row = services.open_content(workflow_id, file_id)
    if isinstance(request, ASGIRequest):  # a synchronous iterator would be read whole first under ASGI
        response = StreamingHttpResponse(_chunks(handle), content_type=row.content_type)
        response["Content-Length"] = str(row.size_bytes)
    else:
        response = FileResponse(handle, content_type=row.content_type)
        response.block_size = CHUNK_BYTES
    # user content on this origin is never rendered: an attachment, no sniffing, sandboxed
    response["Content-Disposition"] = content_disposition_header(True, row.file_name)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox"
    return response


@csrf_exempt
def content(request, workflow_id: str, file_id: str):
    """``PUT``/``GET /api/files/content/{workflowId}/{fileId}?op&exp&kid&sig`` (see the module doc)."""
    try:
        if request.method not in ("PUT", "GET"):
            raise signing.MethodNotAllowed(f"Method {request.method} is not allowed on file content (PUT or GET)")
        _op, upload_id, part_number = signing.verify(request.method, workflow_id, file_id, request.GET)
        if request.method != "PUT":
            return _download(request, workflow_id, file_id)
        # the body as Django's ASGI handler spooled it (to disk above FILE_UPLOAD_MAX_MEMORY_SIZE)
        etag = services.write_content(workflow_id, file_id, request, upload_id=upload_id, part_number=part_number)
        if etag is None:
            return HttpResponse(status=204)
        response = HttpResponse(status=200)
        response["ETag"] = f'"{etag}"'
        return response
    except ConductorError as exc:
        return error_response(exc)
