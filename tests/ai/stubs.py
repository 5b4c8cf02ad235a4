"""Loopback stand-ins for the outside world of the AI tasks, speaking the real wire
formats so the real clients (``openai``, ``ollama``, our MCP client) talk to them:

* ``LLMStub``: an OpenAI-compatible server (``POST /v1/chat/completions``,
  ``POST /v1/embeddings``) and an Ollama server (``POST /api/chat``, ``POST /api/embed``)
  on one port. Chat answers come from ``chat_handler(request_json) -> reply`` where a
  reply is ``{"text": ..., "tool_calls": [{"name", "arguments"}], "finish": ...}`` or
  ``{"status": 500, "body": {...}}`` (an HTTP error) or ``{"sleep": seconds}`` first.
  Embeddings are a deterministic bag-of-words vector (``embed``), so similar texts are
  near.
* ``MCPStub``: an MCP server (JSON-RPC over HTTP at ``/mcp``): ``tools/list`` and
  ``tools/call`` over ``tools`` (name -> (description, schema, handler(args) -> result
  dict)); ``sse=True`` answers as ``text/event-stream``; ``require_session=True``
  refuses calls without the ``initialize`` handshake (Streamable HTTP sessions);
  ``keep_open=True`` leaves each SSE stream open after the answer (until ``close()``).

Every request is recorded (``requests``: ``(path, headers, json)``). All listen on
127.0.0.1 and are stopped by ``close()``.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import time
import uuid

from examples.agent_demo import text_result  # noqa: F401 - the tests' MCP results, as the demo's
from tests.support.http_stub import HttpStub, Reply, StubRequest

DIMENSIONS = 16


def embed(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """A deterministic unit vector: each word adds 1 at a hashed position."""
    vec = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dimensions] += 1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class _Server:
    """A loopback ``HttpStub`` (tests/support/http_stub.py, HTTP/1.1 as the vendors'
    clients expect) answering through ``handle(path, headers, json body)`` ->
    ``(status, headers, payload)``; a payload ``("open", bytes)`` is an SSE stream left
    open until ``close()``."""

    def __init__(self):
        self.stub = HttpStub(self._reply, http11=True)
        self.port = self.stub.port
        self.origin = self.stub.url

    @property
    def requests(self) -> list[tuple[str, dict, object]]:
        """``(path, headers with lower-case names, JSON body or None)`` of each request."""
        return [(r.path, r.headers, r.json()) for r in self.stub.requests]

    def _reply(self, request: StubRequest) -> Reply:
        status, headers, payload = self.handle(request.path, request.headers, request.json())
        if isinstance(payload, tuple):
            return Reply(status, payload[1], headers, hold_open=True)
        return Reply(status, payload, headers)

    def handle(self, path, headers, body):
        raise NotImplementedError

    def close(self) -> None:
        self.stub.close()


JSON = {"Content-Type": "application/json"}


class LLMStub(_Server):
    def __init__(self, chat_handler=None):
        self.chat_handler = chat_handler or (lambda req: {"text": "ok"})
        super().__init__()

    def chats(self, path_prefix: str = "") -> list[dict]:
        """Bodies of the chat requests received (OpenAI and Ollama)."""
        return [b for p, _h, b in self.requests if p.endswith(("/chat/completions", "/api/chat"))
                and p.startswith(path_prefix)]

    def handle(self, path, headers, body):
        body = body or {}
        if path.endswith("/embeddings"):
            text = body.get("input")
            texts = text if isinstance(text, list) else [text]
            dims = int(body.get("dimensions") or DIMENSIONS)
            return 200, JSON, {"object": "list", "model": body.get("model"),
                               "data": [{"object": "embedding", "index": i, "embedding": embed(t, dims)}
                                        for i, t in enumerate(texts)],
                               "usage": {"prompt_tokens": 3, "total_tokens": 3}}
        if path == "/api/embed":
            text = body.get("input")
            texts = text if isinstance(text, list) else [text]
            dims = int(body.get("dimensions") or DIMENSIONS)
            return 200, JSON, {"model": body.get("model"), "embeddings": [embed(t, dims) for t in texts]}
        if path.endswith("/chat/completions") or path == "/api/chat":
            reply = self.chat_handler(body) or {}
            if reply.get("sleep"):
                time.sleep(reply["sleep"])
            if reply.get("status"):
                return reply["status"], JSON, reply.get("body") or {"error": {"message": "stub error"}}
            text, calls = reply.get("text"), reply.get("tool_calls") or []
            prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])
            completion_tokens = len(str(text or "").split()) + len(calls)
            if path == "/api/chat":
                message = {"role": "assistant", "content": text or ""}
                if calls:
                    message["tool_calls"] = [{"function": {"name": c["name"], "arguments": c.get("arguments") or {}}}
                                             for c in calls]
                return 200, JSON, {"model": body.get("model"), "created_at": "2026-01-01T00:00:00Z",
                                   "message": message, "done": True, "done_reason": reply.get("finish") or "stop",
                                   "prompt_eval_count": prompt_tokens, "eval_count": completion_tokens}
            message = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = [{"id": c.get("id") or f"call_{uuid.uuid4().hex[:8]}", "type": "function",
                                          "function": {"name": c["name"],
                                                       "arguments": json.dumps(c.get("arguments") or {})}}
                                         for c in calls]
            finish = reply.get("finish") or ("tool_calls" if calls else "stop")
            return 200, JSON, {"id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
                               "model": body.get("model"),
                               "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                               "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                         "total_tokens": prompt_tokens + completion_tokens}}
        return 404, JSON, {"error": {"message": f"no route {path}"}}


class MCPStub(_Server):
    def __init__(self, tools: dict, *, sse: bool = False, require_session: bool = False, keep_open: bool = False):
        self.tools = tools
        self.sse = sse
        self.keep_open = keep_open
        self.require_session = require_session
        self.sessions: set[str] = set()
        self.calls: list[tuple[str, dict]] = []
        super().__init__()

    def _answer(self, request_id, result=None, error=None):
        message = {"jsonrpc": "2.0", "id": request_id}
        message.update({"error": error} if error is not None else {"result": result})
        if self.sse:
            note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
            payload = f"event: message\ndata: {json.dumps(note)}\n\nevent: message\ndata: {json.dumps(message)}\n\n"
            if self.keep_open:
                return 200, {"Content-Type": "text/event-stream"}, ("open", payload.encode())
            return 200, {"Content-Type": "text/event-stream"}, payload.encode()
        return 200, JSON, message

    def handle(self, path, headers, body):
        if path != "/mcp" or not isinstance(body, dict):
            return 404, JSON, {"error": "not found"}
        method, request_id = body.get("method"), body.get("id")
        if method == "initialize":
            session = uuid.uuid4().hex
            self.sessions.add(session)
            status, hdrs, payload = self._answer(request_id, {
                "protocolVersion": (body.get("params") or {}).get("protocolVersion"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "stub", "version": "1"}})
            return status, {**hdrs, "Mcp-Session-Id": session}, payload
        if method == "notifications/initialized":
            return 202, JSON, b""
        if self.require_session and headers.get("mcp-session-id") not in self.sessions:
            return 400, JSON, {"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}}
        if method == "tools/list":
            return self._answer(request_id, {"tools": [
                {"name": n, "description": d, "inputSchema": s} for n, (d, s, _h) in self.tools.items()]})
        if method == "tools/call":
            params = body.get("params") or {}
            name, args = params.get("name"), params.get("arguments") or {}
            self.calls.append((name, args))
            if name not in self.tools:
                return self._answer(request_id, error={"code": -32602, "message": f"Unknown tool: {name}"})
            return self._answer(request_id, self.tools[name][2](args))
        return self._answer(request_id, error={"code": -32601, "message": f"Method not found: {method}"})
