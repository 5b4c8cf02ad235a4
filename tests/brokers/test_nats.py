"""Event queues on a real NATS (Debian's nats-server with JetStream, one per session): an
EVENT task on ``nats_stream:`` (JetStream) and on ``nats:`` (core NATS, a subscriber
listening) starts a workflow through an EventHandler on that subject; a JetStream server
killed and restarted mid-run loses nothing and starts nothing twice."""
from __future__ import annotations

import pytest

from apps.brokers.consumer import Consumer
from tests.brokers import flows
from tests.brokers.conftest import consume, deliver
from tests.factories import unique

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def nats(nats_server, conductor_settings):
    conductor_settings(NATS_URL=nats_server.url, BROKER_TIMEOUT_MS=3000)
    return nats_server


def test_event_task_on_a_jetstream_subject_starts_a_workflow_through_a_handler(api, nats):
    flows.publish_and_handle_run(api, f"nats_stream:{unique('orders')}", ["o-1", "o-2", "o-3"])


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
    flows.kill_and_restart_run(api, nats, f"nats_stream:{unique('outage')}", "nats")


def test_the_cluster_consumer_thread_takes_the_lease_and_handles_messages(api, nats, conductor_settings):
    import time

    from apps.brokers.consumer import LEASE, ConsumerThread
    from apps.engine.models import SweeperLease

    conductor_settings(BROKER_HANDLER_REFRESH_SECONDS=1)
    sink = f"nats_stream:{unique('thread')}"
    publisher, started = flows.set_up(api, sink)
    tasks = flows.start_publishers(api, publisher, ["t-1", "t-2"])
    assert deliver(2) == 2
    first, second = ConsumerThread(holder="first"), ConsumerThread(holder="second")
    first.start()
    try:
        deadline = time.monotonic() + 30
        while flows.started_orders(started) != sorted(tasks.items()) and time.monotonic() < deadline:
            time.sleep(0.2)
        second.start()  # a second candidate (another process, another cluster) stands by
        time.sleep(1)
        assert SweeperLease.objects.get(name=LEASE).holder == "first"
    finally:
        first.stop()
        second.stop()
    assert flows.started_orders(started) == sorted(tasks.items())
    assert first.handled == 2 and second.handled == 0
