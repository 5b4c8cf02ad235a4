"""Fixtures of the API authentication tests: auth turned on, keys of each role."""
from __future__ import annotations

import pytest

from tests.factories import Api


@pytest.fixture
def auth_on(settings, monkeypatch):
    """API authentication on for this test (the suite runs with it off)."""
    from apps.api import auth

    monkeypatch.setitem(settings.CONDUCTOR, "API_AUTH", True)
    auth.forget_cached_keys()
    yield
    auth.forget_cached_keys()


def make_key(role: str, name: str = "app") -> tuple[str, str]:
    from apps.api.models import AccessKey

    key, secret = AccessKey.create(name=f"{name}-{role}", role=role)
    return key.key_id, secret


class TokenApi(Api):
    """The SDK-like client of tests.factories sending ``X-Authorization``."""

    def __init__(self, token: str | None):
        super().__init__()
        self.token = token

    def _headers(self) -> dict:
        return {"HTTP_X_AUTHORIZATION": self.token} if self.token else {}

    def get(self, path, params=None):
        from tests.factories import _query

        return self.client.get("/api" + path + _query(params, write=False), content_type="application/json",
                               **self._headers())

    def _write(self, method, path, body, params, raw):
        import json

        from tests.factories import _query

        data = raw if raw is not None else json.dumps({} if body is None else body)
        return getattr(self.client, method)("/api" + path + _query(params, write=True), data=data,
                                            content_type="application/json", **self._headers())


def token_for(key_id: str, secret: str) -> str:
    resp = Api().post("/token", {"keyId": key_id, "keySecret": secret})
    assert resp.status_code == 200, resp.content
    return resp.json()["token"]


@pytest.fixture
def as_role(db, auth_on):
    """``as_role("worker")`` -> a TokenApi signed in with a fresh key of that role."""
    def make(role: str) -> TokenApi:
        return TokenApi(token_for(*make_key(role)))
    return make
