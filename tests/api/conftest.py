"""Fixtures of the API tests: an SDK-like client and a controllable clock."""
from __future__ import annotations

import pytest

from tests.factories import Api, FakeClock


@pytest.fixture
def api(db) -> Api:
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """Freeze the engine's clock at the real time; ``clock.advance(seconds)`` moves it."""
    return FakeClock().install(monkeypatch)
