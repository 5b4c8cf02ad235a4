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
    group = models.CharField(max_length=64, blank=True, default="", db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "audit log entry"
        verbose_name_plural = "audit log"
        permissions = [
            ("view_executions", "Can view workflow executions, definitions and queues"),
            ("operate_workflows", "Can run actions on workflow executions"),
        ]

    @classmethod
    def insert_layout(cls) -> tuple[str, str, tuple]:
        """``(table, primary key column, the concrete fields but the auto primary key)``:
        what a hand-written INSERT of a row needs (``apps.api.audit`` writes the audit row
        of each API write that way, on the worker path)."""
        meta = cls._meta
        return meta.db_table, meta.pk.column, tuple(f for f in meta.concrete_fields if f is not meta.pk)

    # ``group`` of the rows of one bulk action on executions selected on a search page
    # (``apps.ui.views.bulk``); other groups are BulkJob ids.
    SELECTION_GROUP_PREFIX = "sel-"

    @property
    def group_kind(self) -> str:
        """``"selection"`` (a bulk action on a page's selection), ``"job"`` (a bulk-by-query
        job) or ``""`` (not grouped)."""
        if not self.group:
            return ""
        return "selection" if self.group.startswith(self.SELECTION_GROUP_PREFIX) else "job"

    @property
    def workflow_def_target(self) -> tuple[str, int] | None:
        """``(name, version)`` when the target is a WorkflowDef version (``"WorkflowDef <name>
        v<version>"``, written by the definitions editor and the admin), else None."""
        import re

        match = re.fullmatch(r"WorkflowDef (.+) v(\d+)", self.target)
        return (match.group(1), int(match.group(2))) if match else None

    def __str__(self) -> str:
        outcome = "ok" if self.ok else "failed"
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.username} {self.action} {self.target} ({outcome})"


class BulkJob(models.Model):
    """One action over every execution a search matched, run in the background by the
    cluster (``apps.ui.bulkjobs``). ``targets`` are the matching workflow ids resolved when
    the operator confirmed (in the search's order); ``results`` one ``{"target",
    "outcome": "succeeded"|"skipped"|"failed", "message"}`` per target done. Its audit
    rows carry ``group`` = this job's id. Status: QUEUED, RUNNING, CANCELING, CANCELED,
    DONE."""

    id = models.CharField(primary_key=True, max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    username = models.CharField(max_length=150)
    action = models.CharField(max_length=64)
    reason = models.TextField()
    query = models.TextField(blank=True, default="")
    targets = models.JSONField(default=list)
    results = models.JSONField(default=list)
    status = models.CharField(max_length=16, default="QUEUED")

    class Meta:
        ordering = ["-created_at", "-id"]

    def counts(self) -> dict:
        """How many targets succeeded, were skipped, failed, and are left."""
        out = {"succeeded": 0, "skipped": 0, "failed": 0}
        for r in self.results:
            out[r["outcome"]] = out.get(r["outcome"], 0) + 1
        out["done"] = len(self.results)
        out["total"] = len(self.targets)
        out["left"] = out["total"] - out["done"]
        return out
