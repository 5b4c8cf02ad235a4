"""Fixtures of the status-listener tests: an SDK-like client, the engine clock, a
loopback receiver and the listener settings pointing at it."""
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


@pytest.fixture
def listener_settings(settings, receiver):
    """Every publisher on, HTTP to the receiver (``/workflow`` and ``/task``), RUNNING and
    COMPLETED and TERMINATED workflows, SCHEDULED and COMPLETED tasks subscribed."""
    conf = dict(settings.CONDUCTOR)
    conf.update({
        "WORKFLOW_STATUS_LISTENER": "workflow_publisher,queue_publisher",
        "TASK_STATUS_LISTENER": "task_publisher",
        "STATUS_NOTIFIER_URL": receiver.url,
        "STATUS_NOTIFIER_ENDPOINT_WORKFLOW": "workflow",
        "STATUS_NOTIFIER_ENDPOINT_TASK": "task",
        "STATUS_NOTIFIER_SUBSCRIBED_WORKFLOW_STATUSES": "RUNNING,COMPLETED,TERMINATED,PAUSED,RESUMED",
        "STATUS_NOTIFIER_SUBSCRIBED_TASK_STATUSES": "SCHEDULED,COMPLETED",
        "STATUS_NOTIFIER_RETRY_DELAY_MS": 1000,
        "STATUS_NOTIFIER_MAX_ATTEMPTS": 3,
        "ARCHIVE_DELAY_SECONDS": 60,
    })
    settings.CONDUCTOR = conf
    return conf
