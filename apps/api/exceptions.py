"""Conductor's ``ErrorResponse`` body for every API error.

``{"status": int, "message": str, "instance": server id, "retryable": bool,
"validationErrors": [...]?}``. ConductorError subclasses carry their HTTP status; DRF's
own exceptions (parse errors, 405) are reshaped to the same body; anything else is a 500
with the same shape (Conductor maps unknown exceptions to 500).
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

from apps.core.errors import ConductorError

log = logging.getLogger(__name__)


def error_body(status: int, message: str, *, retryable: bool = False, validation_errors: list | None = None) -> dict:
    body = {"status": status, "message": message, "instance": settings.CONDUCTOR["INSTANCE_ID"], "retryable": retryable}
    if validation_errors:
        body["validationErrors"] = validation_errors
    return body


def body_for_exception(exc: Exception) -> tuple[int, dict]:
    """HTTP status and Conductor error body for any exception."""
    if isinstance(exc, ConductorError):
        return exc.status, error_body(exc.status, exc.message, retryable=exc.retryable,
                                      validation_errors=exc.validation_errors)
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
    status, body = body_for_exception(exc)
    if status >= 500:
        log.error("API error", exc_info=exc)
    else:
        log.info("API %s: %s", status, body["message"])
    set_rollback()
    return Response(body, status=status)


def error_response(exc: Exception) -> JsonResponse:
    """The same body for plain Django views (the poll/update hot paths)."""
    status, body = body_for_exception(exc)
    if status >= 500:
        log.error("API error", exc_info=exc)
    return JsonResponse(body, status=status)
