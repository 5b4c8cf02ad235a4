"""Operator UI state: the audit log of actions, which also carries the UI's permissions.

Permissions (``Meta.permissions``; grant them to users or groups in the admin):

* ``ui.view_executions``: see executions, definitions, queues and the audit log;
* ``ui.operate_workflows``: run actions (pause, resume, terminate, restart, retry, rerun,
  skip, complete/fail a task, start a workflow, bulk actions). It implies viewing.

Superusers have both.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditLog(models.Model):
    """One operator action on one target: who, what, on which target, when, and how it
    ended (``ok`` and the engine's message when it failed)."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    username = models.CharField(max_length=150)
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=255, db_index=True)
    params = models.JSONField(default=dict, blank=True)
    ok = models.BooleanField()
    message = models.TextField(blank=True, default="")
    bulk = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "audit log entry"
        verbose_name_plural = "audit log"
        permissions = [
            ("view_executions", "Can view workflow executions, definitions and queues"),
            ("operate_workflows", "Can run actions on workflow executions"),
        ]

    def __str__(self) -> str:
        outcome = "ok" if self.ok else "failed"
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.username} {self.action} {self.target} ({outcome})"
