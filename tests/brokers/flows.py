"""The end-to-end flow every broker test runs: an EVENT task on a broker queue, an
EventHandler on that same queue that starts a workflow, the outbox sending after commit,
the consumer handling what arrives; and the checks (one started workflow per published
message, none twice)."""
from __future__ import annotations

from apps.brokers.consumer import Consumer
from apps.brokers.models import BrokerMessage
from apps.engine.models import WorkflowExecution
from tests.brokers.conftest import consume, consume_until, deliver
from tests.factories import unique, workflow_def


def publisher_def(name: str, sink: str) -> dict:
    return workflow_def(name, [{"name": "notify", "taskReferenceName": "notify", "type": "EVENT", "sink": sink,
                                "inputParameters": {"orderId": "${workflow.input.orderId}"}}])


def handler(name: str, event: str, target: str) -> dict:
    return {"name": name, "event": event, "active": True, "actions": [{
        "action": "start_workflow",
        "start_workflow": {"name": target, "input": {"orderId": "${orderId}", "from": "${workflowInstanceId}"}}}]}


def set_up(api, sink: str) -> tuple[str, str]:
    """Register the publishing workflow, the started one and the handler; returns their
    names ``(publisher, started)``."""
    publisher, started = unique("pub"), unique("started")
    api.register_workflow(workflow_def(started, [{"name": "noop", "taskReferenceName": "noop", "type": "NOOP"}]))
    api.register_workflow(publisher_def(publisher, sink))
    api.ok(api.post("/event", handler(unique("h"), sink, started)))
    return publisher, started


def start_publishers(api, publisher: str, orders: list[str]) -> dict[str, str]:
    """Start one publisher per order; returns ``{orderId: EVENT task id}`` after checking
    each EVENT task COMPLETED with the sink as ``event_produced``."""
    out = {}
    for order in orders:
        wf = api.workflow(api.start(publisher, {"orderId": order}))
        task = wf["tasks"][0]
        assert task["status"] == "COMPLETED", task
        out[order] = task["taskId"]
    return out


def started_orders(started: str) -> list[tuple[str, str]]:
    """``(orderId, conductor.event.messageId)`` of every started workflow (sorted)."""
    rows = WorkflowExecution.objects.filter(workflow_name=started).values_list("input", flat=True)
    return sorted((r["orderId"], r["conductor.event.messageId"]) for r in rows)


def kill_and_restart_run(api, broker, sink: str, broker_name: str) -> None:
    """The kill-and-restart run of every broker (with ``BROKER_FETCH_MAX=1``): two
    messages on the broker, one handled; SIGKILL; two EVENT tasks complete while it is
    down (their messages wait in the outbox, first one tried, the backlog in /metrics);
    restart; everything is sent and every order started exactly once."""
    publisher, started = set_up(api, sink)
    before = start_publishers(api, publisher, ["a-1", "a-2"])
    assert deliver(2) == 2                       # on the broker
    consumer = Consumer()
    try:
        assert consume(consumer, 1, seconds=30) == 1  # one handled, one still queued
        broker.kill()                            # SIGKILL
        assert consumer.poll_once() == 0 and broker_name in consumer.errors
        during = start_publishers(api, publisher, ["b-1", "b-2"])  # decides do not wait for the broker
        assert deliver() == 0
        waiting = list(BrokerMessage.objects.filter(event=sink, state="PENDING").order_by("id"))
        assert len(waiting) == 2
        assert "BrokerUnavailable" in waiting[0].last_error  # the second waits behind it: order per queue
        metrics = api.client.get("/metrics").content.decode()
        assert f'event_outbox_pending{{broker="{broker_name}",queue="{sink}"}} 2.0' in metrics
        broker.start()
        assert deliver(2) == 2
        expected = sorted({**before, **during}.items())
        assert consume_until(consumer, lambda: started_orders(started) == expected)
    finally:
        consumer.close()
    assert started_orders(started) == expected


def publish_and_handle_run(api, sink: str, orders: list[str]) -> None:
    """The plain run of every broker: one EVENT task per order, its message written with
    the decide, sent, consumed and acknowledged (not delivered again); one workflow
    started per order by the handler, with the EVENT task's id as message id."""
    publisher, started = set_up(api, sink)
    tasks = start_publishers(api, publisher, orders)
    assert BrokerMessage.objects.filter(event=sink, state="PENDING").count() == len(orders)
    assert deliver(len(orders)) == len(orders)
    consumer = Consumer()
    try:
        assert consume(consumer, len(orders)) == len(orders)
        assert consume(consumer, 1, seconds=1) == 0  # acknowledged: not delivered again
    finally:
        consumer.close()
    assert started_orders(started) == sorted(tasks.items())
