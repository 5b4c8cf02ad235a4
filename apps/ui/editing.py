"""Saving definitions edited in the operator UI's editor (``/definitions/.../edit``) and the
admin: a changed WorkflowDef becomes the next version; an existing version is replaced in
place only when the operator chose "overwrite" and no execution ran on it.

Every check and write goes through the same services as the REST API
(``POST /api/metadata/workflow`` with its validation, ``PUT``/``POST
/api/metadata/taskdefs``), so the editor reports Conductor's ``validationErrors``
(``{path, message}``, the path naming the field, e.g.
``create.workflowDef.tasks[1].taskReferenceName``). Each save is one ``AuditLog`` row.

Errors raised (``apps.core.errors``): ``InvalidInput`` (400, with validationErrors),
``Conflict`` (409: overwrite of a version that executions use, or a version saved at the
same moment by someone else), ``NotFound`` (404: overwrite of a version that does not exist).
"""
from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from apps.core.errors import Conflict, InvalidInput, NotFound, validation_failed
from apps.engine.models import WorkflowExecution
from apps.metadata import services
from apps.metadata.models import TaskDef, WorkflowDef
from apps.metadata.validation import validate_task_def
from apps.ui import actions

# The path prefix of POST /api/metadata/workflow's validation errors.
WORKFLOW_PATH = "create.workflowDef"
TASK_PATH = "registerTaskDef.arg0[0]"

MODES = ("new_version", "overwrite")
# Saves of a new version that lose the race for its number to another save, then 409.
NEW_VERSION_TRIES = 3
# Audit fields the server sets on a definition; dropped from an edited text before saving.
SERVER_FIELDS = ("createTime", "updateTime")


def executions_using(name: str, version: int) -> int:
    """How many executions (any status) ran on WorkflowDef ``name`` version ``version``."""
    return WorkflowExecution.objects.filter(workflow_name=name, workflow_version=version).count()


def next_version(name: str) -> int:
    """One more than the highest registered version of ``name`` (1 for a new name)."""
    return (WorkflowDef.objects.filter(name=name).aggregate(m=Max("version"))["m"] or 0) + 1


def workflow_def_errors(definition: Any) -> list[dict]:
    """Everything ``POST /api/metadata/workflow`` would refuse in ``definition`` (a parsed
    JSON value): Conductor's validationErrors, ``[]`` when it would be accepted."""
    if not isinstance(definition, dict):
        return [{"path": WORKFLOW_PATH, "message": "a WorkflowDef must be a JSON object"}]
    try:
        normalized = services.workflow_def_validate(workflow_def=definition, path=WORKFLOW_PATH)
    except InvalidInput as exc:
        return list(exc.validation_errors or [{"path": WORKFLOW_PATH, "message": exc.message}])
    return services.sub_workflow_cycle_errors(normalized, WORKFLOW_PATH)


def task_def_errors(definition: Any) -> list[dict]:
    """Everything ``POST /api/metadata/taskdefs`` would refuse in one TaskDef."""
    if not isinstance(definition, dict):
        return [{"path": TASK_PATH, "message": "a TaskDef must be a JSON object"}]
    return validate_task_def(definition, TASK_PATH)


def save_workflow_def(user, definition: Any, *, mode: str = "new_version", base: str = "") -> dict:
    """Save an edited WorkflowDef as ``user`` and audit it.

    ``mode="new_version"``: stored as ``next_version(name)`` whatever ``version`` the JSON
    says (a new name starts at 1); no existing version changes. ``mode="overwrite"``: the
    version the JSON names is replaced in place, refused (Conflict) when any execution
    ran on it. ``base`` (``"name vN"``, the version the editor opened) goes into the audit.
    Returns ``{"name", "version", "mode"}``. Errors: see the module docstring.
    """
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {', '.join(MODES)}")
    errors = workflow_def_errors(definition)
    if errors:
        raise validation_failed(errors)
    # the server stamps these (GET /api/metadata/workflow returns them): never stored from the text
    definition = {k: v for k, v in definition.items() if k not in SERVER_FIELDS}
    name = definition["name"]
    with transaction.atomic():  # the save and its audit row together; the version row locked meanwhile
        if mode == "overwrite":
            version = int(definition.get("version") or 1)
            if not WorkflowDef.objects.select_for_update().filter(name=name, version=version).exists():
                raise NotFound(f"No such workflow found by name: {name}, version: {version}")
            used = executions_using(name, version)
            if used:
                raise Conflict(f"{name} v{version} is used by {used} execution{'s' if used != 1 else ''}: "
                               "save it as a new version instead")
            services.workflow_def_register(workflow_def=definition, overwrite=True)
            action = "definition_overwrite"
        else:
            for attempt in range(NEW_VERSION_TRIES):
                version = next_version(name)
                try:  # Conflict when another save took this number meanwhile: take the next one
                    services.workflow_def_register(workflow_def={**definition, "version": version}, overwrite=False)
                    break
                except Conflict:
                    if attempt == NEW_VERSION_TRIES - 1:
                        raise
            action = "definition_new_version"
        actions.record(user, action, f"WorkflowDef {name} v{version}", {"from": base} if base else {})
    return {"name": name, "version": version, "mode": mode}


def save_task_def(user, definition: Any) -> dict:
    """Create or replace one TaskDef (TaskDefs have no versions in Conductor: ``POST
    /api/metadata/taskdefs`` is an upsert) as ``user``, audited as ``taskdef_save``.
    Returns ``{"name", "created"}``. Errors: InvalidInput with validationErrors."""
    errors = task_def_errors(definition)
    if errors:
        raise validation_failed(errors)
    with transaction.atomic():
        created = not TaskDef.objects.filter(pk=definition["name"]).exists()
        services.task_defs_register(task_defs=[definition])
        actions.record(user, "taskdef_save", f"TaskDef {definition['name']}", {"created": created})
    return {"name": definition["name"], "created": created}
