"""API authentication as the Conductor/Orkes SDKs speak it.

* ``POST /api/token`` with ``{"keyId", "keySecret"}`` (an ``AccessKey``) answers
  ``{"token": JWT}``; the SDKs then send ``X-Authorization: <token>`` on every call and
  renew the token before ``CONDUCTOR["API_TOKEN_TTL_SECONDS"]`` (the Python SDK renews
  every 45 minutes by default, so the TTL is one hour).
* A missing, malformed or forged token answers 401 ``{"error": "INVALID_TOKEN"}``, an
  expired one 401 ``{"error": "EXPIRED_TOKEN"}`` (what the SDKs read to renew and retry),
  beside Conductor's error body; a role too weak for the call answers 403.
* Roles (``models.ROLES``, each including the ones before it): read-only (every GET but
  polls and a secret's value), worker (polls, task updates, creating and uploading
  files), operator (starts and
  lifecycle actions), admin (definitions, event handlers, ``/api/admin``, the value of a
  secret and every change of the secrets and environment stores).

Auth is on unless ``CONDUCTOR_API_AUTH=off`` (``settings.CONDUCTOR["API_AUTH"]``);
``/api/health`` and ``/api/health/ready`` stay open. When auth is off, ``/api/token`` answers 404, which the SDKs
read as "open server" (Conductor OSS) and stop sending credentials.
The checks run in front of every /api path: ``ApiAuthMiddleware`` for Django and the ASGI
fast path (``apps/api/fastpath.py``) call ``authorize`` alike.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

import jwt
from django.conf import settings
from django.utils import timezone

from apps.api.bodylimit import FILE_CONTENT_PREFIX
from apps.core.errors import ConductorError, NotFound

ALGORITHM = "HS256"
ISSUER = "conductor-web"
OPEN_PATHS = frozenset({"/api/health", "/api/health/ready", "/api/token"})
# Paths under these prefixes carry their own credential: the signed URIs of external payload
# storage (apps/api/views/payloads.py) and of file content (apps/files), which the SDKs
# PUT/GET without a token, as presigned URLs.
# The A2A push callback (apps/a2a/views.py) checks the token the AGENT task gave the remote agent.
SIGNED_PREFIXES = ("/api/external-payloads/", FILE_CONTENT_PREFIX, "/api/a2a/callback/")
# file storage (apps/files): what hands out an upload URL or changes a file is a worker's
# write (workers upload what tasks produce); metadata and download URLs are reads
_FILE_UPLOAD_URLS = re.compile(r"^/api/files/[^/]+/[^/]+/(upload-url|multipart/[^/]+/part/[^/]+)$")

_WORKER_WRITES = re.compile(r"^/api/tasks(/update-v2|/[^/]+/log|/[^/]+/[^/]+/[^/]+(/sync)?)?$")
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_SCHEDULE_SWITCH = re.compile(r"^/api/scheduler/schedules/[^/]+/(pause|resume)$")


class Unauthorized(ConductorError):
    """401 with ``error`` = ``INVALID_TOKEN`` or ``EXPIRED_TOKEN`` (read by the SDKs)."""

    status = 401

    def __init__(self, message: str, error_code: str = "INVALID_TOKEN"):
        super().__init__(message)
        self.error_code = error_code


class Forbidden(ConductorError):
    """403: the application's role does not allow this call."""

    status = 403


@dataclass(frozen=True)
class Principal:
    """Who is calling: the access key's id, its application name and role."""

    key_id: str
    name: str
    role: str


def enabled() -> bool:
    """Whether /api requires a token (``settings.CONDUCTOR["API_AUTH"]``)."""
    return bool(settings.CONDUCTOR.get("API_AUTH", True))


# ``GET /api/secrets/{key}``: the value itself (``/api/secrets/v2`` is the metadata list)
_SECRET_VALUE = re.compile(r"^/api/secrets/(?!v2$)[^/]+/?$")
# DELETE /api/agent/{name}: removes a deployed agent's WorkflowDef (apps/agents/views.py)
_AGENT_DEF = re.compile(r"^/api/agent/[^/]+/?$")


def required_role(method: str, path: str) -> str:
    """The weakest role that may call ``method path`` (path with its ``/api`` prefix)."""
    from apps.api.models import ROLE_ADMIN, ROLE_OPERATOR, ROLE_READ_ONLY, ROLE_WORKER

    if path.startswith("/api/tasks/poll"):
        return ROLE_WORKER
    # uploads to a signed payload URI are data-plane writes, as task results (not audited)
    if path.startswith(SIGNED_PREFIXES):
        return ROLE_WORKER
    # the scheduler's GETs that stop all firing or requeue; Conductor's AdminResource
    if path.startswith(("/api/scheduler/admin/", "/api/admin/")):
        return ROLE_ADMIN
    if _SCHEDULE_SWITCH.match(path):  # pause/resume answer GET too (the Orkes dialect)
        return ROLE_OPERATOR
    if path.startswith(("/api/secrets", "/api/environment")):
        # names, metadata and existence are reads (POST /api/secrets, the SDK's list of
        # names, is a POST: no read-only key writes); a secret's value, and every change of
        # either store, are the admin's (docs/secrets.md)
        if method in _READS and not _SECRET_VALUE.match(path):
            return ROLE_READ_ONLY
        return ROLE_OPERATOR if method == "POST" and path == "/api/secrets" else ROLE_ADMIN
    if path == "/api/files" or path.startswith("/api/files/"):
        return ROLE_WORKER if method not in _READS or _FILE_UPLOAD_URLS.match(path) else ROLE_READ_ONLY
    if path.startswith("/api/agent/"):  # the Agents API (apps/agents/views.py)
        if method in _READS:
            return ROLE_READ_ONLY
        if path == "/api/agent/deploy" or (method == "DELETE" and _AGENT_DEF.match(path)):
            return ROLE_ADMIN  # registers or removes definitions, as /api/metadata
        return ROLE_WORKER if path.startswith("/api/agent/events/") else ROLE_OPERATOR
    if method in _READS:
        return ROLE_READ_ONLY
    if _WORKER_WRITES.match(path) and not path.startswith(("/api/tasks/queue/", "/api/tasks/search")):
        return ROLE_WORKER
    if path.startswith(("/api/metadata", "/api/event")):
        return ROLE_ADMIN
    return ROLE_OPERATOR


def require_role(principal: Principal | None, needed: str, what: str) -> None:
    """Raise Forbidden (403) unless ``principal`` (None: auth is off) holds ``needed`` or a
    stronger role; for checks that depend on more than the method and path."""
    if principal is not None and not _allows(principal.role, needed):
        raise Forbidden(f"Application {principal.name} ({principal.role}) may not {what}: it needs the {needed} role")


def _allows(role: str, needed: str) -> bool:
    from apps.api.models import ROLES

    return role in ROLES and ROLES.index(role) >= ROLES.index(needed)


def issue_token(key_id, key_secret) -> str:
    """A signed JWT for an active key whose secret matches; records its last use.
    Errors: Unauthorized (401) for an unknown, revoked or wrong key; NotFound (404) when
    auth is off (the SDKs then run without credentials)."""
    from apps.api.models import AccessKey

    if not enabled():
        raise NotFound("Authentication is turned off on this server")
    if not isinstance(key_id, str) or not isinstance(key_secret, str) or not key_id or not key_secret:
        raise Unauthorized("keyId and keySecret are required")
    key = AccessKey.objects.filter(pk=key_id, active=True).first()
    if key is None or not key.check_secret(key_secret):
        raise Unauthorized("Invalid keyId or keySecret")
    AccessKey.objects.filter(pk=key_id).update(last_used_at=timezone.now())
    now = int(time.time())
    ttl = int(settings.CONDUCTOR.get("API_TOKEN_TTL_SECONDS", 3600))
    claims = {"sub": key.key_id, "name": key.name, "iss": ISSUER, "iat": now, "exp": now + ttl}
    return jwt.encode(claims, settings.SECRET_KEY, algorithm=ALGORITHM)


_cache: dict[str, tuple[float, Principal | None]] = {}
_cache_lock = threading.Lock()


def _principal_of_key(key_id: str) -> Principal | None:
    """The active key's principal (cached ``API_KEY_CACHE_SECONDS``), or None if revoked/gone."""
    from apps.api.models import AccessKey

    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(key_id)
    if hit and now - hit[0] < settings.CONDUCTOR["API_KEY_CACHE_SECONDS"]:
        return hit[1]
    row = AccessKey.objects.filter(pk=key_id, active=True).values("name", "role").first()
    principal = Principal(key_id, row["name"], row["role"]) if row else None
    with _cache_lock:
        _cache[key_id] = (now, principal)
    return principal


def forget_cached_keys() -> None:
    """Drop the key cache (a key revoked in this process takes effect at once)."""
    with _cache_lock:
        _cache.clear()


def principal_for_token(token: str | None) -> Principal:
    """The caller of a token. Errors: Unauthorized INVALID_TOKEN (missing, malformed,
    forged, revoked key) or EXPIRED_TOKEN."""
    if not token:
        raise Unauthorized("Missing X-Authorization header with a token from POST /api/token (the SDKs and the "
                           "conductor CLI get one when CONDUCTOR_AUTH_KEY and CONDUCTOR_AUTH_SECRET are set)")
    try:
        claims = jwt.decode(token, settings.SECRET_KEY, algorithms=[ALGORITHM], issuer=ISSUER,
                            options={"require": ["exp", "sub"]})
    except jwt.ExpiredSignatureError:
        raise Unauthorized("Token expired", "EXPIRED_TOKEN") from None
    except jwt.PyJWTError:
        raise Unauthorized("Invalid token") from None
    principal = _principal_of_key(str(claims["sub"]))
    if principal is None:
        raise Unauthorized("The access key of this token was revoked")
    return principal


def authorize(method: str, path: str, token: str | None) -> Principal | None:
    """Check one /api request: None when auth is off or the path is open, the caller's
    Principal otherwise. Errors: Unauthorized (401), Forbidden (403). May read the
    database (once per key per ``API_KEY_CACHE_SECONDS``)."""
    if not enabled() or path in OPEN_PATHS or not path.startswith("/api/") or path.startswith(SIGNED_PREFIXES):
        return None
    principal = principal_for_token(token)
    needed = required_role(method, path)
    if not _allows(principal.role, needed):
        raise Forbidden(f"Application {principal.name} ({principal.role}) may not {method} {path}: "
                        f"it needs the {needed} role")
    return principal
