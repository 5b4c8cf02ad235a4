"""A loopback HTTP receiver for status-listener tests (a ``HttpStub``): records every POST
(path, headers with lower-case names, JSON body, the status it answered) and answers 503
while ``failing`` is set."""
from __future__ import annotations

import threading

from tests.support.http_stub import HttpStub, Reply, StubRequest


class Receiver:
    def __init__(self):
        self.received: list[dict] = []
        self.failing = threading.Event()
        self._lock = threading.Lock()
        self._stub: HttpStub | None = None
        self.url = ""

    def _answer(self, request: StubRequest) -> Reply:
        status = 503 if self.failing.is_set() else 200
        with self._lock:
            self.received.append({"path": request.path, "headers": request.headers, "body": request.json(),
                                  "status": status})
        return Reply(status)

    def __enter__(self) -> Receiver:
        self._stub = HttpStub(self._answer)
        self.url = self._stub.url
        return self

    def __exit__(self, *exc) -> None:
        self._stub.close()

    def delivered(self) -> list[dict]:
        """The POSTs answered 200, in arrival order."""
        with self._lock:
            return [r for r in self.received if r["status"] == 200]

    def attempts(self) -> int:
        with self._lock:
            return len(self.received)
