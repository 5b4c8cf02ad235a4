"""One client per broker, publishing and consuming (pika, nats-py, confluent-kafka, each
an optional extra: ``pip install 'conductor-web[amqp]'`` ...).

A client is owned by one thread (the outbox's deliverer or the consumer thread) and
connects lazily; any broker error closes it and is raised as ``BrokerUnavailable``, so
the next call connects again (a broker restart costs one failed attempt).

Publishing (``publish(sink, body, message_id, key=None, headers=None)``): returns once
the broker has the message (AMQP publisher confirms, a JetStream ack, a Kafka ack from
all in-sync replicas with the idempotent producer; core NATS: after a flush).
``message_id`` travels as AMQP ``message_id``/``correlation_id`` (Conductor's), NATS
``Nats-Msg-Id`` (JetStream drops a repeat within its duplicate window) and the Kafka
header ``message-id``.

Consuming (``fetch(sinks, max_messages, timeout_s)``): ``Received`` messages of the
given sinks; each must be ``ack``-ed by the consumer once handled. An unacknowledged
message comes back after a reconnect (AMQP requeue, JetStream's ack wait, the Kafka
group's committed offset). Consumers share one group across processes and clusters:
the AMQP queue, the NATS queue group / JetStream durable consumer and the Kafka group id
are ``EVENT_CONSUMER_GROUP``. Timeouts in seconds unless named ``_ms``.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from apps.brokers.sinks import Sink

log = logging.getLogger(__name__)


class BrokerUnavailable(Exception):
    """A publish or fetch failed (broker down, refused, timed out); ``str()`` says why."""


@dataclass
class Received:
    """One consumed message: the ``event`` it came on, the broker's ``message_id`` (the
    publisher's idempotency key when it set one, else a broker position), the raw
    ``body`` and ``ack()``."""

    event: str
    message_id: str
    body: bytes
    ack: Callable[[], None]


def _conf(key: str):
    return settings.CONDUCTOR[key]


def timeout_s() -> float:
    return _conf("BROKER_TIMEOUT_MS") / 1000


# --- AMQP (RabbitMQ), pika ------------------------------------------------------------------

class AmqpClient:
    """RabbitMQ through pika's BlockingConnection (``AMQP_URL``, an ``amqp://`` URL)."""

    def __init__(self, url: str | None = None):
        self.url = url or _conf("AMQP_URL")
        self.connection = None
        self.channel = None
        self.declared: set[str] = set()

    def close(self) -> None:
        try:
            if self.connection is not None and self.connection.is_open:
                self.connection.close()
        except Exception:  # noqa: BLE001 - closing a dead connection
            pass
        self.connection = self.channel = None
        self.declared = set()

    def _channel(self):
        import pika

        if self.channel is None or self.channel.is_closed or self.connection is None or self.connection.is_closed:
            self.close()
            params = pika.URLParameters(self.url)
            params.socket_timeout = params.stack_timeout = params.blocked_connection_timeout = timeout_s()
            params.connection_attempts = 1
            self.connection = pika.BlockingConnection(params)
            self.channel = self.connection.channel()
            self.channel.confirm_delivery()
            self.channel.basic_qos(prefetch_count=_conf("BROKER_FETCH_MAX"))
        return self.channel

    def _declare(self, ch, sink: Sink, consumer: bool) -> str:
        """Declare what ``sink`` needs; returns the queue to consume from."""
        durable = sink.flag("durable", True)
        auto_delete = sink.flag("autoDelete", False)
        exclusive = sink.flag("exclusive", False)
        if sink.kind == "queue":
            if sink.event not in self.declared:
                priority = sink.option("maxPriority")
                ch.queue_declare(sink.name, durable=durable, exclusive=exclusive, auto_delete=auto_delete,
                                 arguments={"x-max-priority": int(priority)} if priority else None)
                self.declared.add(sink.event)
            return sink.name
        queue = sink.consume_from
        if sink.event not in self.declared:
            ch.exchange_declare(sink.name, exchange_type=sink.option("exchangeType", "topic"), durable=durable,
                                auto_delete=auto_delete)
            if consumer or sink.option("bindQueueName"):
                ch.queue_declare(queue, durable=durable, exclusive=exclusive, auto_delete=auto_delete)
                ch.queue_bind(queue, sink.name, routing_key=sink.option("routingKey", ""))
            self.declared.add(sink.event)
        return queue

    def _guard(self, fn):
        import pika.exceptions

        try:
            return fn()
        except (pika.exceptions.AMQPError, OSError) as exc:
            self.close()
            raise BrokerUnavailable(f"{type(exc).__name__}: {exc}") from exc

    def publish(self, sink: Sink, body: bytes, message_id: str, key: str | None = None,
                headers: dict | None = None) -> None:
        import pika

        def send():
            ch = self._channel()
            self._declare(ch, sink, consumer=False)
            props = pika.BasicProperties(message_id=message_id, correlation_id=message_id,
                                         content_type="application/json", content_encoding="UTF-8",
                                         delivery_mode=int(sink.option("deliveryMode", "2")), headers=headers)
            if sink.kind == "queue":
                ch.basic_publish("", sink.name, body, properties=props)
            else:
                ch.basic_publish(sink.name, sink.option("routingKey", ""), body, properties=props)
        self._guard(send)

    def fetch(self, sinks: list[Sink], max_messages: int, timeout: float) -> list[Received]:
        def get():
            ch = self._channel()
            out: list[Received] = []
            for sink in sinks:
                queue = self._declare(ch, sink, consumer=True)
                while len(out) < max_messages:
                    method, props, body = ch.basic_get(queue, auto_ack=False)
                    if method is None:
                        break
                    tag = method.delivery_tag
                    mid = props.message_id or f"amqp:{queue}:{method.delivery_tag}:{method.redelivered}"
                    out.append(Received(sink.event, mid, body, lambda tag=tag, ch=ch: self._guard(
                        lambda: ch.basic_ack(tag))))
            if not out:
                self.connection.sleep(timeout)
            return out
        return self._guard(get)


# --- NATS, nats-py (asyncio, on a loop owned by the client) --------------------------------

class NatsClient:
    """NATS through nats-py (``NATS_URL``, ``nats://host:port``): core subjects and
    JetStream streams. Runs its coroutines on its own event loop (the owning thread's)."""

    def __init__(self, url: str | None = None):
        self.url = url or _conf("NATS_URL")
        self.loop = asyncio.new_event_loop()
        self.nc = None
        self.js = None
        self.subs: dict[str, object] = {}
        self.streams: set[str] = set()

    def _run(self, coro):
        import nats.errors

        try:
            return self.loop.run_until_complete(asyncio.wait_for(coro, timeout_s() * 3))
        except (nats.errors.Error, OSError, asyncio.TimeoutError) as exc:
            self.close()
            raise BrokerUnavailable(f"{type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        nc, self.nc, self.js = self.nc, None, None
        self.subs, self.streams = {}, set()
        if nc is not None and not nc.is_closed:
            try:
                self.loop.run_until_complete(asyncio.wait_for(nc.close(), 2))
            except Exception:  # noqa: BLE001 - closing a dead connection
                pass

    async def _connect(self):
        import nats

        if self.nc is None or self.nc.is_closed or not self.nc.is_connected:
            if self.nc is not None:
                await self.nc.close()
            self.subs, self.streams = {}, set()
            self.nc = await nats.connect(self.url, connect_timeout=timeout_s(), allow_reconnect=False,
                                         max_reconnect_attempts=0)
            self.js = self.nc.jetstream(timeout=timeout_s())
        return self.nc

    async def _stream(self, sink: Sink) -> None:
        import nats.js.errors
        from nats.js.api import StorageType

        if sink.stream_name in self.streams:
            return
        try:
            await self.js.stream_info(sink.stream_name)
        except nats.js.errors.NotFoundError:
            await self.js.add_stream(name=sink.stream_name, subjects=[sink.name], storage=StorageType.FILE)
        self.streams.add(sink.stream_name)

    def publish(self, sink: Sink, body: bytes, message_id: str, key: str | None = None,
                headers: dict | None = None) -> None:
        async def send():
            nc = await self._connect()
            all_headers = {**(headers or {}), "Nats-Msg-Id": message_id}
            if sink.kind == "stream":
                await self._stream(sink)
                await self.js.publish(sink.name, body, headers=all_headers)
            else:
                await nc.publish(sink.name, body, headers=all_headers)
                await nc.flush(timeout=timeout_s())
        self._run(send())

    def fetch(self, sinks: list[Sink], max_messages: int, timeout: float) -> list[Received]:
        import nats.errors

        group = _conf("EVENT_CONSUMER_GROUP")

        async def get():
            nc = await self._connect()
            out: list[Received] = []
            for sink in sinks:
                sub = self.subs.get(sink.event)
                if sub is None:
                    if sink.kind == "stream":
                        await self._stream(sink)
                        sub = await self.js.pull_subscribe(sink.name, durable=group, stream=sink.stream_name)
                    else:
                        sub = await nc.subscribe(sink.name, queue=sink.option("queueGroup") or group)
                    self.subs[sink.event] = sub
                want = max_messages - len(out)
                if want <= 0:
                    break
                if sink.kind == "stream":
                    try:
                        msgs = await sub.fetch(want, timeout=timeout / len(sinks))
                    except nats.errors.TimeoutError:
                        msgs = []
                else:
                    msgs = []
                    while len(msgs) < want:
                        try:
                            msgs.append(await sub.next_msg(timeout=timeout / len(sinks) if not msgs else 0.001))
                        except nats.errors.TimeoutError:
                            break
                for msg in msgs:
                    hdrs = msg.headers or {}
                    mid = hdrs.get("Nats-Msg-Id")
                    if not mid and sink.kind == "stream":
                        mid = f"{sink.stream_name}:{msg.metadata.sequence.stream}"
                    out.append(Received(sink.event, mid or "", msg.data, self._acker(msg, sink)))
            return out
        return self._run(get())

    def _acker(self, msg, sink: Sink) -> Callable[[], None]:
        if sink.kind != "stream":
            return lambda: None
        return lambda: self._run(msg.ack_sync(timeout=timeout_s()))


# --- Kafka, confluent-kafka ---------------------------------------------------------------

class KafkaClient:
    """Kafka through confluent-kafka (``KAFKA_BOOTSTRAP_SERVERS``, ``host:port,...``):
    the idempotent producer (acks=all) and a consumer of the group
    ``EVENT_CONSUMER_GROUP`` committing each message's offset once it is acknowledged."""

    def __init__(self, bootstrap: str | None = None, *, request_timeout_ms: int | None = None,
                 max_block_ms: int | None = None):
        self.bootstrap = bootstrap or _conf("KAFKA_BOOTSTRAP_SERVERS")
        self.request_timeout_ms = request_timeout_ms or _conf("BROKER_TIMEOUT_MS")
        self.max_block_ms = max_block_ms or _conf("BROKER_TIMEOUT_MS")
        self.producer = None
        self.consumer = None
        self.topics: tuple[str, ...] = ()

    def close(self) -> None:
        if self.producer is not None:
            try:
                self.producer.purge()
                self.producer.flush(0)
            except Exception:  # noqa: BLE001
                pass
        if self.consumer is not None:
            try:
                self.consumer.close()
            except Exception:  # noqa: BLE001
                pass
        self.producer = self.consumer = None
        self.topics = ()

    def publish(self, sink: Sink | None, body: bytes, message_id: str | None, key=None,
                headers: dict | None = None, topic: str | None = None) -> None:
        from confluent_kafka import KafkaException, Producer

        if self.producer is None:
            self.producer = Producer({
                "bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                "request.timeout.ms": self.request_timeout_ms,
                "message.timeout.ms": self.request_timeout_ms + self.max_block_ms,
                "socket.connection.setup.timeout.ms": max(1000, self.max_block_ms),
            })
        outcome: list = []
        hdrs = [(k, str(v).encode()) for k, v in (headers or {}).items()]
        if message_id:
            hdrs.append(("message-id", message_id.encode()))
        try:
            self.producer.produce(topic or sink.name, value=body, key=key, headers=hdrs,
                                  on_delivery=lambda err, msg: outcome.append(err))
            left = self.producer.flush((self.request_timeout_ms + self.max_block_ms) / 1000 + 1)
        except (KafkaException, BufferError) as exc:
            self.close()
            raise BrokerUnavailable(str(exc)) from exc
        if left or not outcome or outcome[0] is not None:
            reason = str(outcome[0]) if outcome and outcome[0] is not None else "delivery timed out"
            self.close()
            raise BrokerUnavailable(reason)

    def fetch(self, sinks: list[Sink], max_messages: int, timeout: float) -> list[Received]:
        from confluent_kafka import Consumer, KafkaException

        topics = tuple(sorted({s.name for s in sinks}))
        events = {s.name: s.event for s in sinks}
        try:
            if self.consumer is None:
                self.consumer = Consumer({
                    "bootstrap.servers": self.bootstrap, "group.id": _conf("EVENT_CONSUMER_GROUP"),
                    "enable.auto.commit": False, "auto.offset.reset": "earliest",
                    "allow.auto.create.topics": True, "session.timeout.ms": 10_000,
                })
            if topics != self.topics:
                self.consumer.subscribe(list(topics))
                self.topics = topics
            msgs = self.consumer.consume(num_messages=max_messages, timeout=timeout)
        except KafkaException as exc:
            self.close()
            raise BrokerUnavailable(str(exc)) from exc
        out: list[Received] = []
        for msg in msgs:
            if msg.error():
                if not msg.error().fatal():  # e.g. a topic not created yet: the next fetch sees it
                    log.debug("kafka consumer: %s", msg.error())
                    continue
                self.close()
                raise BrokerUnavailable(str(msg.error()))
            hdrs = dict(msg.headers() or [])
            mid = hdrs.get("message-id")
            mid = mid.decode() if mid else f"{msg.topic()}:{msg.partition()}:{msg.offset()}"
            out.append(Received(events.get(msg.topic(), f"kafka:{msg.topic()}"), mid, msg.value() or b"",
                                self._acker(msg)))
        return out

    def _acker(self, msg) -> Callable[[], None]:
        def ack():
            from confluent_kafka import KafkaException

            try:
                self.consumer.commit(message=msg, asynchronous=False)
            except KafkaException as exc:
                self.close()
                raise BrokerUnavailable(str(exc)) from exc
        return ack


CLIENTS = {"amqp": AmqpClient, "nats": NatsClient, "kafka": KafkaClient}
