"""Fixtures of the A2A tests: the loopback peer agent (a2a-sdk) and the cluster's jobs run
on demand (``cluster``, as tests/ai has it)."""
from __future__ import annotations

import pytest

from tests.ai.conftest import Cluster, install_cluster


@pytest.fixture
def peer():
    from tests.agent2agent.peer import Peer

    agent = Peer()
    yield agent
    agent.close()


@pytest.fixture
def cluster(monkeypatch) -> Cluster:
    """As tests/ai's, but the best-effort remote cancel of an ended AGENT is not run."""
    return install_cluster(monkeypatch, dropped=("apps.a2a.tasks.cancel_remote_job",))
