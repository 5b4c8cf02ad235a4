"""Read-only admin view of the broker outbox: what was sent, what waits (the backlog of a
broker outage; ``last_error`` says why)."""
from __future__ import annotations

from django.contrib import admin

from apps.brokers.models import BrokerMessage
from apps.engine.admin import ReadOnlyAdmin


@admin.register(BrokerMessage)
class BrokerMessageAdmin(ReadOnlyAdmin):
    list_display = ("id", "broker", "event", "key", "state", "attempts", "next_attempt_at", "last_error")
    list_filter = ("state", "broker")
    search_fields = ("key", "event")
