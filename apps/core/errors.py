"""The error tree shared by the engine and the API.

Services raise these; ``apps.api.exceptions`` renders them as Conductor's
``ErrorResponse`` body ``{status, message, instance, retryable[, validationErrors]}``.
Source: Conductor's ``ApplicationExceptionMapper`` (NotFoundException -> 404,
ConflictException -> 409, IllegalArgumentException -> 400; IllegalStateException -> 500 in
Conductor, 409 here: a state a client can see and fix is not a server error).
"""
from __future__ import annotations


class ConductorError(Exception):
    """Base of every error that reaches a client; ``status`` is the HTTP status."""

    status = 500
    retryable = False

    def __init__(self, message: str, *, validation_errors: list[dict] | None = None):
        super().__init__(message)
        self.message = message
        self.validation_errors = validation_errors


class NotFound(ConductorError):
    """404: an id or name that does not exist (Conductor's NotFoundException)."""

    status = 404


class Conflict(ConductorError):
    """409: the request clashes with the current state (Conductor's ConflictException)."""

    status = 409


class InvalidInput(ConductorError):
    """400: malformed or invalid input (IllegalArgumentException / bean validation).

    ``validation_errors`` is a list of ``{"path", "message", "invalidValue"?}`` dicts.
    """

    status = 400


class IllegalState(ConductorError):
    """409: an action not allowed in the current state (resume of a workflow that is not
    PAUSED, skip of a task already processed). Conductor answers these with 500 (an
    unmapped IllegalStateException); a client error deserves a 4xx, so we answer 409 with
    the same message."""

    status = 409


class PayloadTooLarge(ConductorError):
    """413: a request body (or one part of it, e.g. a task log line) above its limit."""

    status = 413


class Transient(ConductorError):
    """500 with ``retryable: true`` (Conductor's TransientException)."""

    status = 500
    retryable = True


def validation_failed(errors: list[dict]) -> InvalidInput:
    """Build Conductor's bean-validation 400 with its fixed message and the given errors."""
    return InvalidInput("Validation failed, check below errors for detail.", validation_errors=errors)
