"""An ASGI app (a Starlette app of an official SDK: A2A, MCP) served by uvicorn in a
daemon thread on 127.0.0.1 at a free port, for loopback peers of the tests.

    server = AsgiServer()             # picks the port: build the app knowing server.url
    server.start(app, lifespan="on")  # returns once uvicorn listens (at most 20 s)
    server.close()
"""
from __future__ import annotations

import socket
import threading
import time


class AsgiServer:
    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = None
        self.thread = None

    def start(self, app, *, lifespan: str = "off", name: str = "the peer") -> None:
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan=lifespan))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.server.started, f"{name} did not start"

    def close(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
            self.thread.join(timeout=10)
