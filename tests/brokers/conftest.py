"""Fixtures of the broker tests: the real brokers (``servers.py``, one process each per
test session, stopped at its end), the settings that point the server at them, and
helpers that run the outbox and the consumer as the cluster would (``deliver``,
``consume``), on a transactional database so after-commit hooks run."""
from __future__ import annotations

import time

import pytest

from tests.brokers import servers
from tests.factories import Api

BOUND_SECONDS = 60


def _session_broker(request, tmp_path_factory, cls, name):
    try:
        broker = cls(tmp_path_factory.mktemp(name))
    except servers.Unavailable as exc:
        pytest.skip(str(exc))
    broker.prepare()
    broker.start()
    request.addfinalizer(broker.shutdown)
    return broker


@pytest.fixture(scope="session")
def rabbitmq(request, tmp_path_factory) -> servers.RabbitMQ:
    return _session_broker(request, tmp_path_factory, servers.RabbitMQ, "rabbitmq")


@pytest.fixture(scope="session")
def nats_server(request, tmp_path_factory) -> servers.Nats:
    return _session_broker(request, tmp_path_factory, servers.Nats, "nats")


@pytest.fixture(scope="session")
def kafka(request, tmp_path_factory) -> servers.Kafka:
    return _session_broker(request, tmp_path_factory, servers.Kafka, "kafka")


@pytest.fixture
def api(transactional_db) -> Api:
    return Api()


@pytest.fixture
def conductor_settings(settings):
    """``conductor_settings(KEY=value, ...)``: change ``settings.CONDUCTOR`` for this test;
    the broker clients of the process are closed before and after."""
    from apps.brokers import outbox

    outbox.close_clients()

    def change(**values):
        settings.CONDUCTOR = {**settings.CONDUCTOR, **values}
    yield change
    outbox.close_clients()


def deliver(expected: int | None = None) -> int:
    """Run the outbox's sender once (with ``expected``: until that many were sent,
    within a bound), retry delays not waited for; returns the rows sent."""
    from apps.brokers import outbox

    sent = 0
    deadline = time.monotonic() + BOUND_SECONDS
    while time.monotonic() < deadline:
        n, attempted = outbox.deliver_due(now=int(time.time() * 1000) + 10**9)  # retry delays do not wait
        sent += n
        if expected is None or sent >= expected:
            break
        if attempted and not n:
            time.sleep(0.5)
    return sent


def consume(consumer, expected: int, seconds: float = BOUND_SECONDS) -> int:
    """Poll ``consumer`` (an ``apps.brokers.consumer.Consumer``) until ``expected``
    messages were handled or ``seconds`` passed; returns how many were."""
    handled = 0
    deadline = time.monotonic() + seconds
    consumer.refresh()
    while handled < expected and time.monotonic() < deadline:
        handled += consumer.poll_once(timeout=0.3)
    return handled


def consume_until(consumer, done, seconds: float = BOUND_SECONDS) -> bool:
    """Poll ``consumer`` until ``done()`` is true or ``seconds`` passed (a redelivered
    message counts as handled, so a count of messages cannot say when to stop); then
    once more, so a message handled twice would show. Returns ``done()``."""
    deadline = time.monotonic() + seconds
    consumer.refresh()
    while not done() and time.monotonic() < deadline:
        consumer.poll_once(timeout=0.3)
    consumer.poll_once(timeout=0.3)
    return done()
