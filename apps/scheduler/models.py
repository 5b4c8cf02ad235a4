"""Stored schedules and their execution records.

``WorkflowSchedule.data`` is the schedule as the client saved it, in Conductor's
camelCase (``name``, ``cronExpression``, ``zoneId``, ``cronSchedules``,
``runCatchupScheduleInstances``, ``paused``, ``pausedReason``, ``startWorkflowRequest``,
``scheduleStartTime``, ``scheduleEndTime``, ``description``, ``tags`` and the audit fields);
the columns beside it are what the firing loop queries. ``cron_next`` holds, per effective
cron entry (``cronSchedules`` when non-empty, else ``cronExpression``/``zoneId``), the next
slot (epoch ms, or null when that entry has no more runs); ``next_run_time`` is their
minimum. ``version`` grows on every write: the loop claims a slot by compare-and-set on it,
so a slot fires once however many clusters run.

``ScheduleExecution`` is Conductor's ``WorkflowScheduleExecutionModel``: one row per fired
slot (``state`` EXECUTED, or FAILED with ``reason``), unique per (schedule, cron, slot).
Times are epoch ms.
"""
from __future__ import annotations

from django.db import models
from django.db.models import Q


class WorkflowSchedule(models.Model):
    """One schedule (Conductor's ``WorkflowSchedule``); see the module docstring."""

    name = models.CharField(primary_key=True, max_length=255)
    workflow_name = models.CharField(max_length=255, db_index=True)
    data = models.JSONField()
    paused = models.BooleanField(default=False)
    next_run_time = models.BigIntegerField(null=True, blank=True)
    cron_next = models.JSONField(default=list)
    version = models.BigIntegerField(default=0)
    create_time = models.BigIntegerField()
    updated_time = models.BigIntegerField()

    class Meta:
        db_table = "scheduler_schedule"
        indexes = [models.Index(fields=["next_run_time"], name="schedule_due",
                                condition=Q(paused=False, next_run_time__isnull=False))]

    def __str__(self) -> str:
        return self.name


class ScheduleExecution(models.Model):
    """One fired slot (Conductor's ``WorkflowScheduleExecutionModel``)."""

    class State(models.TextChoices):
        POLLED = "POLLED"
        FAILED = "FAILED"
        EXECUTED = "EXECUTED"

    execution_id = models.CharField(primary_key=True, max_length=64)
    schedule_name = models.CharField(max_length=255)
    workflow_name = models.CharField(max_length=255, null=True, blank=True)
    workflow_id = models.CharField(max_length=64, null=True, blank=True)
    reason = models.CharField(max_length=1024, null=True, blank=True)
    stack_trace = models.TextField(null=True, blank=True)
    state = models.CharField(max_length=16, choices=State.choices)
    scheduled_time = models.BigIntegerField()
    execution_time = models.BigIntegerField(null=True, blank=True)
    start_workflow_request = models.JSONField(null=True, blank=True)
    zone_id = models.CharField(max_length=64, default="UTC")
    cron = models.CharField(max_length=320, default="")

    class Meta:
        db_table = "scheduler_execution"
        indexes = [models.Index(fields=["schedule_name", "scheduled_time"], name="sched_exec_by_schedule"),
                   models.Index(fields=["scheduled_time"], name="sched_exec_time")]
        constraints = [models.UniqueConstraint(fields=["schedule_name", "cron", "scheduled_time"],
                                               name="sched_exec_once_per_slot")]


class SchedulerSwitch(models.Model):
    """Server-wide switches of the scheduler (``GET /api/scheduler/admin/pause|resume``):
    one row, ``name="scheduler"``; ``paused`` stops all firing until resumed."""

    name = models.CharField(primary_key=True, max_length=32)
    paused = models.BooleanField(default=False)

    class Meta:
        db_table = "scheduler_switch"
