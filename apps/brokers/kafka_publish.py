"""KAFKA_PUBLISH: publish one record to a Kafka topic (Conductor's KafkaPublishTask), an
async system task run by the django-q2 cluster outside any lock, as HTTP.

Input ``kafka_request``: ``bootStrapServers`` (Conductor's spelling; ``bootstrapServers``
is read too), ``topic``, ``value`` (any JSON, sent as its JSON text), ``key``
(``keySerializer`` ``...LongSerializer``/``...IntegerSerializer`` send the key as an
8/4-byte big-endian number, anything else as its text), ``headers`` (a map, values sent
as text), ``requestTimeoutMs`` and ``maxBlockMs`` (default ``BROKER_TIMEOUT_MS``).
Missing parts fail the task with Conductor's reasons (``Missing Kafka request...``,
``No boot strap servers specified``, ``Missing Kafka topic...``, ``Missing Kafka
value...``); a send the broker does not acknowledge in time fails it with ``Failed to
invoke kafka task due to: <reason>`` (retried as the TaskDef says). Success: COMPLETED
(IN_PROGRESS with ``asyncComplete``), output unchanged.
"""
from __future__ import annotations

import json
import struct

from apps.brokers import clients
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import async_complete
from apps.engine.task_types.http import Http

REQUEST = "kafka_request"
MISSING_REQUEST = (f"Missing Kafka request. Task input MUST have a '{REQUEST}' key with KafkaTask.Input as value. "
                   "See documentation for KafkaTask for required input parameters")
MISSING_SERVERS = "No boot strap servers specified"
MISSING_TOPIC = "Missing Kafka topic. See documentation for KafkaTask for required input parameters"
MISSING_VALUE = "Missing Kafka value.  See documentation for KafkaTask for required input parameters"
FAILED = "Failed to invoke kafka task due to: "
LONG_SERIALIZER = "org.apache.kafka.common.serialization.LongSerializer"
INTEGER_SERIALIZER = "org.apache.kafka.common.serialization.IntegerSerializer"


def serialize_key(key, serializer: str | None) -> bytes | None:
    """A record key as Conductor's ``getKey`` + Kafka's serializers write it. Errors:
    ValueError for a Long/Integer key that is not a number."""
    if serializer == LONG_SERIALIZER:
        return struct.pack(">q", int(str(key)))
    if serializer == INTEGER_SERIALIZER:
        return struct.pack(">i", int(str(key)))
    if key is None:
        return None
    return (key if isinstance(key, str) else json.dumps(key, separators=(",", ":"))).encode()


def _positive_int(value, default: int | None) -> int | None:
    try:
        return int(value) if value is not None and int(value) > 0 else default
    except (TypeError, ValueError):
        return default


@register
class KafkaPublish(Http):
    """KAFKA_PUBLISH (module docstring): scheduling and re-dispatch as HTTP."""

    type_name = "KAFKA_PUBLISH"

    def run_async(self, task: TaskState) -> dict:
        request = task.input_data.get(REQUEST)
        if not isinstance(request, dict):
            return {"status": "FAILED", "reasonForIncompletion": MISSING_REQUEST}
        servers = request.get("bootStrapServers") or request.get("bootstrapServers")
        if not isinstance(servers, str) or not servers.strip():
            return {"status": "FAILED", "reasonForIncompletion": MISSING_SERVERS}
        topic = request.get("topic")
        if not isinstance(topic, str) or not topic.strip():
            return {"status": "FAILED", "reasonForIncompletion": MISSING_TOPIC}
        if request.get("value") is None:
            return {"status": "FAILED", "reasonForIncompletion": MISSING_VALUE}
        headers = request.get("headers") or {}
        try:
            key = serialize_key(request.get("key"), request.get("keySerializer"))
            if not isinstance(headers, dict):
                raise ValueError("headers must be a map")
            client = clients.KafkaClient(servers.strip(),
                                         request_timeout_ms=_positive_int(request.get("requestTimeoutMs"), None),
                                         max_block_ms=_positive_int(request.get("maxBlockMs"), None))
            try:
                client.publish(None, json.dumps(request["value"], separators=(",", ":")).encode(), None, key=key,
                               headers=headers, topic=topic.strip())
            finally:
                client.close()
        except (clients.BrokerUnavailable, ValueError, ImportError) as exc:
            return {"status": "FAILED", "reasonForIncompletion": FAILED + str(exc)}
        status = "IN_PROGRESS" if async_complete(task, task.workflow_task) else "COMPLETED"
        return {"status": status, "outputData": dict(task.output_data or {})}
