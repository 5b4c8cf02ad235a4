"""Fixtures of the A2A tests: the loopback peer agent (a2a-sdk) and the cluster's jobs run
on demand (``cluster``, as tests/ai has it)."""
from __future__ import annotations

import pytest

from tests.ai.conftest import Cluster


@pytest.fixture
def peer():
    from tests.agent2agent.peer import Peer

    agent = Peer()
    yield agent
    agent.close()


@pytest.fixture
def cluster(monkeypatch) -> Cluster:
    from apps.engine import jobqueue

    c = Cluster()
    real = jobqueue.enqueue

    def fake(func, *args, **kwargs):
        if func == "apps.engine.jobs.system_task_job":
            c.queued.append(args[0])
        elif func != "apps.a2a.tasks.cancel_remote_job":
            real(func, *args, **kwargs)

    monkeypatch.setattr(jobqueue, "enqueue", fake)
    return c
