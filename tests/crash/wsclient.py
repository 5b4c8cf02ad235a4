"""A minimal WebSocket client (RFC 6455) for the e2e tests: what a browser page does
with the live channel (handshake with the session cookie, then text frames from the
server), on a plain socket so the tests need no client library."""
from __future__ import annotations

import base64
import json
import os
import socket
import struct
import time


class WebSocket:
    """``WebSocket(host, port, path, cookie)`` connects (101 or ConnectionError);
    ``receive(timeout)`` returns the next text message as JSON (TimeoutError when none
    arrives in ``timeout`` seconds); ``close()`` ends the connection."""

    def __init__(self, host: str, port: int, path: str, cookie: str = "", timeout: float = 10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://{host}:{port}\r\n"
                   + (f"Cookie: {cookie}\r\n" if cookie else "") + "\r\n")
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError(f"handshake refused: {head[:200]!r}")
            head += chunk
        status, _, self.buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"handshake refused: {status[:200]!r}")

    def _read(self, n: int, deadline: float) -> bytes:
        while len(self.buffer) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no message")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout as exc:
                raise TimeoutError("no message") from exc
            if not chunk:
                raise ConnectionError("closed by the server")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def receive(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            b0, b1 = self._read(2, deadline)
            length = b1 & 0x7F
            if length == 126:
                length = struct.unpack(">H", self._read(2, deadline))[0]
            elif length == 127:
                length = struct.unpack(">Q", self._read(8, deadline))[0]
            payload = self._read(length, deadline)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError(f"closed by the server: {payload[:2].hex()}")
            if opcode == 0x1:
                return json.loads(payload)

    def close(self) -> None:
        try:
            self.sock.sendall(b"\x88\x80" + os.urandom(4))  # masked close frame, no payload
        except OSError:
            pass
        self.sock.close()
