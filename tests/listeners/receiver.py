"""A loopback HTTP receiver for status-listener tests: records every POST (path,
headers, JSON body, the status it answered) and answers 503 while ``failing`` is set."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self):
        self.received: list[dict] = []
        self.failing = threading.Event()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                status = 503 if receiver.failing.is_set() else 200
                with receiver._lock:
                    receiver.received.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                              "status": status})
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def delivered(self) -> list[dict]:
        """The POSTs answered 200, in arrival order."""
        with self._lock:
            return [r for r in self.received if r["status"] == 200]

    def attempts(self) -> int:
        with self._lock:
            return len(self.received)
