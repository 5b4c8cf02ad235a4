"""Oversized request bodies refused as early as the server allows (413 with Conductor's
error body), before anything buffers them.

``limit_request_body`` (ASGI middleware around the whole HTTP application): a request
whose ``Content-Length`` is above the limit is answered 413 without reading a byte of its
body; a body without a length (chunked) is counted as it arrives and answered 413 as soon
as it passes the limit, without reading the rest. The server (uvicorn,
``conductor_web.serve``) hands the body over chunk by chunk and stops reading from the
socket while 64 kB of it wait, so nothing larger is held before the check.

The limit is ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (bytes; ``CONDUCTOR_MAX_REQUEST_BODY_BYTES``),
the one the JSON parser (``apps.api.parsers.check_body_size``) enforces; file content
(``/api/files/content/``) has the file store's (``CONDUCTOR_FILES_MAX_BYTES``).
"""
from __future__ import annotations

import json

FILE_CONTENT_PREFIX = "/api/files/content/"


class BodyTooLarge(Exception):
    """Raised out of a wrapped ``receive`` once a body passes the limit."""


def _limit(path: str | bytes = "") -> int:
    """The body limit of a request to ``path``: file content (``/api/files/content/``) has
    the file store's (``CONDUCTOR_FILES_MAX_BYTES``), its view counts exactly; everything
    else the API's."""
    if isinstance(path, bytes):
        path = path.decode("latin-1")
    if path.startswith(FILE_CONTENT_PREFIX):
        from django.conf import settings

        return int(settings.CONDUCTOR_FILES["MAX_BYTES"])
    from apps.api.parsers import max_body_bytes

    return max_body_bytes()


def _error_body(size: int | None, limit: int) -> bytes:
    from apps.api.exceptions import error_body

    what = f"of {size} bytes " if size is not None else ""
    return json.dumps(error_body(413, f"Request body {what}is larger than the limit of {limit} bytes")).encode()


def _content_length(headers) -> int | None:
    for key, value in headers or ():
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _answer_413(send, size: int | None, limit: int) -> None:
    body = _error_body(size, limit)
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def limit_request_body(app):
    """Wrap an ASGI application: HTTP request bodies above the limit answer 413 early
    (see the module doc); everything else passes through unchanged."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        limit = _limit(scope.get("path", ""))
        length = _content_length(scope.get("headers"))
        if length is not None and length > limit:
            await _answer_413(send, length, limit)
            return
        received = 0
        started = False

        async def counting_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge()
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await _answer_413(send, None, limit)

    return wrapped
