"""The broker outbox: one ``BrokerMessage`` row per message to publish on a broker,
written in the transaction of the change that publishes it (an EVENT task's completion,
a workflow status change), sent by the cluster after commit (``apps.brokers.outbox``).

``key`` is the idempotency key (the EVENT task's id: one per task attempt; a status
event's own id): a second write with the same key is ignored, and the key travels with
the message (AMQP ``message_id``, NATS ``Nats-Msg-Id``, Kafka header ``message-id``) so
a consumer can drop a repeat after a crash between the send and its bookkeeping.
``state`` PENDING until SENT; a failed send is retried after ``next_attempt_at`` (epoch
ms), forever (a broker outage delays, never drops). Times are epoch ms.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q


MESSAGE_TABLE = "brokers_message"  # for plain SQL elsewhere (apps.overview)


class BrokerMessage(models.Model):
    """One message to publish (see the module docstring)."""

    class State(models.TextChoices):
        PENDING = "PENDING"
        SENT = "SENT"

    key = models.CharField(max_length=128, unique=True)
    event = models.CharField(max_length=512)
    broker = models.CharField(max_length=16)
    payload = models.JSONField(default=dict)
    message_key = models.CharField(max_length=512, null=True, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.IntegerField(default=0)
    created_time = models.BigIntegerField()
    next_attempt_at = models.BigIntegerField()
    lease_until = models.BigIntegerField(default=0)
    sent_time = models.BigIntegerField(null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)

    class Meta:
        db_table = MESSAGE_TABLE
        indexes = [
            models.Index(fields=["next_attempt_at", "id"], name="broker_msg_due", condition=Q(state="PENDING")),
            models.Index(fields=["event", "id"], name="broker_msg_event"),
        ]
