"""Event queues on a real NATS (Debian's nats-server with JetStream, one per session): an
EVENT task on ``nats_stream:`` (JetStream) and on ``nats:`` (core NATS, a subscriber
listening) starts a workflow through an EventHandler on that subject; a JetStream server
killed and restarted mid-run loses nothing and starts nothing twice."""
from __future__ import annotations

import pytest

from apps.brokers.consumer import Consumer
from apps.brokers.models import BrokerMessage
from tests.brokers import flows
from tests.brokers.conftest import consume, consume_until, deliver
from tests.factories import unique

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def nats(nats_server, conductor_settings):
    conductor_settings(NATS_URL=nats_server.url, BROKER_TIMEOUT_MS=3000)
    return nats_server


def test_event_task_on_a_jetstream_subject_starts_a_workflow_through_a_handler(api, nats):
    sink = f"nats_stream:{unique('orders')}"
    publisher, started = flows.set_up(api, sink)
    tasks = flows.start_publishers(api, publisher, ["o-1", "o-2", "o-3"])
    assert deliver(3) == 3
    consumer = Consumer()
    try:
        assert consume(consumer, 3) == 3
        assert consume(consumer, 1, seconds=1) == 0  # acknowledged: not delivered again
    finally:
        consumer.close()
    assert flows.started_orders(started) == sorted(tasks.items())


def test_event_task_on_a_core_nats_subject_reaches_a_listening_handler(api, nats):
    sink = f"nats:{unique('core')}"
    publisher, started = flows.set_up(api, sink)
    consumer = Consumer()
    try:
        consume(consumer, 0)  # subscribed (core NATS keeps nothing for absent subscribers)
        consumer.poll_once()
        tasks = flows.start_publishers(api, publisher, ["n-1", "n-2"])
        assert deliver(2) == 2
        assert consume(consumer, 2) == 2
    finally:
        consumer.close()
    assert flows.started_orders(started) == sorted(tasks.items())


def test_a_jetstream_server_killed_and_restarted_mid_run_loses_nothing(api, nats, conductor_settings):
    conductor_settings(BROKER_FETCH_MAX=1)  # one message per fetch: the kill comes between two
    sink = f"nats_stream:{unique('outage')}"
    publisher, started = flows.set_up(api, sink)
    before = flows.start_publishers(api, publisher, ["a-1", "a-2"])
    assert deliver(2) == 2                       # on the broker
    consumer = Consumer()
    try:
        assert consume(consumer, 1, seconds=30) == 1  # one handled, one still queued
        nats.kill()                            # SIGKILL
        assert consumer.poll_once() == 0 and "nats" in consumer.errors
        during = flows.start_publishers(api, publisher, ["b-1", "b-2"])  # decides do not wait for the broker
        assert deliver() == 0
        waiting = list(BrokerMessage.objects.filter(event=sink, state="PENDING").order_by("id"))
        assert len(waiting) == 2
        assert "BrokerUnavailable" in waiting[0].last_error  # the second waits behind it: order per queue
        metrics = api.client.get("/metrics").content.decode()
        assert f'event_outbox_pending{{broker="nats",queue="{sink}"}} 2.0' in metrics
        nats.start()
        assert deliver(2) == 2
        expected = sorted({**before, **during}.items())
        assert consume_until(consumer, lambda: flows.started_orders(started) == expected)
    finally:
        consumer.close()
    assert flows.started_orders(started) == expected
