"""Admin for definitions: the JSON is validated with Conductor's rules on save."""
from __future__ import annotations


import json
from datetime import datetime, timezone

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


class PrettyJSONField(forms.JSONField):
    """The definition JSON indented in a large monospace text area (not one line)."""

    widget = forms.Textarea(attrs={"rows": 32, "cols": 110, "spellcheck": "false",
                                   "style": "font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px;"})

    def prepare_value(self, value):
        if isinstance(value, str):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False, cls=self.encoder)


def ms_text(ms: int | None) -> str:
    """Epoch ms as ``YYYY-MM-DD HH:MM:SS UTC`` (empty for 0/None)."""
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _audit(request, action: str, obj, params: dict | None = None) -> None:
    from apps.ui.actions import record

    target = f"WorkflowDef {obj.name} v{obj.version}" if isinstance(obj, WorkflowDef) else f"{type(obj).__name__} {obj.name}"
    record(request.user, action, target, params)


class NamedDefinitionForm(forms.ModelForm):
    """A definition edited as JSON beside its ``name`` column: the name is copied into the
    JSON, which is then checked by the subclass's ``validate(definition)`` (a list of
    ``{path, message}``) and stored as its ``normalize(definition)``."""

    def clean(self):
        data = super().clean()
        definition = data.get("definition")
        if isinstance(definition, dict):
            definition = {**definition, "name": data.get("name") or definition.get("name")}
            errors = self.validate(definition)
            if errors:
                raise forms.ValidationError(_messages(errors))
            data["definition"] = self.normalize(definition)
        return data


class TaskDefForm(NamedDefinitionForm):
    definition = PrettyJSONField()
    validate = staticmethod(validate_task_def)
    normalize = staticmethod(normalize_task_def)

    class Meta:
        model = TaskDef
        fields = ["name", "definition"]


class StampedAdmin(admin.ModelAdmin):
    """Sets ``create_time``/``update_time`` (epoch ms) of a definition saved in the admin,
    shows them as UTC dates, and records every add, change and delete in the operator
    audit log (``apps.ui.actions.record``)."""

    readonly_fields = ("created", "updated")

    @admin.display(description="created", ordering="create_time")
    def created(self, obj):
        return ms_text(obj.create_time)

    @admin.display(description="updated", ordering="update_time")
    def updated(self, obj):
        return ms_text(obj.update_time)

    def save_model(self, request, obj, form, change):
        now = now_ms()
        obj.update_time = now
        if not obj.create_time:
            obj.create_time = now
        super().save_model(request, obj, form, change)
        _audit(request, "admin_change" if change else "admin_add", obj,
               {"fields": sorted(form.changed_data)} if change else {})

    def delete_model(self, request, obj):
        _audit(request, "admin_delete", obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            _audit(request, "admin_delete", obj)
        super().delete_queryset(request, queryset)


@admin.register(TaskDef)
class TaskDefAdmin(StampedAdmin):
    form = TaskDefForm
    list_display = ("name", "retry_count", "timeout_policy", "updated")
    search_fields = ("name",)

    @admin.display(description="retryCount")
    def retry_count(self, obj):
        return obj.definition.get("retryCount")

    @admin.display(description="timeoutPolicy")
    def timeout_policy(self, obj):
        return obj.definition.get("timeoutPolicy")



class WorkflowDefForm(forms.ModelForm):
    """A WorkflowDef version. Changing the name or the version of a saved one saves a new
    version beside it (the executions that ran on it keep their definition link); that
    name and version must not exist yet. Changing only the JSON edits the version in place,
    refused while any execution ran on it (the error names the next free version)."""

    definition = PrettyJSONField()

    class Meta:
        model = WorkflowDef
        fields = ["name", "version", "definition"]
        help_texts = {"version": "Change it to save your edit as a new version beside this one, which stays as it "
                                 "is (executions that ran on it keep their link). A version that executions ran "
                                 "on cannot be edited in place."}

    def clean(self):
        data = super().clean()
        if self.instance.pk and (data.get("name"), data.get("version")) != (self.instance.name, self.instance.version) \
                and WorkflowDef.objects.filter(name=data.get("name"), version=data.get("version")).exists():
            raise forms.ValidationError({"version": f"{data.get('name')} version {data.get('version')} exists already; "
                                                    "choose a new version number"})
        if self.instance.pk and "definition" in self.changed_data \
                and (data.get("name"), data.get("version")) == (self.instance.name, self.instance.version):
            from apps.ui.editing import executions_using, next_version

            used = executions_using(self.instance.name, self.instance.version)
            if used:  # never mutate a version that executions ran on (their definition links)
                raise forms.ValidationError({"version": (
                    f"{self.instance.name} v{self.instance.version} is used by {used} execution"
                    f"{'s' if used != 1 else ''}: set version {next_version(self.instance.name)} "
                    "to save your change as a new version")})
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
    """WorkflowDef versions; a changed name or version is saved as a new version."""

    form = WorkflowDefForm
    list_display = ("name", "version", "task_count", "updated")
    list_filter = ("name",)
    search_fields = ("name",)

    def save_model(self, request, obj, form, change):
        if change and ("name" in form.changed_data or "version" in form.changed_data):
            # a new version beside the old one, never a rename: executions link to the old
            from_version = f"{form.initial.get('name')} v{form.initial.get('version')}"
            obj.pk = None
            obj._state.adding = True
            obj.create_time = obj.update_time = now_ms()
            obj.save()
            _audit(request, "admin_new_version", obj, {"from": from_version, "fields": sorted(form.changed_data)})
            self.message_user(request, f"Saved as a new version {obj.name} v{obj.version}; {from_version} is unchanged.")
            return
        super().save_model(request, obj, form, change)

    @admin.display(description="tasks")
    def task_count(self, obj):
        return len(obj.definition.get("tasks") or [])





# --- EventHandler --------------------------------------------------------------------------

from apps.metadata.event_services import normalize_event_handler, validate_event_handler  # noqa: E402
from apps.metadata.models import EventHandler  # noqa: E402


class EventHandlerForm(NamedDefinitionForm):
    """Edits the EventHandler JSON; the columns are copied from it on save."""

    normalize = staticmethod(normalize_event_handler)

    class Meta:
        model = EventHandler
        fields = ["name", "definition"]

    @staticmethod
    def validate(definition: dict) -> list[dict]:
        from apps.core.errors import ConductorError

        try:
            return validate_event_handler(definition, "eventHandler")
        except ConductorError as exc:
            raise forms.ValidationError(exc.message) from None


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
