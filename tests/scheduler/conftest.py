"""Fixtures of the scheduler tests: an SDK-like client and the engine's controllable clock."""
from __future__ import annotations

import pytest

from tests.factories import Api, FakeClock

# 2026-03-06T12:00:00Z, a Friday: slots are easy to reason about.
FRIDAY_NOON_UTC = 1_772_798_400_000


@pytest.fixture
def api(db) -> Api:
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """The engine clock frozen at Friday 2026-03-06 12:00:00.000 UTC."""
    return FakeClock(FRIDAY_NOON_UTC).install(monkeypatch)
