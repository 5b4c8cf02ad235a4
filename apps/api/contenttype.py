"""Twisted's Content-Type parsing, memoised (daphne serves every request through
``twisted.web.http.Request.requestReceived``).

For every POST with a Content-Type, Twisted 26 parses the header with
``twisted.web.http._parseContentType``, which builds an ``email.message.EmailMessage``
and runs the e-mail header registry: about 40 µs of CPU per request here (some 4 % of
the server's samples on the worker path under py-spy), for a
worker's ``application/json`` that is the same string every time. The function is pure
(``bytes`` in, the media type as ``bytes`` out), so ``install`` wraps it in an
``functools.lru_cache`` of the last ``DISTINCT_VALUES`` values (multipart boundaries differ per request
and are evicted). No-op when Twisted changes that private function away.
"""
from __future__ import annotations

import functools

DISTINCT_VALUES = 256


def install() -> bool:
    """Memoise ``twisted.web.http._parseContentType`` once per process; returns whether
    it is (now) memoised."""
    try:
        from twisted.web import http
    except ImportError:  # pragma: no cover - daphne depends on Twisted
        return False
    parse = getattr(http, "_parseContentType", None)
    if parse is None:
        return False
    if not hasattr(parse, "cache_info"):
        http._parseContentType = functools.lru_cache(maxsize=DISTINCT_VALUES)(parse)
    return True
