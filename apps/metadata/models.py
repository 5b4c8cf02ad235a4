"""Definitions: TaskDef and versioned WorkflowDef.

Each row keeps the whole definition as Conductor's camelCase JSON in ``definition``
(the API shape, stored once), beside the lookup columns; ``KeyOrderJSONField`` keeps the
keys in the order the user wrote them on PostgreSQL too (``json``, not ``jsonb``). Executions never read these
rows after they start: a workflow execution keeps its own snapshot of the WorkflowDef.
"""
from __future__ import annotations

from django.db import models

from apps.core.jsonfield import KeyOrderJSONField


class TaskDef(models.Model):
    """A registered TaskDef (retries, timeouts, rate limits of one task name).

    ``definition`` is the normalised camelCase TaskDef JSON (defaults filled in).
    Times are epoch ms.
    """

    name = models.CharField(max_length=255, primary_key=True)
    definition = KeyOrderJSONField()
    create_time = models.BigIntegerField()
    update_time = models.BigIntegerField()

    class Meta:
        db_table = "metadata_task_def"
        ordering = ["name"]
        verbose_name = "TaskDef"

    def __str__(self) -> str:
        return self.name


class WorkflowDef(models.Model):
    """One version of a WorkflowDef; (name, version) is unique.

    ``definition`` is the normalised camelCase WorkflowDef JSON. Times are epoch ms.
    """

    name = models.CharField(max_length=255)
    version = models.IntegerField()
    definition = KeyOrderJSONField()
    create_time = models.BigIntegerField()
    update_time = models.BigIntegerField()

    class Meta:
        db_table = "metadata_workflow_def"
        ordering = ["name", "version"]
        verbose_name = "WorkflowDef"
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="workflow_def_name_version")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class EventHandler(models.Model):
    """A Conductor EventHandler: run ``actions`` for every message on ``event`` whose
    ``condition`` holds, while ``active``.

    ``definition`` is the normalised camelCase EventHandler JSON as the API returns it
    (``name, event, condition?, evaluatorType?, actions, active``); ``event``, ``active``
    and ``condition``/``evaluator_type`` are copies kept as columns for look-ups. ``name``
    is unique. ``active`` defaults to False, as Conductor's. Times are epoch ms.
    """

    name = models.CharField(max_length=255, primary_key=True)
    event = models.CharField(max_length=512)
    condition = models.TextField(blank=True, default="")
    evaluator_type = models.CharField(max_length=64, blank=True, default="")
    actions = models.JSONField(default=list)
    active = models.BooleanField(default=False)
    definition = KeyOrderJSONField()
    create_time = models.BigIntegerField()
    update_time = models.BigIntegerField()

    class Meta:
        db_table = "metadata_event_handler"
        ordering = ["name"]
        verbose_name = "EventHandler"
        indexes = [
            # event processing and GET /event/{event}: the handlers of one event
            models.Index(fields=["event", "active"], name="event_handler_event"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.event})"



class NamedEntry(models.Model):
    """Base of the stores' rows, one per name (a key of ``[a-zA-Z0-9_-]+``). Times are epoch ms."""

    name = models.CharField(max_length=255, primary_key=True)
    create_time = models.BigIntegerField()
    update_time = models.BigIntegerField()

    class Meta:
        abstract = True
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class EnvironmentVariable(NamedEntry):
    """One entry of the environment store that ``${workflow.env.NAME}`` reads (Conductor's
    EnvironmentDAO; ``GET/PUT/DELETE /api/environment[/{key}]``)."""

    value = models.TextField()

    class Meta(NamedEntry.Meta):
        db_table = "metadata_environment_variable"


class Secret(NamedEntry):
    """One secret of the secrets store (``/api/secrets``), its value encrypted at rest:
    ``token`` is a Fernet token of the UTF-8 value (apps.metadata.secrets)."""

    token = models.TextField()

    class Meta(NamedEntry.Meta):
        db_table = "metadata_secret"


class MetadataTag(models.Model):
    """A tag ``{key, value}`` on a WorkflowDef name (all its versions) or a TaskDef: the
    Orkes metadata tags the SDKs read and write (``/api/metadata/{workflow,task}/{name}/tags``)."""

    target_type = models.CharField(max_length=16)  # WORKFLOW_DEF or TASK_DEF
    target_name = models.CharField(max_length=255)
    key = models.CharField(max_length=255)
    value = models.JSONField(null=True)  # TagObject.value is any JSON; TagString's a string

    class Meta:
        db_table = "metadata_tag"
        indexes = [models.Index(fields=["target_type", "target_name"], name="tag_target")]
