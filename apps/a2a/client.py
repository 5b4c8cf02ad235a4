"""An A2A 0.3 JSON-RPC client for the AGENT, GET_AGENT_CARD and CANCEL_AGENT tasks
(Conductor's ``A2AService``), with its SSRF guard; and what the client and the server
(``apps.a2a.server``) both read of the protocol: its task states and a message's text.

Every URL (an agent URL, a card URL, the endpoint a card advertises) passes ``check_url``
before it is called: ``http``/``https`` only, and unless
``CONDUCTOR_A2A["ALLOW_PRIVATE_NETWORK"]`` every address its host resolves to must be a
public one (no loopback, private, link-local, multicast, reserved or unspecified address:
an agent card must not make this server call its own network); a link-local IPv4 address
(169.254.0.0/16, cloud metadata) is refused even then, as Conductor's A2AService does.
Redirects are not followed. (A name is resolved for the check and again by the call.)
Errors: ``A2AError`` (``terminal`` when retrying cannot help).
"""
from __future__ import annotations

import ipaddress
import json
import socket
import uuid
from urllib.parse import urlsplit

import httpx
from django.conf import settings

TIMEOUT_SECONDS = 30.0
# link-local IPv4, where clouds serve instance metadata: refused even on a private network
METADATA_NETWORK = ipaddress.ip_network("169.254.0.0/16")
# A2A TaskState values: the task has ended / waits for its caller
TERMINAL_STATES = ("completed", "canceled", "failed", "rejected")
INTERRUPTED_STATES = ("input-required", "auth-required")


def parts_text(parts) -> str | None:
    """The ``text`` of a list of A2A Parts' text parts, joined by newlines; None when there
    are none."""
    texts = [p["text"] for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return "\n".join(texts) if texts else None


class A2AError(Exception):
    """A call to a remote agent failed; ``str()`` is the task's reason."""

    def __init__(self, message: str, *, terminal: bool = False):
        super().__init__(message)
        self.terminal = terminal


def check_url(url: str) -> str:
    """``url`` when this server may call it (see the module doc); raises a terminal A2AError
    naming the refused URL otherwise."""
    parts = urlsplit(str(url or "").strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise A2AError(f"A2A agent URL must be http(s) with a host: {url!r}", terminal=True)
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80),
                                   type=socket.SOCK_STREAM)
    except OSError as exc:
        raise A2AError(f"A2A agent host {parts.hostname} cannot be resolved: {exc}") from exc
    allow_private = settings.CONDUCTOR_A2A.get("ALLOW_PRIVATE_NETWORK")
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if address in METADATA_NETWORK or (address.version == 6 and address.ipv4_mapped in METADATA_NETWORK):
            raise A2AError(f"agentUrl resolves to a cloud metadata address — SSRF blocked: {address}", terminal=True)
        if not allow_private and (not address.is_global or address.is_multicast):
            raise A2AError(f"agentUrl resolves to a private/reserved address — SSRF blocked: {address} "
                           "(set CONDUCTOR_A2A_ALLOW_PRIVATE_NETWORK=on to allow private-network agents)",
                           terminal=True)
    return url


def _headers(headers: dict | None) -> dict:
    return {str(k): str(v) for k, v in (headers or {}).items()} if isinstance(headers, dict) else {}


def _get_json(url: str, headers: dict | None) -> dict:
    check_url(url)
    try:
        response = httpx.get(url, headers={"Accept": "application/json", **_headers(headers)},
                             timeout=TIMEOUT_SECONDS, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise A2AError(f"A2A agent card at {url} could not be fetched: {exc}") from exc
    if response.status_code != 200:
        raise A2AError(f"A2A agent card at {url} answered HTTP {response.status_code}",
                       terminal=response.status_code in (400, 401, 403, 404))
    try:
        body = response.json()
    except ValueError as exc:
        raise A2AError(f"A2A agent card at {url} is not JSON", terminal=True) from exc
    if not isinstance(body, dict):
        raise A2AError(f"A2A agent card at {url} is not a JSON object", terminal=True)
    return body


def agent_card(agent_url: str, headers: dict | None = None) -> dict:
    """The AgentCard of an agent: ``agent_url`` itself when it names a ``.json`` document,
    else ``<agent_url>/.well-known/agent-card.json`` (then the older ``agent.json``)."""
    url = str(agent_url).strip()
    if url.split("?", 1)[0].lower().endswith(".json"):
        return _get_json(url, headers)
    base = url.rstrip("/")
    try:
        return _get_json(f"{base}/.well-known/agent-card.json", headers)
    except A2AError as first:
        try:
            return _get_json(f"{base}/.well-known/agent.json", headers)
        except A2AError:
            raise first from None


def endpoint(agent_url: str, headers: dict | None = None) -> str:
    """The JSON-RPC endpoint of an ``agentUrl``: a card URL (``.json``) is resolved to the
    ``url`` its card advertises; any other URL is the endpoint itself."""
    url = str(agent_url or "").strip()
    if not url:
        raise A2AError("agentUrl must not be blank", terminal=True)
    if url.split("?", 1)[0].lower().endswith(".json"):
        card = agent_card(url, headers)
        advertised = card.get("url")
        if not advertised:  # an A2A 1.0 card: its JSON-RPC interface
            advertised = next((i.get("url") for i in card.get("supportedInterfaces") or []
                               if isinstance(i, dict) and i.get("protocolBinding") == "JSONRPC"), None)
        if not isinstance(advertised, str) or not advertised.strip():
            raise A2AError(f"Agent Card resolved from {url} does not advertise a JSON-RPC 'url'", terminal=True)
        return advertised.strip()
    return url


def call(endpoint_url: str, method: str, params: dict, headers: dict | None = None) -> dict:
    """One JSON-RPC 2.0 call; its ``result``. Raises A2AError (terminal for a JSON-RPC error
    or an HTTP 4xx, retryable for transport errors and 5xx)."""
    check_url(endpoint_url)
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    try:
        response = httpx.post(endpoint_url, json=body, timeout=TIMEOUT_SECONDS, follow_redirects=False,
                              headers={"Accept": "application/json", **_headers(headers)})
    except httpx.HTTPError as exc:
        raise A2AError(f"A2A agent at {endpoint_url} could not be reached: {exc}") from exc
    if response.status_code >= 300:
        raise A2AError(f"A2A agent answered HTTP {response.status_code} to {method}: {response.text[:300]}",
                       terminal=400 <= response.status_code < 500 and response.status_code != 429)
    try:
        answer = response.json()
    except ValueError as exc:
        raise A2AError(f"A2A agent answered {method} with a body that is not JSON") from exc
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        error = answer["error"]
        raise A2AError(f"A2A agent refused {method}: {error.get('code')} {error.get('message')}", terminal=True)
    if not isinstance(answer, dict) or not isinstance(answer.get("result"), dict):
        raise A2AError(f"A2A agent answered {method} without a result object: {json.dumps(answer)[:300]}")
    return answer["result"]
