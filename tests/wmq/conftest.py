"""Fixtures of the workflow message queue tests."""
from __future__ import annotations

import pytest

from tests.factories import Api, FakeClock


@pytest.fixture
def api(db) -> Api:
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock().install(monkeypatch)
