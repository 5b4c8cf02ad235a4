"""Alert rules, their incidents and the notifications of those incidents (the outbox).

``AlertRule``: what to watch (``workflow_name``, empty for every definition), the
condition (``Condition``) with its parameters (seconds, a rate from 0 to 1) and where to
send it (a webhook URL, e-mail addresses). ``next_evaluate_at`` (epoch ms) is when the
sweeper looks at it again; it is claimed by compare-and-set, so one evaluator at a time.

``AlertIncident``: one firing of a rule for one ``subject`` (a workflow name or a task
queue), OPEN until the condition no longer holds, then RESOLVED. At most one OPEN
incident per (rule, subject) (a partial unique constraint): a rule fires once per
incident however many evaluators run.

``AlertNotification``: one message to send (an incident OPENED or RESOLVED, to one
destination), PENDING until the delivery job has sent it (SENT) or given up (FAILED).
Times are epoch ms.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q


class Condition(models.TextChoices):
    FAILURE = "FAILURE", "a run failed (until a later run completes)"
    FAILURE_RATE = "FAILURE_RATE", "failure rate over a window"
    LONG_RUN = "LONG_RUN", "a run longer than X"
    QUEUE_AGE = "QUEUE_AGE", "a task waiting in its queue longer than X"
    NO_POLLER = "NO_POLLER", "tasks waiting and no worker polled for X"


class AlertRule(models.Model):
    """One alert rule; see the module docstring."""

    name = models.CharField(max_length=255, unique=True)
    workflow_name = models.CharField(max_length=255, blank=True, default="")
    condition = models.CharField(max_length=16, choices=Condition.choices)
    threshold_seconds = models.IntegerField(null=True, blank=True)
    window_seconds = models.IntegerField(null=True, blank=True)
    failure_rate = models.FloatField(null=True, blank=True)
    min_runs = models.IntegerField(default=1)
    task_type = models.CharField(max_length=255, blank=True, default="")
    webhook_url = models.CharField(max_length=2000, blank=True, default="")
    emails = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)
    created_by = models.CharField(max_length=255, blank=True, default="")
    updated_by = models.CharField(max_length=255, blank=True, default="")
    create_time = models.BigIntegerField()
    update_time = models.BigIntegerField()
    next_evaluate_at = models.BigIntegerField(default=0)

    class Meta:
        db_table = "alerts_rule"
        indexes = [models.Index(fields=["next_evaluate_at"], name="alert_rule_due", condition=Q(enabled=True))]

    def __str__(self) -> str:
        return self.name


class AlertIncident(models.Model):
    """One incident of a rule for one subject; see the module docstring."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="incidents")
    subject = models.CharField(max_length=512)
    state = models.CharField(max_length=8, default="OPEN")  # OPEN | RESOLVED
    opened_at = models.BigIntegerField()
    resolved_at = models.BigIntegerField(null=True, blank=True)
    summary = models.CharField(max_length=1024)
    details = models.JSONField(default=dict)

    class Meta:
        db_table = "alerts_incident"
        indexes = [models.Index(fields=["rule", "opened_at"], name="alert_incident_rule"),
                   models.Index(fields=["opened_at"], name="alert_incident_time")]
        constraints = [models.UniqueConstraint(fields=["rule", "subject"], condition=Q(state="OPEN"),
                                               name="alert_incident_one_open")]


class AlertNotification(models.Model):
    """One message of an incident to one destination; see the module docstring."""

    incident = models.ForeignKey(AlertIncident, on_delete=models.CASCADE, related_name="notifications")
    event = models.CharField(max_length=8)  # OPENED | RESOLVED
    channel = models.CharField(max_length=8)  # webhook | email
    target = models.CharField(max_length=2000)
    state = models.CharField(max_length=8, default="PENDING")  # PENDING | SENT | FAILED
    attempts = models.IntegerField(default=0)
    next_attempt_at = models.BigIntegerField()
    last_error = models.CharField(max_length=1024, blank=True, default="")
    sent_at = models.BigIntegerField(null=True, blank=True)
    payload = models.JSONField(default=dict)

    class Meta:
        db_table = "alerts_notification"
        indexes = [models.Index(fields=["next_attempt_at"], name="alert_notification_due",
                                condition=Q(state="PENDING"))]
