"""Read-only admin views of schedules and their runs (schedules are changed through
``/api/scheduler``, the CLI and the Schedules page, where every change is validated)."""
from __future__ import annotations

from django.contrib import admin

from apps.engine.admin import ReadOnlyAdmin
from apps.scheduler.models import ScheduleExecution, WorkflowSchedule


@admin.register(WorkflowSchedule)
class WorkflowScheduleAdmin(ReadOnlyAdmin):
    list_display = ("name", "workflow_name", "paused", "next_run_time", "updated_time")
    list_filter = ("paused",)
    search_fields = ("name", "workflow_name")


@admin.register(ScheduleExecution)
class ScheduleExecutionAdmin(ReadOnlyAdmin):
    list_display = ("execution_id", "schedule_name", "scheduled_time", "state", "workflow_id", "reason")
    list_filter = ("state",)
    search_fields = ("schedule_name", "workflow_id", "execution_id")
