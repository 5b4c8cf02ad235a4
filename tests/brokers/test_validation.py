"""Broker event names are checked when a handler or a definition is registered: a 400
whose ``validationErrors`` name the field and say what is wrong; a well-formed name on a
broker not configured is accepted (it may be configured later) and fails only at run
time. No broker needed."""
from __future__ import annotations

import pytest

from apps.brokers import sinks
from tests.factories import unique, workflow_def

pytestmark = [pytest.mark.django_db(transaction=True)]

BAD = [
    ("amqp_exchange:orders?exchangeType=bogus", "Invalid exchangeType 'bogus'"),
    ("amqp:orders?colour=red", "Unknown AMQP parameter 'colour'"),
    ("amqp:", "Invalid AMQP queue name ''"),
    ("amqp:orders?deliveryMode=3", "Invalid deliveryMode '3'"),
    ("nats:a..b", "Invalid NATS subject 'a..b'"),
    ("nats_stream:orders:group", "Invalid NATS queue group 'group'"),
    ("kafka:bad topic", "Invalid Kafka topic 'bad topic'"),
]


@pytest.mark.parametrize("event, message", BAD)
def test_a_malformed_broker_event_in_a_handler_is_a_400_naming_the_field(api, event, message):
    body = api.refused(api.post("/event", {"name": unique("h"), "event": event, "active": True,
                                           "actions": [{"action": "start_workflow",
                                                        "start_workflow": {"name": "x"}}]}))
    [error] = [e for e in body["validationErrors"] if e["path"] == "addEventHandler.arg0.event"]
    assert error["message"].startswith(message) and error["invalidValue"] == event


@pytest.mark.parametrize("event, message", BAD)
def test_a_malformed_broker_sink_in_a_definition_is_a_400(api, event, message):
    definition = workflow_def(unique("wf"), [{"name": "e", "taskReferenceName": "e", "type": "EVENT",
                                              "sink": event}])
    body = api.refused(api.post("/metadata/workflow", definition))
    assert any(message in e["message"] and e.get("invalidValue") == event for e in body["validationErrors"]), body


def test_a_well_formed_sink_on_a_broker_not_configured_is_accepted_and_fails_at_run_time(api, settings):
    settings.CONDUCTOR = {**settings.CONDUCTOR, "AMQP_URL": ""}
    name = unique("wf")
    api.register_workflow(workflow_def(name, [{"name": "e", "taskReferenceName": "e", "type": "EVENT",
                                               "sink": "amqp:orders"}]))
    api.ok(api.post("/event", {"name": unique("h"), "event": "amqp:orders", "active": True,
                               "actions": [{"action": "start_workflow", "start_workflow": {"name": name}}]}))
    task = api.workflow(api.start(name))["tasks"][0]
    assert task["status"] == "FAILED"
    assert task["reasonForIncompletion"].endswith(
        "error: Unknown queue type amqp: the amqp event queue is not configured (CONDUCTOR_AMQP_URL)")


def test_parse_reads_conductors_uris():
    sink = sinks.parse("amqp_exchange:ex?exchangeType=fanout&routingKey=k&durable=false", require_enabled=False)
    assert (sink.broker, sink.kind, sink.name, sink.consume_from) == ("amqp", "exchange", "ex", "bound_to_ex")
    assert sink.flag("durable", True) is False and sink.option("routingKey") == "k"
    assert sinks.parse("amqp_queue:q?maxPriority=10", require_enabled=False).option("maxPriority") == "10"
    with pytest.raises(sinks.SinkInvalid, match="maxPriority"):
        sinks.parse("amqp:q?maxPriority=0", require_enabled=False)
    core = sinks.parse("nats:orders.paid:workers", require_enabled=False)
    assert (core.kind, core.name, core.option("queueGroup")) == ("core", "orders.paid", "workers")
    assert sinks.parse("jsm:orders", require_enabled=False).kind == "stream"
    assert sinks.parse("kafka:orders.v1", require_enabled=False).name == "orders.v1"


def test_a_message_waiting_for_its_retry_holds_back_the_later_ones_of_its_queue(settings):
    from apps.brokers import outbox
    from apps.brokers.models import BrokerMessage

    settings.CONDUCTOR = {**settings.CONDUCTOR, "AMQP_URL": "amqp://guest:guest@127.0.0.1:1/%2F"}
    now = 1_000_000
    BrokerMessage.objects.create(key="first", event="amqp:q", broker="amqp", created_time=now,
                                 next_attempt_at=now + 60_000, attempts=1, last_error="refused")
    BrokerMessage.objects.create(key="second", event="amqp:q", broker="amqp", created_time=now, next_attempt_at=now)
    assert outbox.deliver_due(now=now) == (0, 0)  # "second" is due but not sent before "first"
    assert set(BrokerMessage.objects.values_list("attempts", flat=True)) == {0, 1}
