"""The HTTP server's own limits and stop (conductor_web/serve.py), against real server
processes: oversized request heads are refused, a WebSocket handshake on a path without a
route is refused (not a 500), ``--access-log`` writes its lines, and a second SIGTERM
stops at once. Found by a review of the switch from daphne to uvicorn (issue #25)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import REPO_ROOT, STARTUP_TIMEOUT_SECONDS, free_port, server_argv

pytestmark = pytest.mark.e2e
STOP_BOUND_SECONDS = 30  # a bound for the loops, not a timing assertion


def _address(url: str) -> tuple[str, int]:
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    return host, int(port)


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            piece = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not piece:
            break
        data += piece
    return data


def test_an_oversized_request_head_is_refused_with_431(conductor_server):
    sock = socket.create_connection(_address(conductor_server.url), timeout=30)
    try:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (512 * 1024))
        answer = _answer(sock)  # answered and closed although the head never ended
    finally:
        sock.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431"), head[:100]
    assert json.loads(body)["status"] == 431
    conductor_server.assert_alive()
    assert httpx.get(f"{conductor_server.url}/health", timeout=10).status_code == 200


def test_a_large_body_in_the_read_that_ends_the_head_is_not_counted_as_head(conductor_server):
    """The first read often carries the headers and the start of the body: only what comes
    before the end of the headers counts against the head's limit."""
    body = json.dumps({"name": "x", "padding": "p" * (200 * 1024)}).encode()
    sock = socket.create_connection(_address(conductor_server.url), timeout=30)
    try:
        sock.sendall(b"POST /api/metadata/workflow/validate HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nConnection: close\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        answer = _answer(sock)
    finally:
        sock.close()
    assert not answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]


def test_a_websocket_handshake_on_a_path_without_a_route_is_refused(conductor_server):
    host, port = _address(conductor_server.url)
    sock = socket.create_connection((host, port), timeout=30)
    try:
        sock.sendall(f"GET /api/health HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: Upgrade\r\n"
                     "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     f"Origin: http://{host}:{port}\r\n\r\n".encode())
        answer = _answer(sock)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 403"), answer[:200]
    conductor_server.assert_alive()


def _start(conductor_server, name: str, *extra: str, env: dict | None = None) -> tuple[subprocess.Popen, str, Path]:
    """Another server process on the session server's database: (process, base URL, log)."""
    port = free_port()
    log = conductor_server.workdir / f"{name}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(server_argv(port) + list(extra), cwd=REPO_ROOT, env={**conductor_server.env, **(env or {})},
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return proc, base, log
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"{name} did not start:\n{log.read_text()[-2000:]}")
        time.sleep(0.1)


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=STOP_BOUND_SECONDS)


def test_the_access_log_writes_a_line_per_request(conductor_server):
    proc, base, log = _start(conductor_server, "server-access-log", "--access-log")
    try:
        assert httpx.get(f"{base}/health", timeout=10).status_code == 200
        deadline = time.monotonic() + STOP_BOUND_SECONDS
        while '"GET /health HTTP/1.1" 200' not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.1)
    finally:
        _end(proc)


def test_a_second_sigterm_stops_at_once(conductor_server):
    """With a request in flight (a body that never ends) and a long stop grace, one SIGTERM
    waits for the request; a second one ends the process at once, with status 0."""
    proc, base, _log = _start(conductor_server, "server-double-term", env={"CONDUCTOR_STOP_GRACE_SECONDS": "600"})
    sock = None
    try:
        sock = socket.create_connection(_address(base), timeout=30)
        sock.sendall(b"POST /api/metadata/taskdefs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n[")
        time.sleep(0.5)  # the request is in the application, waiting for its body
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert proc.poll() is None, "the first SIGTERM should wait for the request in flight (600 s grace)"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=STOP_BOUND_SECONDS) == 0
    finally:
        if sock is not None:
            sock.close()
        _end(proc)
