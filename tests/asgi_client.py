"""In-process requests to the ASGI application (the worker fast path and Django behind it)."""
from __future__ import annotations

import json

from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator


def asgi_request(method: str, path: str, body, *, query: str = "", content_type: str = "application/json",
                 chunk_size: int = 7, headers: list[tuple[bytes, bytes]] | None = None) -> tuple[int, bytes]:
    """Send ``body`` (JSON-encoded unless bytes/str) to the ASGI app uvicorn serves
    (``conductor_web.asgi.application``), split into ``http.request`` messages of
    ``chunk_size`` bytes without ``Content-Length`` (as uvicorn delivers a de-chunked body);
    ``headers`` are added. Returns ``(status, response body)``."""
    return async_to_sync(asgi_call)(method, path, body, query=query, content_type=content_type,
                                    chunk_size=chunk_size, headers=headers)


async def asgi_call(method: str, path: str, body, *, query: str = "", content_type: str = "application/json",
                    chunk_size: int = 7, headers: list[tuple[bytes, bytes]] | None = None) -> tuple[int, bytes]:
    """``asgi_request`` awaited on the running event loop (several at once with ``asyncio.gather``)."""
    from conductor_web.asgi import application

    if isinstance(body, str):
        raw = body.encode()
    elif isinstance(body, bytes):
        raw = body
    else:
        raw = json.dumps(body).encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
        "root_path": "", "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080),
        "headers": [(b"host", b"127.0.0.1:8080"), (b"content-type", content_type.encode()),
                    (b"transfer-encoding", b"chunked"), (b"accept", b"application/json"), *(headers or [])],
    }
    comm = ApplicationCommunicator(application, scope)
    pieces = [raw[i:i + chunk_size] for i in range(0, len(raw), chunk_size)] or [b""]
    for i, piece in enumerate(pieces):
        await comm.send_input({"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1})
    start = await comm.receive_output(timeout=30)
    assert start["type"] == "http.response.start"
    out = b""
    while True:
        msg = await comm.receive_output(timeout=30)
        out += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    await comm.wait(timeout=30)  # a bound: the application ends once it has answered
    return start["status"], out
