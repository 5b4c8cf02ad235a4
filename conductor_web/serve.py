"""The HTTP server of conductor-web: uvicorn serving ``conductor_web.asgi:application``
(the REST API, the worker protocol, the pages and Channels' WebSockets) in this process.

    python -m conductor_web.serve [--host 127.0.0.1] [--port 8080] [--reuse-port]
                                  [--proxy-headers] [--access-log] [--log-level warning]

uvicorn runs on uvloop with the httptools parser and the ``websockets`` package when they
are installed (they are dependencies of the project); measured on the worker path
(docs/performance.md) it costs half of daphne's CPU per request. Bodies above the
limit are refused by ``apps.api.bodylimit.limit_request_body`` as they arrive: uvicorn
hands the body to the application chunk by chunk and buffers at most 64 kB of it.

Listening: this process binds the socket itself, so that a port in use is reported in
one line ("cannot listen on HOST:PORT: Address already in use", exit status 3) and so
that ``--reuse-port`` (``SO_REUSEPORT``) lets several server processes accept on one
port, the kernel spreading connections between them (docs/production.md).

Limits uvicorn's httptools protocol does not have, as Twisted gave daphne: a request line
and headers above ``MAX_HEAD_BYTES`` are answered 431 (Conductor's error body) and the
connection closed; headers not complete ``HEAD_TIMEOUT_SECONDS`` after their first byte
close the connection. An idle keep-alive connection is kept ``KEEP_ALIVE_SECONDS``, longer
than a proxy's own (nginx: 60 s), so the proxy never reuses one the server is closing.

Stopping (SIGTERM or SIGINT, as systemd, ``scripts/run.sh`` or Ctrl-C send it):
``apps.core.lifecycle.begin_stop`` sets ``stopping``, so requests that wait on the engine
(``POST /api/workflow/execute``'s ``waitForSeconds``, long polls) answer at once with what
they have, and every long poll of the process is woken. uvicorn then stops accepting,
closes idle keep-alive connections, lets the requests in flight finish for up to
``lifecycle.STOP_GRACE_SECONDS`` seconds and cancels what is left; the exit watchdog ends
the process if a request thread still holds it after that. A request
cancelled by the stop is answered 503 with Conductor's error body when nothing of its
answer was sent yet. Exit status 0: a stop that was asked for is not a failure. A second
SIGTERM or SIGINT stops at once (uvicorn's forced exit: requests in flight are dropped).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sys

APPLICATION = "conductor_web.asgi:application"
# Peers whose X-Forwarded-* headers are believed with --proxy-headers (comma-separated
# addresses or "*"): the reverse proxy in front, on this machine by default.
FORWARDED_ALLOW_IPS = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
MAX_HEAD_BYTES = 64 * 1024
HEAD_TIMEOUT_SECONDS = 30
KEEP_ALIVE_SECONDS = 75


class ListenError(OSError):
    """The address cannot be listened on (in use, not this machine's, not allowed)."""


def listen(host: str, port: int, reuse_port: bool = False, backlog: int = 2048) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening, IPv6 when ``host`` has a
    colon. ``SO_REUSEADDR`` always (a restart rebinds at once); ``SO_REUSEPORT`` with
    ``reuse_port``, for several processes on one port. Raises ListenError with the
    system's reason (``strerror``, e.g. "Address already in use")."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise ListenError(exc.errno, exc.strerror or str(exc)) from exc
    return sock


def _server_class():
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, telling the engine first when it is asked to stop; a second
        SIGTERM forces the exit as a second SIGINT does."""

        def handle_exit(self, sig: int, frame) -> None:
            if self.should_exit:
                self.force_exit = True
            else:
                from apps.core import lifecycle

                lifecycle.begin_stop()
                lifecycle.start_exit_watchdog(self.config.timeout_graceful_shutdown or 0)
            super().handle_exit(sig, frame)

    return Server


def _error_response(status: int, reason: str, message: str) -> bytes:
    from apps.api.exceptions import error_body

    body = json.dumps(error_body(status, message)).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\nconnection: close\r\n"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


def http_protocol_class():
    """uvicorn's httptools protocol with a bound on a request's head (see the module doc),
    or None when httptools is not installed (uvicorn's h11 protocol then bounds it itself,
    16 kB)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - httptools is a dependency
        return None

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        """Counts the bytes of each request's line and headers (from the end of the
        previous request) and checks the count after each read, so a read that ends the
        headers and carries body bytes is not counted against them."""

        head_bytes = 0
        in_head = True
        head_timer = None

        def data_received(self, data: bytes) -> None:
            counting = self.in_head
            if counting:
                self.head_bytes += len(data)
                if self.head_timer is None:
                    self.head_timer = self.loop.call_later(HEAD_TIMEOUT_SECONDS, self.head_timed_out)
            super().data_received(data)
            if counting and self.in_head and self.head_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
                self.transport.write(_error_response(
                    431, "Request Header Fields Too Large",
                    f"Request line and headers are larger than the limit of {MAX_HEAD_BYTES} bytes"))
                self.transport.close()

        def on_headers_complete(self) -> None:
            self.in_head = False
            self.head_bytes = 0
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self.in_head = True  # what follows is the next request's head
            super().on_message_complete()

        def head_timed_out(self) -> None:
            self.head_timer = None
            if self.in_head and self.head_bytes and not self.transport.is_closing():
                self.transport.close()

        def connection_lost(self, exc) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None
            super().connection_lost(exc)

    return BoundedHttpToolsProtocol


def main(argv: list[str] | None = None) -> int:
    """Serve until asked to stop; returns the exit status (0 after a stop, 3 when the
    address cannot be listened on)."""
    p = argparse.ArgumentParser(prog="python -m conductor_web.serve", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default=os.environ.get("BIND", "127.0.0.1"), help="address to listen on")
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")))
    p.add_argument("--reuse-port", action="store_true",
                   help="SO_REUSEPORT: several server processes accept on the same port")
    p.add_argument("--proxy-headers", action="store_true",
                   help="believe X-Forwarded-For/-Proto from FORWARDED_ALLOW_IPS (default 127.0.0.1)")
    p.add_argument("--access-log", action="store_true", help="one log line per request (off: workers poll often)")
    p.add_argument("--log-level", default=os.environ.get("CONDUCTOR_SERVER_LOG_LEVEL", "warning"),
                   choices=("critical", "error", "warning", "info", "debug"))
    a = p.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conductor_web.settings")
    try:
        sock = listen(a.host, a.port, a.reuse_port)
    except ListenError as exc:
        print(f"conductor-web: cannot listen on {a.host}:{a.port}: {exc.strerror}", file=sys.stderr, flush=True)
        return 3

    import uvicorn

    from apps.core import lifecycle

    config = uvicorn.Config(
        APPLICATION, lifespan="off", log_config=None, log_level=a.log_level, access_log=a.access_log,
        proxy_headers=a.proxy_headers, forwarded_allow_ips=FORWARDED_ALLOW_IPS if a.proxy_headers else None,
        server_header=False, timeout_graceful_shutdown=max(0.1, lifecycle.STOP_GRACE_SECONDS),
        http=http_protocol_class() or "auto", timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    if a.access_log:  # its lines are INFO, whatever the level of the server's other lines
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    # uvicorn re-raises a stop signal once it has stopped, to end the way that signal
    # would have; with these handlers in place that ends nothing and the status is 0.
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda *_: None)
    _server_class()(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
