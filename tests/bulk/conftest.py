"""Fixtures of the bulk tests: an SDK-like API client and a one-task workflow."""
from __future__ import annotations

import pytest

from tests.factories import Api, simple_task, task_def, unique, workflow_def


@pytest.fixture
def api(db) -> Api:
    return Api()


@pytest.fixture
def flow(api):
    """A registered workflow with one SIMPLE task (no retries); helpers start executions
    and drive them to COMPLETED or FAILED through the API."""
    name = unique("bulk")
    task = f"{name}_t"
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "t")]))

    class Flow:
        def __init__(self):
            self.name, self.task = name, task

        def start(self, n: int = 1) -> list[str]:
            return [api.start(name, {"n": i}) for i in range(n)]

        def finish(self, status: str = "COMPLETED") -> str:
            t = api.poll_one(task)
            api.ok(api.update(t, status, {"done": True}, reasonForIncompletion="boom" if status != "COMPLETED" else None))
            return t["workflowInstanceId"]

    return Flow()
