"""A loopback MCP server built with the official ``mcp`` package (``MCPServer``, its
Streamable HTTP app: sessions, SSE answers), served by uvicorn in a thread on 127.0.0.1,
for the agent tool tests. Tools: ``get_weather(city)`` -> ``{"city", "tempC": 21}``,
``echo(text)`` -> the text, ``broken()`` -> an error. ``calls`` records each tool call
``(name, arguments)``; ``headers`` the headers of each HTTP request (lower-case names)."""
from __future__ import annotations

import json

from tests.support.asgi_server import AsgiServer


class McpPeer:
    def __init__(self):
        from mcp.server.mcpserver import MCPServer

        self.asgi = AsgiServer()
        self.origin = self.asgi.url
        self.calls: list[tuple[str, dict]] = []
        self.headers: list[dict[str, str]] = []
        server = MCPServer("weather-peer")

        @server.tool(description="Current weather of a city")
        def get_weather(city: str) -> str:
            self.calls.append(("get_weather", {"city": city}))
            return json.dumps({"city": city, "tempC": 21})

        @server.tool(description="Echo the text")
        def echo(text: str) -> str:
            self.calls.append(("echo", {"text": text}))
            return text

        @server.tool(description="Always fails")
        def broken() -> str:
            self.calls.append(("broken", {}))
            raise ValueError("boom")

        app = server.streamable_http_app(host="127.0.0.1")
        seen = self.headers

        async def recorded(scope, receive, send):
            if scope["type"] == "http":
                seen.append({k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]})
            await app(scope, receive, send)

        self.asgi.start(recorded, lifespan="on", name="the MCP peer")

    def close(self) -> None:
        self.asgi.close()
