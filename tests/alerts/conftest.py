"""Fixtures of the alert tests: an SDK-like client, the engine clock, a loopback webhook
receiver (the status listeners' one) and Django's locmem mail backend (pytest-django's)."""
from __future__ import annotations

import pytest

from tests.factories import Api, FakeClock
from tests.listeners.receiver import Receiver


@pytest.fixture
def api(db) -> Api:
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock().install(monkeypatch)


@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r
