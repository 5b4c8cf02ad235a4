"""Fixtures of the API tests: an SDK-like client and a controllable clock."""
from __future__ import annotations

import pytest

from tests.factories import Api, FakeClock, simple_task, task_def, unique, workflow_def


@pytest.fixture
def api(db) -> Api:
    return Api()


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """Freeze the engine's clock at the real time; ``clock.advance(seconds)`` moves it."""
    return FakeClock().install(monkeypatch)


@pytest.fixture
def flow(api) -> tuple[str, str]:
    """``(workflow name, task type)`` of a registered one-SIMPLE-task workflow (ref t1)."""
    name, task = unique("flow_wf"), unique("flow_task")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "t1")]))
    return name, task
