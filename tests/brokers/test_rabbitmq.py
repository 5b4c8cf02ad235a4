"""Event queues on a real RabbitMQ (Debian's rabbitmq-server, one per session): an EVENT
task on ``amqp:`` / ``amqp_exchange:`` starts a workflow through an EventHandler on that
queue; a broker killed and restarted mid-run loses nothing and starts nothing twice; a
message handled but not acknowledged (a crash) is not handled again when redelivered;
the outbox backlog shows in /metrics."""
from __future__ import annotations

import pytest

from apps.brokers.consumer import Consumer, handle
from tests.brokers import flows
from tests.brokers.conftest import consume, deliver
from tests.factories import unique

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def amqp(rabbitmq, conductor_settings):
    conductor_settings(AMQP_URL=rabbitmq.url, BROKER_TIMEOUT_MS=3000)
    return rabbitmq


def test_event_task_on_an_amqp_queue_starts_a_workflow_through_a_handler(api, amqp):
    # maxPriority (Conductor's param): the queue is declared alike by publisher and consumer
    flows.publish_and_handle_run(api, f"amqp:{unique('orders')}?maxPriority=5", ["o-1", "o-2", "o-3"])


def test_event_task_on_an_amqp_exchange_reaches_the_bound_queue(api, amqp):
    sink = f"amqp_exchange:{unique('ex')}?exchangeType=direct&routingKey=paid&bindQueueName={unique('bound')}"
    flows.publish_and_handle_run(api, sink, ["x-1", "x-2"])


def test_a_broker_killed_and_restarted_mid_run_loses_nothing(api, amqp, conductor_settings):
    conductor_settings(BROKER_FETCH_MAX=1)  # one message per fetch: the kill comes between two
    flows.kill_and_restart_run(api, amqp, f"amqp:{unique('outage')}", "amqp")


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
