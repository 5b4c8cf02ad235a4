"""Fixtures of the case tests: a real database per test (threads), a virtual clock and
the engine's cluster jobs captured for the harness to run."""
from __future__ import annotations

import pytest

from tests.cases.harness import CaseRunner, install_job_capture
from tests.factories import Api, FakeClock


@pytest.fixture
def make_runner(transactional_db, monkeypatch):
    clock = FakeClock().install(monkeypatch)
    jobs: list = []
    install_job_capture(monkeypatch, jobs)

    def make(case: dict) -> CaseRunner:
        return CaseRunner(case, Api(), clock, jobs)

    return make
