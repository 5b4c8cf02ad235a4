"""Read-only admin view of the status listeners' outbox: what was delivered, what waits
for a retry (``last_error`` says why) and what was given up (FAILED)."""
from __future__ import annotations

from django.contrib import admin

from apps.engine.admin import ReadOnlyAdmin
from apps.listeners.models import Notification


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "event", "workflow_id", "task_id", "state", "attempts", "last_error")
    list_filter = ("state", "kind", "event")
    search_fields = ("workflow_id", "task_id")
