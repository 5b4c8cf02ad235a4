"""Conductor's ``ErrorResponse`` body for every API error.

``{"status": int, "message": str, "instance": server id, "retryable": bool,
"validationErrors": [...]?}``. ConductorError subclasses carry their HTTP status; DRF's
own exceptions (parse errors, 405) are reshaped to the same body; anything else is a 500
with the same shape (Conductor maps unknown exceptions to 500), logged with its traceback.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

from apps.core.errors import ConductorError

log = logging.getLogger(__name__)


def _as_java_string(value) -> str | None:
    """Conductor's ``ValidationError.invalidValue`` is a String: ``5001`` -> ``"5001"``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def error_body(status: int, message: str, *, retryable: bool = False, validation_errors: list | None = None) -> dict:
    """Conductor's ErrorResponse; each ``validationErrors[].invalidValue`` as a string, and
    left out when it is null (a missing field: Conductor's document types it as a string)."""
    body = {"status": status, "message": message, "instance": settings.CONDUCTOR["INSTANCE_ID"], "retryable": retryable}
    if validation_errors:
        body["validationErrors"] = [
            {**e, "invalidValue": _as_java_string(e["invalidValue"])} if e.get("invalidValue") is not None
            else {k: v for k, v in e.items() if k != "invalidValue"}
            for e in validation_errors]
    return body


def body_for_exception(exc: Exception) -> tuple[int, dict]:
    """HTTP status and Conductor error body for any exception."""
    if isinstance(exc, ConductorError):
        body = error_body(exc.status, exc.message, retryable=exc.retryable, validation_errors=exc.validation_errors)
        if getattr(exc, "error_code", None):  # 401s: the code the SDKs read to renew a token
            body["error"] = exc.error_code
        return exc.status, body
    if isinstance(exc, RequestDataTooBig):
        return 413, error_body(413, f"Request body is larger than the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
    if isinstance(exc, Http404):
        return 404, error_body(404, str(exc) or "Not found")
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return 405, error_body(405, f"Request method '{exc.args[0] if exc.args else ''}' is not supported")
    if isinstance(exc, drf_exceptions.ParseError):
        return 400, error_body(400, f"Invalid JSON body: {exc.detail}")
    if isinstance(exc, drf_exceptions.APIException):
        return exc.status_code, error_body(exc.status_code, str(exc.detail))
    return 500, error_body(500, str(exc) or exc.__class__.__name__)


def conductor_exception_handler(exc: Exception, context: dict) -> Response:
    """DRF ``EXCEPTION_HANDLER``: every error becomes Conductor's ErrorResponse."""
    status, body = logged_body_for_exception(exc)
    if status < 500:
        log.info("API %s: %s", status, body["message"])
    set_rollback()
    return Response(body, status=status)


def logged_body_for_exception(exc: Exception) -> tuple[int, dict]:
    """``body_for_exception``, logging a 5xx with its traceback (every path that renders
    an error outside DRF's handler goes through this)."""
    status, body = body_for_exception(exc)
    if status >= 500:
        log.error("API error", exc_info=exc)
    return status, body


def error_response(exc: Exception) -> JsonResponse:
    """The same body for plain Django views (the poll/update hot paths)."""
    status, body = logged_body_for_exception(exc)
    return JsonResponse(body, status=status)
