"""Signed content URLs, version 1 of Conductor's ``FileStorageUrlSigner``.

A URL ``/api/files/content/{workflowId}/{fileId}?op=upload|download&exp=<epoch s>&kid=<key
id>&sig=<base64url HMAC-SHA256>`` (multipart parts add ``uploadId`` and ``partNumber``) is
its own credential: the SDKs send it without a token, as they send a presigned S3 URL.
The HMAC covers ``v1``, the operation, workflowId, fileId, expiry, uploadId and partNumber
joined by newlines, never the origin: a proxy that rewrites the Host keeps URLs valid.
Keys: ``CONDUCTOR_FILES["SIGNING_KEYS"]`` (``id:secret,...``; the first signs, all verify),
else one key derived from SECRET_KEY with id ``s1``.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import time

from django.conf import settings

from apps.api.auth import Forbidden

VERSION = "v1"
OPERATIONS = {"upload": "PUT", "download": "GET"}


class MethodNotAllowed(Forbidden):
    """405: a valid URL used with the other operation's method (Conductor's filter)."""

    status = 405


def _keys() -> list[tuple[str, bytes]]:
    text = settings.CONDUCTOR_FILES.get("SIGNING_KEYS", "")
    keys = []
    for entry in filter(None, (e.strip() for e in text.split(","))):
        kid, sep, secret = entry.partition(":")
        if not sep or not kid or not secret:
            raise ValueError("CONDUCTOR_FILES_SIGNING_KEYS: each entry is id:secret")
        keys.append((kid, secret.encode()))
    if not keys:
        derived = hashlib.sha256(b"conductor-web.files.v1:" + settings.SECRET_KEY.encode()).digest()
        keys.append(("s1", derived))
    return keys


def _canonical(op: str, workflow_id: str, file_id: str, exp: int, upload_id: str | None,
               part_number: int | None) -> bytes:
    return "\n".join((VERSION, op, workflow_id, file_id, str(exp), upload_id or "",
                      "" if part_number is None else str(part_number))).encode()


def _mac(secret: bytes, message: bytes) -> str:
    return base64.urlsafe_b64encode(hmac.new(secret, message, hashlib.sha256).digest()).rstrip(b"=").decode()


def sign(op: str, workflow_id: str, file_id: str, ttl_seconds: int, *, upload_id: str | None = None,
         part_number: int | None = None, now: float | None = None) -> tuple[dict, int]:
    """The query parameters of a signed URL for ``op`` (``upload``/``download``) and its
    expiry in epoch milliseconds: ``({"op", "exp", "kid", "sig"[, "uploadId", "partNumber"]}, ms)``."""
    exp = int(now if now is not None else time.time()) + int(ttl_seconds)
    kid, secret = _keys()[0]
    query = {"op": op, "exp": str(exp), "kid": kid,
             "sig": _mac(secret, _canonical(op, workflow_id, file_id, exp, upload_id, part_number))}
    if upload_id is not None:
        query = {"uploadId": upload_id, "partNumber": str(part_number), **query}
    return query, exp * 1000


def verify(method: str, workflow_id: str, file_id: str, query, now: float | None = None) -> tuple[str, str | None, int | None]:
    """Check a content request's signature; returns ``(op, uploadId, partNumber)``.
    Errors: Forbidden (403) for a URL not signed, expired, with an unknown key or a wrong
    signature; MethodNotAllowed (405) for a valid URL of the other operation."""
    op, exp, kid, sig = (query.get(k) for k in ("op", "exp", "kid", "sig"))
    if not (op and exp and kid and sig) or op not in OPERATIONS:
        raise Forbidden("The file URL is not signed: it needs op, exp, kid and sig (ask for a fresh "
                        "upload-url or download-url)")
    try:
        expires = int(exp)
    except ValueError:
        raise Forbidden("The file URL is not signed: exp is not a number") from None
    if expires <= (now if now is not None else time.time()):
        raise Forbidden("The file URL expired: ask for a fresh upload-url or download-url")
    upload_id = query.get("uploadId")
    part_text = query.get("partNumber")
    try:
        part_number = int(part_text) if part_text is not None else None
    except ValueError:
        raise Forbidden("The file URL was not signed for this request") from None
    secret = dict(_keys()).get(kid)
    expected = _mac(secret, _canonical(op, workflow_id, file_id, expires, upload_id, part_number)) if secret else ""
    if not secret or not hmac.compare_digest(expected, sig):
        raise Forbidden("The file URL was not signed for this request")
    if OPERATIONS[op] != method:
        raise MethodNotAllowed(f"The file URL was signed for {op} ({OPERATIONS[op]}), not {method}")
    return op, upload_id, part_number
