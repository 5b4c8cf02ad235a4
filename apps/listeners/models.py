"""The status listeners' outbox: one ``Notification`` row per delivery to make, written
in the transaction of the change it reports, delivered (and retried) by the cluster.

``kind``: ``WORKFLOW`` (an HTTP POST of the WorkflowSummary), ``TASK`` (an HTTP POST of
the task notification) or ``ARCHIVE`` (removing a finished execution). ``state`` PENDING
until DELIVERED, or FAILED after the last attempt (``last_error`` says why). A delivery
is claimed by compare-and-set on ``lease_until``; ``next_attempt_at`` is when it may be
tried (again). Times are epoch ms.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q


NOTIFICATION_TABLE = "listeners_notification"  # for plain SQL elsewhere (apps.overview)


class Notification(models.Model):
    """One delivery to make (see the module docstring)."""

    class State(models.TextChoices):
        PENDING = "PENDING"
        DELIVERED = "DELIVERED"
        FAILED = "FAILED"

    kind = models.CharField(max_length=16)
    event = models.CharField(max_length=32)
    workflow_id = models.CharField(max_length=64)
    task_id = models.CharField(max_length=64, null=True, blank=True)
    url = models.CharField(max_length=2048, blank=True, default="")
    payload = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.IntegerField(default=0)
    created_time = models.BigIntegerField()
    next_attempt_at = models.BigIntegerField()
    lease_until = models.BigIntegerField(default=0)
    delivered_time = models.BigIntegerField(null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)

    class Meta:
        db_table = NOTIFICATION_TABLE
        indexes = [
            models.Index(fields=["next_attempt_at", "id"], name="notification_due",
                         condition=Q(state="PENDING")),
            models.Index(fields=["workflow_id", "id"], name="notification_by_workflow"),
        ]
