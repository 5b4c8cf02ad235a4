"""Read-only admin views of executions (operators act through the API and the UI)."""
from __future__ import annotations

from django.contrib import admin

from apps.engine.models import PollData, TaskExecLog, TaskExecution, WorkflowExecution


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class TaskInline(admin.TabularInline):
    model = TaskExecution
    fields = ("seq", "reference_task_name", "task_type", "status", "retry_count", "worker_id",
              "reason_for_incompletion")
    readonly_fields = fields
    ordering = ("seq",)
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WorkflowExecution)
class WorkflowExecutionAdmin(ReadOnlyAdmin):
    list_display = ("workflow_id", "workflow_name", "workflow_version", "status", "correlation_id", "create_time")
    list_filter = ("status", "workflow_name")
    search_fields = ("workflow_id", "correlation_id", "workflow_name")
    inlines = [TaskInline]


@admin.register(TaskExecution)
class TaskExecutionAdmin(ReadOnlyAdmin):
    list_display = ("task_id", "reference_task_name", "task_type", "status", "retry_count", "workflow_id")
    list_filter = ("status", "task_type")
    search_fields = ("task_id", "reference_task_name", "workflow__workflow_id")


@admin.register(PollData)
class PollDataAdmin(ReadOnlyAdmin):
    list_display = ("queue_name", "domain", "worker_id", "last_poll_time")


@admin.register(TaskExecLog)
class TaskExecLogAdmin(ReadOnlyAdmin):
    list_display = ("task_id", "created_time", "log")
