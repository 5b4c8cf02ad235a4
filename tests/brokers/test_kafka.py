"""Kafka (the broker's jars from Maven, KRaft mode, one per session; skipped with the
reason on a machine without Java 17+ or Maven): an EVENT task on ``kafka:`` starts a
workflow through an EventHandler on that topic; a broker killed and restarted mid-run
loses nothing and starts nothing twice; KAFKA_PUBLISH with Conductor's input and
failure reasons; the Kafka workflow status listener."""
from __future__ import annotations

import json
import time

import pytest

from tests.brokers import flows
from tests.brokers.conftest import deliver
from tests.factories import simple_task, task_def, unique, workflow_def

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def kafka_on(kafka, conductor_settings):
    conductor_settings(KAFKA_BOOTSTRAP_SERVERS=kafka.bootstrap, BROKER_TIMEOUT_MS=5000,
                       EVENT_CONSUMER_GROUP=unique("group"))
    return kafka


def read_topic(bootstrap: str, topic: str, expected: int, seconds: float = 30) -> list:
    """Records of ``topic`` from the start, until ``expected`` came or ``seconds`` passed."""
    from confluent_kafka import Consumer as KafkaConsumer

    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"),
                              "auto.offset.reset": "earliest", "allow.auto.create.topics": True})
    consumer.subscribe([topic])
    out = []
    deadline = time.monotonic() + seconds
    try:
        while len(out) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                out.append(msg)
    finally:
        consumer.close()
    return out


def test_event_task_on_a_kafka_topic_starts_a_workflow_through_a_handler(api, kafka_on):
    flows.publish_and_handle_run(api, f"kafka:{unique('orders')}", ["o-1", "o-2", "o-3"])


def test_a_kafka_broker_killed_and_restarted_mid_run_loses_nothing(api, kafka_on, conductor_settings):
    conductor_settings(BROKER_FETCH_MAX=1)  # one message per fetch: the kill comes between two
    flows.kill_and_restart_run(api, kafka_on, f"kafka:{unique('outage')}", "kafka")


def kafka_publish_def(name: str, request: dict) -> dict:
    return workflow_def(name, [{"name": "kp", "taskReferenceName": "kp", "type": "KAFKA_PUBLISH",
                                "inputParameters": {"kafka_request": request}}])


def run_system_tasks() -> None:
    """Run the async system task jobs the cluster would (KAFKA_PUBLISH)."""
    from apps.engine import jobs
    from apps.engine.models import TaskExecution

    for task_id in TaskExecution.objects.filter(task_type="KAFKA_PUBLISH", status="SCHEDULED").values_list(
            "task_id", flat=True):
        jobs.system_task_job(task_id)


def test_kafka_publish_sends_the_value_key_and_headers(api, kafka_on):
    topic = unique("kp")
    name = unique("kpwf")
    api.register_workflow(kafka_publish_def(name, {
        "bootStrapServers": "${workflow.input.servers}", "topic": topic, "key": "k-1",
        "headers": {"source": "conductor", "n": 7}, "value": {"orderId": "${workflow.input.orderId}"},
        "requestTimeoutMs": 5000, "maxBlockMs": 5000}))
    wf_id = api.start(name, {"servers": kafka_on.bootstrap, "orderId": "o-9"})
    run_system_tasks()
    wf = api.workflow(wf_id)
    assert wf["tasks"][0]["status"] == "COMPLETED", wf["tasks"][0].get("reasonForIncompletion")
    assert wf["status"] == "COMPLETED"
    [record] = read_topic(kafka_on.bootstrap, topic, 1)
    assert json.loads(record.value()) == {"orderId": "o-9"}
    assert record.key() == b"k-1"
    assert dict(record.headers()) == {"source": b"conductor", "n": b"7"}


@pytest.mark.parametrize("request_body, reason", [
    ({"topic": "t", "value": 1}, "No boot strap servers specified"),
    ({"bootStrapServers": "127.0.0.1:1", "value": 1},
     "Missing Kafka topic. See documentation for KafkaTask for required input parameters"),
    ({"bootStrapServers": "127.0.0.1:1", "topic": "t"},
     "Missing Kafka value.  See documentation for KafkaTask for required input parameters"),
])
def test_kafka_publish_without_a_required_field_fails_with_conductors_reason(api, request_body, reason):
    name = unique("kpbad")
    api.register_workflow(kafka_publish_def(name, request_body))
    wf_id = api.start(name)
    run_system_tasks()
    task = api.workflow(wf_id)["tasks"][0]
    assert (task["status"], task["reasonForIncompletion"]) == ("FAILED", reason)


def test_kafka_publish_to_a_broker_that_is_down_fails_the_task(api, conductor_settings):
    from tests.brokers.servers import free_port

    name = unique("kpdown")
    api.register_workflow(kafka_publish_def(name, {"bootStrapServers": f"127.0.0.1:{free_port()}", "topic": "t",
                                                   "value": {"a": 1}, "requestTimeoutMs": 1000, "maxBlockMs": 1000}))
    wf_id = api.start(name)
    run_system_tasks()
    task = api.workflow(wf_id)["tasks"][0]
    assert task["status"] == "FAILED"
    assert task["reasonForIncompletion"].startswith("Failed to invoke kafka task due to: ")


def test_the_kafka_status_listener_publishes_each_workflow_event(api, kafka_on, conductor_settings):
    topic = unique("status")
    conductor_settings(WORKFLOW_STATUS_LISTENER="kafka", KAFKA_STATUS_DEFAULT_TOPIC=topic)
    name, worker = unique("listened"), unique("w")
    api.register_task_defs(task_def(worker))
    api.register_workflow(workflow_def(name, [simple_task(worker, "w")], workflowStatusListenerEnabled=True))
    wf_id = api.start(name)
    assert deliver(1) == 1
    api.complete(api.poll_one(worker))
    assert deliver(2) == 2
    records = read_topic(kafka_on.bootstrap, topic, 3)
    values = [json.loads(r.value()) for r in records]
    assert [v["eventType"] for v in values] == ["STARTED", "COMPLETED", "FINALIZED"]
    assert {r.key() for r in records} == {wf_id.encode()}
    assert all(v["workflowName"] == name and v["payload"]["workflowId"] == wf_id for v in values)
    assert values[-1]["payload"]["status"] == "COMPLETED"
