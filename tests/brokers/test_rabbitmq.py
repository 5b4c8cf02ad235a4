"""Event queues on a real RabbitMQ (Debian's rabbitmq-server, one per session): an EVENT
task on ``amqp:`` / ``amqp_exchange:`` starts a workflow through an EventHandler on that
queue; a broker killed and restarted mid-run loses nothing and starts nothing twice; a
message handled but not acknowledged (a crash) is not handled again when redelivered;
the outbox backlog shows in /metrics."""
from __future__ import annotations

import pytest

from apps.brokers.consumer import Consumer, handle
from apps.brokers.models import BrokerMessage
from tests.brokers import flows
from tests.brokers.conftest import consume, consume_until, deliver
from tests.factories import unique

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def amqp(rabbitmq, conductor_settings):
    conductor_settings(AMQP_URL=rabbitmq.url, BROKER_TIMEOUT_MS=3000)
    return rabbitmq


def test_event_task_on_an_amqp_queue_starts_a_workflow_through_a_handler(api, amqp):
    sink = f"amqp:{unique('orders')}"
    publisher, started = flows.set_up(api, sink)
    tasks = flows.start_publishers(api, publisher, ["o-1", "o-2", "o-3"])
    assert BrokerMessage.objects.filter(event=sink, state="PENDING").count() == 3  # written with the decide
    assert deliver(3) == 3
    consumer = Consumer()
    try:
        assert consume(consumer, 3) == 3
    finally:
        consumer.close()
    assert flows.started_orders(started) == sorted((o, t) for o, t in tasks.items())


def test_event_task_on_an_amqp_exchange_reaches_the_bound_queue(api, amqp):
    sink = f"amqp_exchange:{unique('ex')}?exchangeType=direct&routingKey=paid&bindQueueName={unique('bound')}"
    publisher, started = flows.set_up(api, sink)
    tasks = flows.start_publishers(api, publisher, ["x-1", "x-2"])
    assert deliver(2) == 2
    consumer = Consumer()
    try:
        assert consume(consumer, 2) == 2
    finally:
        consumer.close()
    assert flows.started_orders(started) == sorted(tasks.items())


def test_a_broker_killed_and_restarted_mid_run_loses_nothing(api, amqp, conductor_settings):
    conductor_settings(BROKER_FETCH_MAX=1)  # one message per fetch: the kill comes between two
    sink = f"amqp:{unique('outage')}"
    publisher, started = flows.set_up(api, sink)
    before = flows.start_publishers(api, publisher, ["a-1", "a-2"])
    assert deliver(2) == 2                       # on the broker
    consumer = Consumer()
    try:
        assert consume(consumer, 1, seconds=30) == 1  # one handled, one still queued
        amqp.kill()                            # SIGKILL
        assert consumer.poll_once() == 0 and "amqp" in consumer.errors
        during = flows.start_publishers(api, publisher, ["b-1", "b-2"])  # decides do not wait for the broker
        assert deliver() == 0
        waiting = list(BrokerMessage.objects.filter(event=sink, state="PENDING").order_by("id"))
        assert len(waiting) == 2
        assert "BrokerUnavailable" in waiting[0].last_error  # the second waits behind it: order per queue
        metrics = api.client.get("/metrics").content.decode()
        assert f'event_outbox_pending{{broker="amqp",queue="{sink}"}} 2.0' in metrics
        amqp.start()
        assert deliver(2) == 2
        expected = sorted({**before, **during}.items())
        assert consume_until(consumer, lambda: flows.started_orders(started) == expected)
    finally:
        consumer.close()
    assert flows.started_orders(started) == expected


def test_a_message_handled_but_not_acknowledged_is_not_handled_twice(api, amqp):
    from apps.brokers import clients, sinks

    sink = f"amqp:{unique('crash')}"
    publisher, started = flows.set_up(api, sink)
    tasks = flows.start_publishers(api, publisher, ["c-1"])
    assert deliver(1) == 1
    client = clients.AmqpClient()
    received = client.fetch([sinks.parse(sink)], 5, 1.0)
    assert len(received) == 1
    received[0].ack = lambda: None               # the process dies before its ack
    handle(received[0])
    client.close()                               # the broker requeues the unacknowledged message
    consumer = Consumer()
    try:
        assert consume(consumer, 1, seconds=10) == 1  # delivered again, acknowledged now
        assert consume(consumer, 1, seconds=1) == 0
    finally:
        consumer.close()
    assert flows.started_orders(started) == sorted(tasks.items())
