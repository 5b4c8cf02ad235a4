"""Engine tests through the API with real commits (on_commit hooks run: a child ending
decides its parent, as in production)."""
from __future__ import annotations

import pytest

from tests.factories import Api, FakeClock


@pytest.fixture
def api(transactional_db) -> Api:
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock().install(monkeypatch)
