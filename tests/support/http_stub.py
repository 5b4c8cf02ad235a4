"""The one loopback HTTP server of the test suite: a stand-in for whatever the server under
test calls out to (HTTP tasks, status listeners, LLM and MCP servers, remote ``$ref``s).

    stub = HttpStub(handler)          # listening at once, on 127.0.0.1, a free port
    stub.url                          # "http://127.0.0.1:<port>"
    stub.requests                     # every request so far (StubRequest), in arrival order
    stub.close()                      # or: with HttpStub(handler) as stub: ...

``handler(request: StubRequest) -> Reply`` is called on the server's request thread (one
thread a connection, so a slow answer holds up no other); it may sleep, count, or raise
(an exception answers 500). Without a handler every request gets ``200`` and ``{}``.
Every method (GET, POST, PUT, PATCH, DELETE, HEAD) goes to the handler. The request is
recorded before the handler runs, so a test sees it even while its answer is held.

``Reply(status, body, headers)``: a dict or list ``body`` is sent as JSON (with its
Content-Type unless ``headers`` names one), bytes as they are, None as an empty body.
``Reply(..., hold_open=True)`` writes the head and body, then keeps the connection open
until ``close()`` (a server-sent-events stream that never ends; the handler thread waits
at most ``HOLD_OPEN_SECONDS``).

The stub runs in the test's process, on daemon threads; a test whose servers run in
other processes (tests/crash) hands those processes ``stub.url``.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOLD_OPEN_SECONDS = 30


@dataclass(frozen=True)
class StubRequest:
    """One request as the stub received it; ``headers`` has lower-case names and
    ``path`` keeps its query string."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON; None when empty or not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


@dataclass
class Reply:
    """What the stub answers (see the module doc)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hold_open: bool = False

    def encoded(self) -> tuple[dict[str, str], bytes]:
        if self.body is None:
            return dict(self.headers), b""
        if isinstance(self.body, bytes):
            return dict(self.headers), self.body
        headers = {"Content-Type": "application/json", **self.headers}
        return headers, json.dumps(self.body).encode()


Handler = Callable[[StubRequest], Reply]


class HttpStub:
    def __init__(self, handler: Handler | None = None, *, http11: bool = False):
        """Start serving at once. ``http11``: keep-alive connections (HTTP/1.1), as some
        clients (the openai and ollama libraries) expect; HTTP/1.0 otherwise."""
        self.handler: Handler = handler or (lambda request: Reply(200, {}))
        self.released = threading.Event()
        self._requests: list[StubRequest] = []
        self._lock = threading.Lock()
        stub = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if http11 else "HTTP/1.0"

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                request = StubRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                                      self.rfile.read(length) if length else b"")
                with stub._lock:
                    stub._requests.append(request)
                try:
                    reply = stub.handler(request)
                except Exception as exc:  # noqa: BLE001 - the test sees a 500, not a hang
                    reply = Reply(500, {"error": f"stub handler failed: {exc!r}"})
                headers, data = reply.encoded()
                self.send_response(reply.status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if reply.hold_open:
                    self.send_header("Connection", "close")
                else:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if data and self.command != "HEAD":
                    self.wfile.write(data)
                if reply.hold_open:
                    self.wfile.flush()
                    stub.released.wait(HOLD_OPEN_SECONDS)
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _answer  # noqa: N815

            def log_message(self, *args):  # keep test output quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, name=f"http-stub-{self.port}", daemon=True)
        self._thread.start()

    @property
    def requests(self) -> list[StubRequest]:
        """A copy of the requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def close(self) -> None:
        """Stop serving (held-open answers end); idempotent."""
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> HttpStub:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
