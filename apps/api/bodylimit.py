"""Oversized request bodies refused as early as the server allows (413 with Conductor's
error body), before anything buffers them.

* ``limit_request_body`` (ASGI middleware around the whole HTTP application): a request
  whose ``Content-Length`` is above the limit is answered 413 without reading a byte of
  its body; a body without a length (chunked) is counted as it arrives and answered 413
  as soon as it passes the limit, without reading the rest.
* ``install_daphne_guard``: daphne (through Twisted) reads a whole request body into a
  buffer before it calls the ASGI application, so the middleware alone would still let
  a client upload gigabytes. The guard gives daphne's request class the same two checks
  at the HTTP layer: on the headers (``Content-Length``) and on each received chunk;
  the connection is answered 413 and closed at once. For a file-content PUT it also
  hands the view the body file Twisted spooled (``spooled_body``).

The limit is ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (bytes; ``CONDUCTOR_MAX_REQUEST_BODY_BYTES``),
the one the JSON parser (``apps.api.parsers.check_body_size``) enforces.
"""
from __future__ import annotations

import json

FILE_CONTENT_PREFIX = "/api/files/content/"
# daphne: a PUT of file content names the body file Twisted spooled (``spooled_body``)
BODY_FILE_HEADER = b"x-conductor-body-file"
_handed_over: dict[str, object] = {}


def spooled_body(request):
    """The body of a file-content PUT under daphne as the file Twisted spooled it to (on
    disk above 100 kB), read in place: daphne would otherwise copy the whole body into
    its in-memory queue of ASGI messages. None elsewhere (another server, the test client:
    read the request itself). The file stays open until the request finishes."""
    token = request.headers.get(BODY_FILE_HEADER.decode())
    return _handed_over.get(token) if token else None


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


def install_daphne_guard() -> None:
    """Make daphne's HTTP request class refuse an oversized body while it arrives (see
    the module doc). Idempotent; a no-op when daphne is not installed."""
    try:
        from daphne import http_protocol
    except ImportError:  # pragma: no cover - daphne is a dependency
        return
    if getattr(http_protocol.WebRequest, "conductor_body_guard", False):
        return
    base = http_protocol.WebRequest

    class GuardedWebRequest(base):
        """daphne's request, answering 413 and closing once the body passes the limit."""

        conductor_body_guard = True

        def gotLength(self, length):
            # the request line is parsed by now (Twisted keeps it on the channel)
            self._body_limit = _limit(getattr(self.channel, "_path", b"") or b"")
            self._body_received = 0
            self._body_refused = False
            if length is not None and length > self._body_limit:
                self._refuse(length)
                return
            super().gotLength(length)

        def handleContentChunk(self, data):
            if getattr(self, "_body_refused", False):
                return
            self._body_received = getattr(self, "_body_received", 0) + len(data)
            if self._body_received > (getattr(self, "_body_limit", None) or _limit()):
                self._refuse(None)
                return
            super().handleContentChunk(data)

        def _refuse(self, size):
            import io

            self._body_refused = True
            if getattr(self, "content", None) is None:
                self.content = io.BytesIO()  # Twisted closes it when the connection goes
            body = _error_body(size, self._body_limit)
            head = (b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n")
            transport = self.channel.transport
            transport.write(head + body)
            transport.loseConnection()

        def requestReceived(self, command, path, version):
            if getattr(self, "_body_refused", False):
                return
            super().requestReceived(command, path, version)

        def process(self):
            # File content: hand the body file Twisted spooled over, instead of daphne
            # queueing all of it in memory as ASGI messages (see ``spooled_body``).
            self.requestHeaders.removeHeader(BODY_FILE_HEADER)  # never a client's
            if self.method == b"PUT" and self.path.startswith(FILE_CONTENT_PREFIX.encode()):
                import io
                import secrets

                token = secrets.token_urlsafe(24)
                self.content.seek(0, 0)
                _handed_over[token] = self.content
                self._handed_token = token
                self.content = io.BytesIO()
                self.requestHeaders.setRawHeaders(BODY_FILE_HEADER, [token.encode()])
            return super().process()

        def _release(self):
            body = _handed_over.pop(getattr(self, "_handed_token", None), None)
            if body is not None:
                body.close()

        def finish(self):
            self._release()
            super().finish()

        def connectionLost(self, reason):
            self._release()
            super().connectionLost(reason)

    http_protocol.WebRequest = GuardedWebRequest
