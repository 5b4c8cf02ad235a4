"""The server refuses an oversized request body while it arrives (apps/api/bodylimit.py's
middleware under uvicorn): a too-large Content-Length is answered 413 before any body byte is
sent, and a chunked upload is answered 413 once past the limit, without the client finishing it."""
from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.e2e

LIMIT = 16 * 1024 * 1024  # the server's CONDUCTOR_MAX_REQUEST_BODY_BYTES default


def _connect(conductor_url: str) -> socket.socket:
    parts = urlsplit(conductor_url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    return sock


def _read_answer(sock: socket.socket) -> tuple[int, dict]:
    data = b""
    while True:
        try:
            piece = sock.recv(65536)
        except ConnectionResetError:
            break
        if not piece:
            break
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    return status, json.loads(body)


def test_a_huge_content_length_is_refused_before_the_body(conductor_server):
    sock = _connect(conductor_server.url)
    sock.sendall(b"POST /api/metadata/taskdefs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100000000000\r\n\r\n")
    status, body = _read_answer(sock)  # answered although not one body byte was sent
    sock.close()
    assert status == 413 and body["status"] == 413
    conductor_server.assert_alive()


def test_a_chunked_upload_is_refused_once_past_the_limit(conductor_server):
    sock = _connect(conductor_server.url)
    sock.sendall(b"POST /api/metadata/taskdefs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b" " * (1024 * 1024)
    sent = 0
    try:
        while sent <= LIMIT + len(chunk):  # a little past the limit, and never the final chunk
            sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            sent += len(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed the connection: it stopped reading
    status, body = _read_answer(sock)
    sock.close()
    assert status == 413 and body["status"] == 413
    conductor_server.assert_alive()
