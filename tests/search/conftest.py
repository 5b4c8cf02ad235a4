"""Fixtures of the search tests: an SDK-like API client and a frozen engine clock."""
from __future__ import annotations

import pytest

from tests.factories import Api, FakeClock


@pytest.fixture
def api(db) -> Api:
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock().install(monkeypatch)
