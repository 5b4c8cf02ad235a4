"""Admin for definitions: the JSON is validated with Conductor's rules on save."""
from __future__ import annotations


from django import forms
from django.contrib import admin

from apps.core.clock import now_ms
from apps.metadata.models import TaskDef, WorkflowDef
from apps.metadata.validation import (
    normalize_task_def,
    normalize_workflow_def,
    validate_task_def,
    validate_workflow_def,
)


def _messages(errors: list[dict]) -> list[str]:
    return [f"{e['path']}: {e['message']}" for e in errors]


class TaskDefForm(forms.ModelForm):
    class Meta:
        model = TaskDef
        fields = ["name", "definition"]

    def clean(self):
        data = super().clean()
        definition = data.get("definition")
        if isinstance(definition, dict):
            definition = {**definition, "name": data.get("name") or definition.get("name")}
            errors = validate_task_def(definition)
            if errors:
                raise forms.ValidationError(_messages(errors))
            data["definition"] = normalize_task_def(definition)
        return data


class StampedAdmin(admin.ModelAdmin):
    """Sets ``create_time``/``update_time`` (epoch ms) of a definition saved in the admin."""

    def save_model(self, request, obj, form, change):
        now = now_ms()
        obj.update_time = now
        if not obj.create_time:
            obj.create_time = now
        super().save_model(request, obj, form, change)


@admin.register(TaskDef)
class TaskDefAdmin(StampedAdmin):
    form = TaskDefForm
    list_display = ("name", "retry_count", "timeout_policy", "update_time")
    search_fields = ("name",)

    @admin.display(description="retryCount")
    def retry_count(self, obj):
        return obj.definition.get("retryCount")

    @admin.display(description="timeoutPolicy")
    def timeout_policy(self, obj):
        return obj.definition.get("timeoutPolicy")



class WorkflowDefForm(forms.ModelForm):
    class Meta:
        model = WorkflowDef
        fields = ["name", "version", "definition"]

    def clean(self):
        data = super().clean()
        definition = data.get("definition")
        if isinstance(definition, dict):
            definition = {**definition, "name": data.get("name"), "version": data.get("version")}
            errors = validate_workflow_def(definition)
            if errors:
                raise forms.ValidationError(_messages(errors))
            data["definition"] = normalize_workflow_def(definition)
        return data


@admin.register(WorkflowDef)
class WorkflowDefAdmin(StampedAdmin):
    form = WorkflowDefForm
    list_display = ("name", "version", "task_count", "update_time")
    list_filter = ("name",)
    search_fields = ("name",)

    @admin.display(description="tasks")
    def task_count(self, obj):
        return len(obj.definition.get("tasks") or [])





# --- EventHandler --------------------------------------------------------------------------

from apps.metadata.event_services import normalize_event_handler, validate_event_handler  # noqa: E402
from apps.metadata.models import EventHandler  # noqa: E402


class EventHandlerForm(forms.ModelForm):
    """Edits the EventHandler JSON; the columns are copied from it on save."""

    class Meta:
        model = EventHandler
        fields = ["name", "definition"]

    def clean(self):
        from apps.core.errors import ConductorError

        data = super().clean()
        definition = data.get("definition")
        if isinstance(definition, dict):
            definition = {**definition, "name": data.get("name") or definition.get("name")}
            try:
                errors = validate_event_handler(definition, "eventHandler")
            except ConductorError as exc:
                raise forms.ValidationError(exc.message) from None
            if errors:
                raise forms.ValidationError(_messages(errors))
            data["definition"] = normalize_event_handler(definition)
        return data


@admin.register(EventHandler)
class EventHandlerAdmin(admin.ModelAdmin):
    form = EventHandlerForm
    list_display = ("name", "event", "active", "action_names", "update_time")
    list_filter = ("active",)
    search_fields = ("name", "event")

    @admin.display(description="actions")
    def action_names(self, obj):
        return ", ".join(str(a.get("action")) for a in obj.actions or [])

    def save_model(self, request, obj, form, change):
        definition = obj.definition
        obj.event = definition["event"]
        obj.condition = definition.get("condition") or ""
        obj.evaluator_type = definition.get("evaluatorType") or ""
        obj.actions = definition["actions"]
        obj.active = definition["active"]
        now = now_ms()
        obj.update_time = now
        if not obj.create_time:
            obj.create_time = now
        super().save_model(request, obj, form, change)
