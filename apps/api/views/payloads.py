"""External payload storage over HTTP, and ``GET /api/version``.

* ``GET /api/workflow/externalstoragelocation`` and ``GET /api/tasks/externalstoragelocation``
  with ``path``, ``operation`` (READ|WRITE) and ``payloadType`` (WORKFLOW_INPUT,
  WORKFLOW_OUTPUT, TASK_INPUT, TASK_OUTPUT) -> Conductor's ExternalStorageLocation
  ``{"uri": ..., "path": ...}``. WRITE makes a new path (``path`` is ignored, as Conductor's
  storages do); READ needs ``path``. The ``uri`` is an absolute URL of this server,
  ``/api/external-payloads/<path>?token=...``, signed (``django.core.signing``, with
  SECRET_KEY) for that path, operation and payload type, valid
  ``CONDUCTOR_PAYLOAD_URI_TTL_SECONDS``: the SDKs PUT or GET it without credentials, like
  a presigned S3 URL.
* ``PUT /api/external-payloads/<path>?token`` stores the JSON body (413 above the type's max
  threshold); ``GET`` answers it. A missing, expired or foreign token is 403.
* ``GET /api/version``: the server's version as text (Conductor's VersionResource).
"""
from __future__ import annotations


from django.conf import settings
from django.core import signing
from django.http import HttpResponse
from django.urls import reverse

from apps.api.params import qstr
from apps.api.views.base import ConductorApi, text
from apps.api.auth import Forbidden, require_role
from apps.core.errors import InvalidInput
from apps.engine import payloads

_SALT = "conductor-web.external-payload"
RESOURCE_TYPES = {"workflow": ("WORKFLOW_INPUT", "WORKFLOW_OUTPUT"), "tasks": ("TASK_INPUT", "TASK_OUTPUT")}


def _choice(request, name: str, allowed: tuple[str, ...]) -> str:
    value = qstr(request.query_params, name)
    if value not in allowed:
        raise InvalidInput(f"{name}: must be one of {', '.join(allowed)} (got {value!r})")
    return value


def _signed_uri(request, *, path: str, operation: str, payload_type: str) -> str:
    token = signing.TimestampSigner(salt=_SALT).sign_object({"p": path, "o": operation, "t": payload_type})
    url = reverse("external-payload", kwargs={"path": path})
    return request.build_absolute_uri(f"{url}?token={token}")


class ExternalStorageLocationApi(ConductorApi):
    """``GET /api/{workflow|tasks}/externalstoragelocation?path&operation&payloadType``."""

    resource = "workflow"

    def get(self, request):
        operation = _choice(request, "operation", payloads.OPERATIONS)
        payload_type = _choice(request, "payloadType", payloads.PAYLOAD_TYPES)
        if payload_type not in RESOURCE_TYPES[self.resource]:
            raise InvalidInput(f"payloadType: {payload_type} is not a payload type of /{self.resource}")
        if operation == "WRITE":
            # a WRITE location lets its holder store a payload: a worker's role at least
            from apps.api.models import ROLE_WORKER

            require_role(getattr(request, "api_principal", None), ROLE_WORKER, "get a WRITE storage location")
            path = payloads.new_payload_path(payload_type)
        else:
            path = qstr(request.query_params, "path") or ""
            if not path:
                raise InvalidInput("path: a READ location needs the path of the stored payload")
        return _location(request, path=path, operation=operation, payload_type=payload_type)


def _location(request, *, path, operation, payload_type):
    from rest_framework.response import Response

    return Response({"uri": _signed_uri(request, path=path, operation=operation, payload_type=payload_type),
                     "path": path})


def _claims(request, path: str, operation: str) -> dict:
    token = request.GET.get("token", "")
    try:
        claims = signing.TimestampSigner(salt=_SALT).unsign_object(
            token, max_age=settings.CONDUCTOR_PAYLOAD_URI_TTL_SECONDS)
    except signing.BadSignature:  # also SignatureExpired
        raise Forbidden("The payload URI is not signed, or its signature expired") from None
    if claims.get("p") != path or claims.get("o") != operation:
        raise Forbidden(f"The payload URI was not signed for {operation} of {path}")
    return claims


class ExternalPayloadApi(ConductorApi):
    """``PUT``/``GET /api/external-payloads/<path>?token``: the signed URIs of the locations."""

    def put(self, request, path):
        claims = _claims(request, path, "WRITE")
        payloads.payload_store(path=path, payload_type=claims["t"], body=request.body)
        return HttpResponse(status=200)

    def get(self, request, path):
        _claims(request, path, "READ")
        return HttpResponse(payloads.payload_raw(path), content_type="application/json")
