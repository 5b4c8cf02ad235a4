"""Request parsing: one strict JSON reader for every API body, tolerant of what Conductor
clients send.

The SDK sends ``Content-Type: application/json`` on every request, with ``{}`` or an
empty body on void calls and a raw (not JSON-quoted) string on ``POST /tasks/{id}/log``.
``LenientJSONParser`` returns None for an empty body and the raw text when the body is
not JSON, leaving each view to decide what it accepts.

``parse_json`` is the single gate every JSON body passes (DRF views and the ASGI fast
path alike). It refuses, with Conductor's error body, what JSON parsers commonly accept
but nothing downstream can store or walk:

* ``NaN``, ``Infinity``, ``-Infinity`` (not JSON; Jackson refuses them too) -> 400, and
  numbers beyond a double (``1e999``, which Python reads as infinity) -> 400;
* nesting deeper than ``CONDUCTOR["MAX_JSON_DEPTH"]`` (default 64) -> 400;
* lone UTF-16 surrogates (``"\\ud800"``: not encodable as UTF-8, so not storable) and
  bytes that are not UTF-8 -> 400;
* the NUL character (``"\\u0000"``) in a key or string: PostgreSQL's text and jsonb cannot
  hold it, so one database would store it and the other fail -> 400 on both;
* a body above ``DATA_UPLOAD_MAX_MEMORY_SIZE`` -> 413 (``PayloadTooLarge``).
"""
from __future__ import annotations

import json
import math
import re
from urllib.parse import unquote_to_bytes

from django.conf import settings
from rest_framework.parsers import BaseParser

from apps.core.errors import InvalidInput, PayloadTooLarge

_SURROGATE = re.compile("[\ud800-\udfff]")
_NUL = "\x00"
DEFAULT_MAX_JSON_DEPTH = 64


class RawText(str):
    """A request body that was not valid JSON (kept as text)."""


class NotJson(InvalidInput):
    """400: the body is not JSON at all (callers that accept raw text catch this one)."""


def max_body_bytes() -> int:
    """The largest request body accepted (bytes): Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``."""
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def check_body_size(size: int) -> None:
    """PayloadTooLarge (413) when ``size`` (bytes) is above the request body limit."""
    limit = max_body_bytes()
    if size > limit:
        raise PayloadTooLarge(f"Request body of {size} bytes is larger than the limit of {limit} bytes")


def _reject_constant(name: str):
    raise InvalidInput(f"Invalid JSON body: {name} is not a JSON number")


def _check_tree(data, max_depth: int, what: str = "JSON body") -> None:
    """Walk parsed JSON iteratively: depth, numbers that are not finite, NUL characters and
    lone surrogates in keys and strings."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):  # 1e999 parses to infinity: no JSON number, no column holds it
                raise InvalidInput(f"Invalid {what}: a number is out of range (not a finite double)")
            continue
        if isinstance(value, str):
            if _SURROGATE.search(value):
                raise InvalidInput(f"Invalid {what}: a string holds a lone UTF-16 surrogate (not valid Unicode)")
            if _NUL in value:
                raise InvalidInput(f"Invalid {what}: a string holds a NUL character (\\u0000), which cannot be stored")
            continue
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, list):
            items = ((None, v) for v in value)
        else:
            continue
        if depth > max_depth:
            raise InvalidInput(f"Invalid {what}: nested deeper than {max_depth} levels")
        for key, item in items:
            if key is not None and _SURROGATE.search(key):
                raise InvalidInput(f"Invalid {what}: a key holds a lone UTF-16 surrogate (not valid Unicode)")
            if key is not None and _NUL in key:
                raise InvalidInput(f"Invalid {what}: a key holds a NUL character (\\u0000), which cannot be stored")
            if isinstance(item, (dict, list, str, float)):
                stack.append((item, depth + 1))


def parse_json(raw: bytes | str):
    """Parse one request body strictly; None for an empty body.

    Errors: PayloadTooLarge (413) above the body limit; NotJson (400) for text that is not
    JSON; InvalidInput (400) for non-JSON numbers, nesting deeper than
    ``CONDUCTOR["MAX_JSON_DEPTH"]``, lone surrogates, NUL characters and bytes that are
    not UTF-8.
    """
    check_body_size(len(raw))
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("Invalid JSON body: not UTF-8") from None
    if not raw.strip():
        return None
    try:
        data = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError:
        raise InvalidInput(f"Invalid JSON body: nested deeper than {_max_depth()} levels") from None
    except ValueError as exc:
        raise NotJson(f"Invalid JSON body: {exc}") from None
    check_json(data)
    return data


def _max_depth() -> int:
    return int(settings.CONDUCTOR.get("MAX_JSON_DEPTH", DEFAULT_MAX_JSON_DEPTH))


def check_json(data, what: str = "JSON body"):
    """``data`` (already parsed JSON: dict, list, str, number, bool or None) unchanged, or
    InvalidInput (400) naming ``what`` when it holds what ``parse_json`` refuses: nesting
    deeper than ``CONDUCTOR["MAX_JSON_DEPTH"]``, a lone UTF-16 surrogate or a NUL character
    in a key or string. For JSON that reached the server another way than as a request body
    (a UI form field, the definitions editor's text), so it meets the same rule."""
    _check_tree(data, _max_depth(), what)
    return data


def check_text(value: str, what: str) -> str:
    """``value`` unchanged, or InvalidInput (400) naming ``what`` when it holds a NUL
    character, which PostgreSQL cannot store or compare, or a lone UTF-16 surrogate, which
    is not Unicode text (paths, query parameters, form fields, raw text bodies)."""
    if _NUL in value:
        raise InvalidInput(f"{what} holds a NUL character (\\u0000), which is not accepted")
    if _SURROGATE.search(value):
        raise InvalidInput(f"{what} holds a lone UTF-16 surrogate (not valid Unicode), which is not accepted")
    return value


def check_urlencoded(raw: str | bytes, kind: str) -> None:
    """InvalidInput (400) naming the first field of ``raw``, a query string or a form body
    (``application/x-www-form-urlencoded``), whose name or value does not decode as UTF-8
    once its percent-escapes are undone (``%FF``, ``%ED%A0%80``: a surrogate in UTF-8):
    Django would read them as U+FFFD and go on with text the client never sent. ``kind``
    is ``Query parameter`` or ``Form field``."""
    data = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else raw
    for pair in data.split(b"&"):
        name, _, value = pair.partition(b"=")
        name, value = (unquote_to_bytes(part.replace(b"+", b" ")) for part in (name, value))
        for part in (name, value):
            try:
                part.decode("utf-8")
            except UnicodeDecodeError:
                shown = name.decode("utf-8", "replace")
                raise InvalidInput(f"{kind} '{shown}' is not valid UTF-8 once its percent-escapes are decoded, "
                                   "which is not accepted") from None


class LenientJSONParser(BaseParser):
    """DRF parser of every API body: ``parse_json``, except that text which is not JSON at
    all comes back as ``RawText`` (views that accept only JSON call ``require_json``)."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            return parse_json(raw)
        except NotJson:
            return RawText(raw.decode("utf-8"))


def require_json(data, what: str = "body"):
    """The parsed JSON body, or InvalidInput (400) if it was raw text."""
    if isinstance(data, RawText):
        raise InvalidInput(f"Invalid JSON body: {what} is not valid JSON")
    return data
