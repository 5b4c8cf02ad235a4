"""apps.api.contenttype: Twisted's Content-Type parsing, memoised, answers as before."""
from __future__ import annotations

from apps.api import contenttype


def test_the_memoised_parse_answers_what_twisteds_own_does():
    from twisted.web import http

    assert contenttype.install() and contenttype.install()  # idempotent
    parse = http._parseContentType
    original = parse.__wrapped__
    values = [b"application/json", b"application/json; charset=utf-8", b"application/x-www-form-urlencoded",
              b"multipart/form-data; boundary=abc", b"Text/Plain", b"nonsense"]
    for value in values:
        assert parse(value) == original(value), value
    assert parse(b"application/json") == b"application/json"
    before = parse.cache_info().hits
    parse(b"application/json")
    assert parse.cache_info().hits == before + 1
    assert parse.cache_info().maxsize == contenttype.DISTINCT_VALUES
