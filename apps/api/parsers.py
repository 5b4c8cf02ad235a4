"""Request parsing tolerant of what Conductor clients send.

The SDK sends ``Content-Type: application/json`` on every request, with ``{}`` or an
empty body on void calls and a raw (not JSON-quoted) string on ``POST /tasks/{id}/log``.
``LenientJSONParser`` returns None for an empty body and the raw text when the body is
not JSON, leaving each view to decide what it accepts.
"""
from __future__ import annotations

import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


class RawText(str):
    """A request body that was not valid JSON (kept as text)."""


class LenientJSONParser(BaseParser):
    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw or not raw.strip():
            return None
        text = raw.decode("utf-8", errors="replace")
        try:
            return json.loads(text)
        except ValueError:
            return RawText(text)


def require_json(data, what: str = "body"):
    """The parsed JSON body, or ParseError if it was raw text."""
    if isinstance(data, RawText):
        raise ParseError(f"{what} is not valid JSON")
    return data
