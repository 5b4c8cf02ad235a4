"""A Model Context Protocol client over HTTP (LIST_MCP_TOOLS, CALL_MCP_TOOL).

Like Conductor's MCPService it speaks JSON-RPC 2.0 directly: ``POST <mcpServer>`` with
``{"jsonrpc": "2.0", "id": 1, "method": "tools/list" | "tools/call", "params": ...}``,
``Accept: application/json, text/event-stream``; the answer is a JSON body or an SSE
stream whose ``data:`` lines carry the JSON-RPC response. A server that insists on a
session (Streamable HTTP: 4xx or an error answering a call made without
``Mcp-Session-Id``) gets the ``initialize`` handshake and the call once more.

Outbound calls are denied by default: the server's origin must be listed in
``CONDUCTOR_AI_ALLOWED_ORIGINS``. Redirects are not followed (headers such as
``Authorization`` would leak to another origin).

Errors: ``AIError`` with the reason Conductor gives (``Failed to list MCP tools from
<url>: ...`` / ``Failed to call MCP tool '<name>' on <url>: ...``).
"""
from __future__ import annotations

import json
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from apps.ai.providers import AIError

PROTOCOL_VERSION = "2025-06-18"
MAX_RESPONSE_BYTES = 10 * 1024 * 1024


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL (port omitted when it is the default)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(parts.scheme)
    port = f":{parts.port}" if parts.port and parts.port != default else ""
    return f"{parts.scheme}://{host}{port}"


def check_allowed(url: str) -> None:
    """Raise a terminal AIError unless ``url`` is http(s) at an allowed origin."""
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        raise AIError(f"mcpServer must be an http(s) URL, not {url!r}", terminal=True)
    allowed = {origin_of(o) for o in settings.CONDUCTOR_AI.get("ALLOWED_ORIGINS") or []}
    if origin_of(url) not in allowed:
        raise AIError(f"Outbound call to {origin_of(url)} denied: the origin is not in CONDUCTOR_AI_ALLOWED_ORIGINS",
                      terminal=True)


def _parse_sse(text: str) -> list[dict]:
    """JSON objects carried by the ``data:`` lines of an SSE body (one per event)."""
    events, data = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
        elif line == "" and data:
            try:
                parsed = json.loads("\n".join(data))
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                events.append(parsed)
            data = []
    return events


class _SessionNeeded(Exception):
    pass


class MCPClient:
    """One server: ``list_tools()`` and ``call_tool(name, arguments)``. ``headers`` are
    sent with every request (e.g. Authorization)."""

    def __init__(self, url: str, headers: dict | None = None):
        check_allowed(url)
        self.url = url
        self.headers = {str(k): ", ".join(map(str, v)) if isinstance(v, list) else str(v)
                        for k, v in (headers or {}).items() if v is not None}
        self.session_id: str | None = None
        self._next_id = 0
        self.timeout = float(settings.CONDUCTOR_AI.get("TIMEOUT_SECONDS") or 45)

    def _headers(self) -> dict:
        headers = {**self.headers, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
            headers["MCP-Protocol-Version"] = PROTOCOL_VERSION
        return headers

    def _exchange(self, client: httpx.Client, payload: dict, method: str) -> list:
        """POST one JSON-RPC message; the JSON-RPC messages of the answer. An SSE answer
        is read only until the event answering this request (a server may keep the
        stream open for more). At most MAX_RESPONSE_BYTES are read."""
        request_id = payload.get("id")
        with client.stream("POST", self.url, content=json.dumps(payload), headers=self._headers()) as response:
            status = response.status_code
            if status in (400, 404, 409) and not self.session_id and method != "initialize":
                raise _SessionNeeded(f"HTTP {status}: {_read(response)[:500]}")
            if response.is_redirect:
                raise AIError(f"HTTP {status} redirect to {response.headers.get('location')} not followed")
            if not 200 <= status < 300:
                raise AIError(f"HTTP {status} error from MCP server: {_read(response)[:2000]}")
            if method == "initialize" and response.headers.get("mcp-session-id"):
                self.session_id = response.headers["mcp-session-id"]
            if "text/event-stream" in response.headers.get("content-type", ""):
                messages, data, size = [], [], 0
                for line in response.iter_lines():
                    size += len(line) + 1
                    if size > MAX_RESPONSE_BYTES:
                        raise AIError(f"response larger than {MAX_RESPONSE_BYTES} bytes")
                    if line.startswith("data:"):
                        data.append(line[6:] if line[5:6] == " " else line[5:])
                    elif line == "" and data:
                        messages.extend(_parse_sse("data: " + "\ndata: ".join(data) + "\n\n"))
                        data = []
                        if any(isinstance(m, dict) and m.get("id") == request_id for m in messages):
                            break
                if data:
                    messages.extend(_parse_sse("data: " + "\ndata: ".join(data) + "\n\n"))
                return messages
            text = _read(response)
        try:
            body = json.loads(text)
        except ValueError:
            raise AIError(f"MCP server answered a body that is not JSON: {text[:500]}") from None
        return body if isinstance(body, list) else [body]

    def _rpc(self, client: httpx.Client, method: str, params: dict | None) -> dict:
        self._next_id += 1
        request_id = self._next_id
        payload = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            payload["params"] = params
        messages = self._exchange(client, payload, method)
        answer = next((m for m in messages if isinstance(m, dict) and m.get("id") == request_id), None)
        if answer is None:
            answer = next((m for m in messages if isinstance(m, dict) and ("result" in m or "error" in m)), None)
        if answer is None:
            raise AIError("Invalid JSON-RPC response: missing 'result' field")
        if "error" in answer:
            error = answer["error"]
            if not self.session_id and method != "initialize" and isinstance(error, dict) and \
                    any(w in str(error.get("message", "")).lower() for w in ("session", "initializ")):
                raise _SessionNeeded(json.dumps(error))
            raise AIError(f"JSON-RPC error: {json.dumps(error)}")
        if "result" not in answer:
            raise AIError("Invalid JSON-RPC response: missing 'result' field")
        return answer["result"]

    def _initialize(self, client: httpx.Client) -> None:
        self._rpc(client, "initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                         "clientInfo": {"name": "conductor-web", "version": "1"}})
        client.post(self.url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                    headers=self._headers())

    def request(self, method: str, params: dict | None) -> dict:
        """One JSON-RPC call (with the session handshake when the server needs it)."""
        timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            try:
                return self._rpc(client, method, params)
            except _SessionNeeded:
                self._initialize(client)
                return self._rpc(client, method, params)

    def list_tools(self) -> list[dict]:
        """``tools/list``: ``[{name, description, inputSchema}]``."""
        try:
            result = self.request("tools/list", {})
            tools = result.get("tools") if isinstance(result, dict) else None
            if not isinstance(tools, list):
                raise AIError("Invalid response: 'tools' field is missing or not an array")
        except (AIError, httpx.HTTPError, _SessionNeeded) as exc:
            raise AIError(f"Failed to list MCP tools from {self.url}: {_describe(exc)}",
                          terminal=getattr(exc, "terminal", False)) from exc
        return [{"name": t.get("name"), "description": t.get("description"), "inputSchema": t.get("inputSchema")}
                for t in tools if isinstance(t, dict)]

    def call_tool(self, name: str, arguments: dict) -> dict:
        """``tools/call``: ``{content: [{type, text, data, mimeType, parsed}], isError}``
        where ``parsed`` is the JSON a text item holds (else its text)."""
        try:
            result = self.request("tools/call", {"name": name, "arguments": arguments})
        except (AIError, httpx.HTTPError, _SessionNeeded) as exc:
            raise AIError(f"Failed to call MCP tool '{name}' on {self.url}: {_describe(exc)}",
                          terminal=getattr(exc, "terminal", False)) from exc
        content = []
        for item in (result.get("content") or []) if isinstance(result, dict) else []:
            if not isinstance(item, dict):
                continue
            entry = {"type": item.get("type"), "text": item.get("text"), "data": item.get("data"),
                     "mimeType": item.get("mimeType"), "parsed": None}
            resource = item.get("resource")
            if item.get("type") == "resource" and isinstance(resource, dict):
                entry["text"], entry["mimeType"] = resource.get("text"), resource.get("mimeType")
            if item.get("type") == "text" and isinstance(item.get("text"), str):
                entry["parsed"] = _parse_text(item["text"])
            content.append(entry)
        return {"content": content, "isError": bool(result.get("isError")) if isinstance(result, dict) else False}


def _read(response: httpx.Response) -> str:
    """The body of a streamed response, at most MAX_RESPONSE_BYTES of it."""
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise AIError(f"response larger than {MAX_RESPONSE_BYTES} bytes")
    return b"".join(chunks).decode(response.encoding or "utf-8", errors="replace")


def _parse_text(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text


def _describe(exc: Exception) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({exc.__class__.__name__})"
    if isinstance(exc, httpx.HTTPError):
        return f"{exc.__class__.__name__}: {exc}"
    return str(exc)
