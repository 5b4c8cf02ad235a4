"""Broker event names (Conductor's event-queue URIs): parsing and validation.

An event (an EVENT task's ``sink``, an EventHandler's ``event``) is ``<type>:<uri>``:

* ``amqp:<queue>[?params]`` (also Conductor's ``amqp_queue:``): a RabbitMQ queue,
  declared durable unless ``durable=false``; published through the default exchange.
* ``amqp_exchange:<exchange>[?params]``: a RabbitMQ exchange (``exchangeType``, default
  ``topic``) published to with ``routingKey`` (default empty); a handler consumes from the
  queue ``bindQueueName`` (default ``bound_to_<exchange>``, Conductor's) bound to it with that key.
  Params (Conductor's AMQPSettings.fromURI): ``exchangeType`` (direct, fanout, topic,
  headers), ``bindQueueName``, ``routingKey``, ``durable``, ``exclusive``, ``autoDelete``
  (true/false), ``deliveryMode`` (1 or 2), ``maxPriority`` (1 to 255: the queue's
  ``x-max-priority`` argument).
* ``nats:<subject>[:<queueGroup>]``: core NATS (no persistence on the broker: a message
  published while no consumer listens is dropped by NATS, as in Conductor); consumers use
  the queue group (default ``EVENT_CONSUMER_GROUP``).
* ``nats_stream:<subject>`` (also Conductor's ``jsm:``): NATS JetStream, a file-backed
  stream per subject; consumers use a durable pull consumer named ``EVENT_CONSUMER_GROUP``.
* ``kafka:<topic>``: a Kafka topic; consumers join the group ``EVENT_CONSUMER_GROUP``.

``parse`` returns a ``Sink`` or raises ``SinkInvalid`` with the reason. No I/O.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from django.conf import settings

# event type prefix -> (broker, kind)
TYPES = {
    "amqp": ("amqp", "queue"),
    "amqp_queue": ("amqp", "queue"),
    "amqp_exchange": ("amqp", "exchange"),
    "nats": ("nats", "core"),
    "nats_stream": ("nats", "stream"),
    "jsm": ("nats", "stream"),
    "kafka": ("kafka", "topic"),
}
# broker -> the setting that enables it
BROKER_SETTINGS = {"amqp": "AMQP_URL", "nats": "NATS_URL", "kafka": "KAFKA_BOOTSTRAP_SERVERS"}

_AMQP_NAME = re.compile(r"^[A-Za-z0-9_.:\-/]{1,255}$")
_AMQP_PARAMS = {"exchangeType", "bindQueueName", "routingKey", "durable", "exclusive", "autoDelete",
                "deliveryMode", "maxPriority"}
_EXCHANGE_TYPES = ("direct", "fanout", "topic", "headers")
_NATS_SUBJECT = re.compile(r"^[^\s.:*>]+(\.[^\s.:*>]+)*$")
_NATS_GROUP = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_KAFKA_TOPIC = re.compile(r"^[A-Za-z0-9._\-]{1,249}$")


class SinkInvalid(ValueError):
    """The event names no usable broker queue; ``str()`` is the reason."""


@dataclass(frozen=True)
class Sink:
    """One parsed broker event: ``event`` as written, ``broker`` (amqp, nats, kafka),
    ``kind`` (queue, exchange, core, stream, topic), ``name`` (queue, exchange, subject
    or topic) and ``options`` (AMQP params; ``queueGroup`` for core NATS)."""

    event: str
    broker: str
    kind: str
    name: str
    options: dict = field(default_factory=dict)

    def option(self, key: str, default=None):
        return self.options.get(key, default)

    def flag(self, key: str, default: bool) -> bool:
        value = self.options.get(key)
        return default if value is None else value.lower() == "true"

    @property
    def consume_from(self) -> str:
        """The queue a handler consumes from: the AMQP queue (for an exchange, its bound
        queue), the NATS subject, the Kafka topic."""
        if self.kind == "exchange":
            return self.option("bindQueueName") or f"bound_to_{self.name}"
        return self.name

    @property
    def stream_name(self) -> str:
        """The JetStream stream that holds a ``nats_stream:`` subject."""
        return "conductor_" + re.sub(r"[^A-Za-z0-9_\-]", "_", self.name)


def is_broker_event(event: object) -> bool:
    """Whether ``event`` starts with a broker type prefix (``amqp:``, ``kafka:`` ...)."""
    return isinstance(event, str) and event.split(":", 1)[0] in TYPES and ":" in event


def enabled(broker: str) -> bool:
    """Whether the broker's setting (``AMQP_URL``, ``NATS_URL``, ``KAFKA_BOOTSTRAP_SERVERS``
    of ``settings.CONDUCTOR``) is set."""
    return bool(settings.CONDUCTOR.get(BROKER_SETTINGS[broker]))


def parse(event: str, *, require_enabled: bool = True) -> Sink:
    """Parse ``<type>:<uri>`` (module docstring). Errors: SinkInvalid naming what is wrong
    (an unknown type, an empty or malformed name, an unknown AMQP param, a broker whose
    setting is not set when ``require_enabled``)."""
    if not isinstance(event, str) or ":" not in event:
        raise SinkInvalid(f"Illegal event {event}")
    prefix, uri = event.split(":", 1)
    if prefix not in TYPES:
        raise SinkInvalid(f"Unknown queue type {prefix}")
    broker, kind = TYPES[prefix]
    if require_enabled and not enabled(broker):
        raise SinkInvalid(f"Unknown queue type {prefix}: the {broker} event queue is not configured "
                          f"(CONDUCTOR_{BROKER_SETTINGS[broker]})")
    if broker == "amqp":
        return _amqp(event, kind, uri)
    if broker == "nats":
        return _nats(event, kind, uri)
    if not _KAFKA_TOPIC.match(uri) or uri in (".", ".."):
        raise SinkInvalid(f"Invalid Kafka topic '{uri}': 1 to 249 of A-Z a-z 0-9 . _ -")
    return Sink(event, broker, kind, uri)


def _amqp(event: str, kind: str, uri: str) -> Sink:
    name, _, query = uri.partition("?")
    if not _AMQP_NAME.match(name):
        raise SinkInvalid(f"Invalid AMQP {kind} name '{name}': 1 to 255 of A-Z a-z 0-9 _ . : - /")
    options: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key not in _AMQP_PARAMS:
            raise SinkInvalid(f"Unknown AMQP parameter '{key}' (one of {', '.join(sorted(_AMQP_PARAMS))})")
        options[key] = value
    if options.get("exchangeType", "topic") not in _EXCHANGE_TYPES:
        raise SinkInvalid(f"Invalid exchangeType '{options['exchangeType']}' (one of {', '.join(_EXCHANGE_TYPES)})")
    for key in ("durable", "exclusive", "autoDelete"):
        if key in options and options[key].lower() not in ("true", "false"):
            raise SinkInvalid(f"Invalid {key} '{options[key]}' (true or false)")
    if options.get("deliveryMode", "2") not in ("1", "2"):
        raise SinkInvalid(f"Invalid deliveryMode '{options['deliveryMode']}' (1 or 2)")
    if "maxPriority" in options and not (options["maxPriority"].isdigit() and 1 <= int(options["maxPriority"]) <= 255):
        raise SinkInvalid(f"Invalid maxPriority '{options['maxPriority']}' (1 to 255)")
    if "bindQueueName" in options and not _AMQP_NAME.match(options["bindQueueName"]):
        raise SinkInvalid(f"Invalid bindQueueName '{options['bindQueueName']}'")
    return Sink(event, "amqp", kind, name, options)


def _nats(event: str, kind: str, uri: str) -> Sink:
    subject, _, group = uri.partition(":")
    if not _NATS_SUBJECT.match(subject):
        raise SinkInvalid(f"Invalid NATS subject '{subject}': dot-separated tokens without spaces or wildcards")
    if group and (kind == "stream" or not _NATS_GROUP.match(group)):
        raise SinkInvalid(f"Invalid NATS queue group '{group}'")
    return Sink(event, "nats", kind, subject, {"queueGroup": group} if group else {})


def check(prefix: str, *, require_enabled: bool = True):
    """The ``QueueType.check`` (``syntax`` with ``require_enabled=False``) of one prefix:
    ``uri -> reason | None``."""
    def _check(uri: str) -> str | None:
        try:
            parse(f"{prefix}:{uri}", require_enabled=require_enabled)
        except SinkInvalid as exc:
            return str(exc)
        return None
    return _check
