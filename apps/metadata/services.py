"""Writes and reads of definitions (TaskDef, WorkflowDef).

Shapes: definitions in and out are Conductor's camelCase JSON dicts. Times are epoch ms
from the clock. Errors: ``InvalidInput`` (400, with validationErrors), ``NotFound`` (404),
``Conflict`` (409), with Conductor's message texts (``MetadataServiceImpl``).
"""
from __future__ import annotations

import json

from django.db import IntegrityError, transaction

from apps.core.clock import now_ms
from apps.core.errors import Conflict, InvalidInput, NotFound, validation_failed
from apps.metadata.models import MetadataTag, TaskDef, WorkflowDef
from apps.metadata.validation import (
    iter_workflow_tasks,
    normalize_task_def,
    normalize_workflow_def,
    validate_task_def,
    validate_workflow_def,
)


def _with_audit(definition: dict, create_time: int, update_time: int | None) -> dict:
    out = dict(definition)
    out["createTime"] = create_time
    if update_time is not None:
        out["updateTime"] = update_time
    return out


def _check_list(items, what: str, path: str, validate) -> None:
    """A request body that must be a non-empty list of definitions, each valid.
    Errors: InvalidInput ``<what> is empty`` at ``path``; the validation errors of every
    item (``path[i]...``), all at once."""
    if not isinstance(items, list) or not items:
        raise InvalidInput(f"{what} is empty", validation_errors=[{"path": path, "message": f"{what} is empty"}])
    errors = []
    for i, item in enumerate(items):
        errors += validate(item, f"{path}[{i}]")
    if errors:
        raise validation_failed(errors)


# --- TaskDef ---------------------------------------------------------------------------

def task_defs_register(*, task_defs: list) -> None:
    """Create or replace TaskDefs (``POST /api/metadata/taskdefs``, a list; an upsert).

    Errors: InvalidInput ``TaskDefList is empty`` or validation errors (nothing stored).
    """
    _check_list(task_defs, "TaskDefList", "registerTaskDef.arg0", validate_task_def)
    now = now_ms()
    with transaction.atomic():
        for task_def in task_defs:
            normalized = normalize_task_def(task_def)
            existing = TaskDef.objects.filter(pk=normalized["name"]).first()
            create_time = existing.create_time if existing else now
            TaskDef.objects.update_or_create(
                name=normalized["name"],
                defaults={"definition": normalized, "create_time": create_time, "update_time": now},
            )


def task_def_update(*, task_def: dict) -> None:
    """Replace one existing TaskDef (``PUT /api/metadata/taskdefs``).

    Errors: validation 400; NotFound ``No such task by name %s``.
    """
    errors = validate_task_def(task_def, "updateTaskDef.arg0")
    if errors:
        raise validation_failed(errors)
    normalized = normalize_task_def(task_def)
    updated = TaskDef.objects.filter(pk=normalized["name"]).update(definition=normalized, update_time=now_ms())
    if not updated:
        raise NotFound(f"No such task by name {normalized['name']}")


def task_def_get(*, name: str) -> dict:
    """One TaskDef as camelCase JSON. Errors: NotFound ``No such taskType found by name: %s``."""
    row = TaskDef.objects.filter(pk=name).first()
    if row is None:
        raise NotFound(f"No such taskType found by name: {name}")
    return _with_audit(row.definition, row.create_time, row.update_time)


def task_def_list() -> list[dict]:
    """All TaskDefs, ordered by name."""
    return [_with_audit(r.definition, r.create_time, r.update_time) for r in TaskDef.objects.all()]


def task_def_delete(*, name: str) -> None:
    """Delete a TaskDef. Errors: NotFound ``No such task definition``."""
    deleted, _ = TaskDef.objects.filter(pk=name).delete()
    if not deleted:
        raise NotFound("No such task definition")


def task_defs_by_name(names: set[str]) -> dict[str, dict]:
    """Registered TaskDefs for the given names as ``{name: definition}`` (one query)."""
    if not names:
        return {}
    return {r.name: r.definition for r in TaskDef.objects.filter(name__in=names)}


# --- WorkflowDef ------------------------------------------------------------------------

def workflow_def_validate(*, workflow_def: dict, path: str = "workflowDef") -> dict:
    """Validate and normalise a WorkflowDef; return the normalised copy.

    Errors: InvalidInput (400) with every validation error found.
    """
    errors = validate_workflow_def(workflow_def, path)
    if errors:
        raise validation_failed(errors)
    return normalize_workflow_def(workflow_def)


def _sub_workflow_refs(definition: dict):
    """``(taskReferenceName, name, version or None, inline def or None)`` of every
    SUB_WORKFLOW task whose target is known before run time (no ``${...}`` name)."""
    for task in iter_workflow_tasks(definition.get("tasks")):
        if task.get("type") != "SUB_WORKFLOW" or not isinstance(task.get("subWorkflowParam"), dict):
            continue
        param = task["subWorkflowParam"]
        inline = param.get("workflowDefinition")
        if isinstance(inline, dict):
            yield task.get("taskReferenceName"), None, None, inline
            continue
        name = param.get("name")
        if isinstance(name, str) and name and "${" not in name:
            version = param.get("version")
            yield task.get("taskReferenceName"), name, int(version) if isinstance(version, int) else None, None


def sub_workflow_cycle_errors(definition: dict, path: str, pending: dict[str, dict] | None = None) -> list[dict]:
    """Validation errors for each SUB_WORKFLOW of ``definition`` (normalised, about to be
    stored) that would start ``definition`` again, directly or through the registered
    definitions (and ``pending``: ``{name: definition}`` stored in the same request): a
    reference by name with no version (the latest, which this one becomes) or with this
    version closes the cycle. References computed at run time (``${...}``) are not
    followed; the engine bounds those (``MAX_INLINE_NESTING`` of SUB_WORKFLOW)."""
    target, target_version = definition["name"], int(definition.get("version") or 1)
    pending = pending or {}
    errors = []

    def reaches(name, version, inline, seen) -> bool:
        if inline is not None:
            child = inline
        else:
            if name == target and version in (None, target_version):
                return True
            key = (name, version)
            if key in seen:
                return False
            seen.add(key)
            if name in pending and version is None:
                child = pending[name]
            else:
                row = workflow_def_row(name=name, version=version)
                if row is None:
                    return False
                child = row.definition
        return any(reaches(n, v, i, seen) for _, n, v, i in _sub_workflow_refs(child))

    for ref, name, version, inline in _sub_workflow_refs(definition):
        if reaches(name, version, inline, set()):
            errors.append({"path": f"{path}.tasks", "message": (
                f"SUB_WORKFLOW task {ref} would start workflow {target} again: a workflow cannot start itself, "
                "directly or through its sub-workflows")})
    return errors


def workflow_def_register(*, workflow_def: dict, overwrite: bool = False) -> None:
    """Create one WorkflowDef version (``POST /api/metadata/workflow``).

    Errors: validation 400 (a SUB_WORKFLOW that would start this workflow again
    included); Conflict ``Workflow with {name}.{version} already exists!`` when that
    version exists and ``overwrite`` is false.
    """
    normalized = workflow_def_validate(workflow_def=workflow_def, path="create.workflowDef")
    cycles = sub_workflow_cycle_errors(normalized, "create.workflowDef")
    if cycles:
        raise validation_failed(cycles)
    now = now_ms()
    name, version = normalized["name"], int(normalized["version"])
    with transaction.atomic():
        existing = WorkflowDef.objects.select_for_update().filter(name=name, version=version).first()
        if existing and not overwrite:
            raise Conflict(f"Workflow with {name}.{version} already exists!")
        if existing:
            existing.definition = normalized
            existing.update_time = now
            existing.save(update_fields=["definition", "update_time"])
        else:
            try:
                with transaction.atomic():
                    WorkflowDef.objects.create(name=name, version=version, definition=normalized,
                                               create_time=now, update_time=now)
            except IntegrityError as exc:
                raise Conflict(f"Workflow with {name}.{version} already exists!") from exc


def workflow_defs_update(*, workflow_defs: list) -> dict:
    """Upsert a list of WorkflowDefs (``PUT /api/metadata/workflow``); all or nothing.

    Returns Conductor's ``BulkResponse`` ``{"bulkErrorResults": {}, "bulkSuccessfulResults": [names]}``.
    Errors: InvalidInput ``WorkflowDefList is empty``; validation 400 if any def is invalid.
    """
    _check_list(workflow_defs, "WorkflowDefList", "update.arg0", validate_workflow_def)
    pending = {wf["name"]: normalize_workflow_def(wf) for wf in workflow_defs}
    errors = []
    for i, wf in enumerate(workflow_defs):
        errors += sub_workflow_cycle_errors(normalize_workflow_def(wf), f"update.arg0[{i}]", pending)
    if errors:
        raise validation_failed(errors)
    now = now_ms()
    names = []
    with transaction.atomic():
        for wf in workflow_defs:
            normalized = normalize_workflow_def(wf)
            name, version = normalized["name"], int(normalized["version"])
            updated = WorkflowDef.objects.filter(name=name, version=version).update(definition=normalized, update_time=now)
            if not updated:
                WorkflowDef.objects.create(name=name, version=version, definition=normalized, create_time=now, update_time=now)
            names.append(name)
    return {"bulkErrorResults": {}, "bulkSuccessfulResults": names}


def workflow_def_get(*, name: str, version: int | None = None) -> dict:
    """A WorkflowDef version, or the latest when ``version`` is None.

    Errors: NotFound ``No such workflow found by name: %s, version: %d``.
    """
    row = workflow_def_row(name=name, version=version)
    if row is None:
        raise NotFound(f"No such workflow found by name: {name}, version: {version if version is not None else 'null'}")
    return _with_audit(row.definition, row.create_time, row.update_time)


def workflow_def_row(*, name: str, version: int | None = None) -> WorkflowDef | None:
    """The WorkflowDef row for name and version (latest if None), or None."""
    qs = WorkflowDef.objects.filter(name=name)
    if version is not None:
        return qs.filter(version=version).first()
    return qs.order_by("-version").first()


def workflow_def_list() -> list[dict]:
    """Every version of every WorkflowDef, ordered by name then version."""
    return [_with_audit(r.definition, r.create_time, r.update_time) for r in WorkflowDef.objects.all()]


def workflow_def_latest_list() -> list[dict]:
    """The latest version of each WorkflowDef."""
    latest: dict[str, WorkflowDef] = {}
    for row in WorkflowDef.objects.all():
        latest[row.name] = row  # ordered by (name, version): the last one wins
    return [_with_audit(r.definition, r.create_time, r.update_time) for r in latest.values()]


def workflow_def_delete(*, name: str, version: int) -> None:
    """Delete one version. Running executions keep their own snapshot.

    Errors: NotFound ``No such workflow definition: %s version: %d``.
    """
    deleted, _ = WorkflowDef.objects.filter(name=name, version=version).delete()
    if not deleted:
        raise NotFound(f"No such workflow definition: {name} version: {version}")


# --- tags (Orkes's TagsResource: /api/metadata/{workflow,task}/{name}/tags, /api/metadata/tags) ---

TAG_TARGETS = ("WORKFLOW_DEF", "TASK_DEF")


def _tag_target_exists(target_type: str, name: str) -> None:
    """Raise NotFound unless the tagged definition exists (any version of a WorkflowDef)."""
    if target_type == "WORKFLOW_DEF":
        if not WorkflowDef.objects.filter(name=name).exists():
            raise NotFound(f"No such workflow found by name: {name}")
    elif not TaskDef.objects.filter(pk=name).exists():
        raise NotFound(f"No such taskType found by name: {name}")


def _tag_pairs(tags: object, path: str) -> list[tuple[str, object]]:
    """``[(key, value)]`` of a list of TagObject/TagString dicts. InvalidInput names ``path``."""
    if not isinstance(tags, list) or not all(isinstance(t, dict) for t in tags):
        raise InvalidInput(f"{path}: must be a list of tags {{key, value}}")
    pairs = []
    for tag in tags:
        key = tag.get("key")
        if not isinstance(key, str) or not key:
            raise InvalidInput(f"{path}: a tag needs a key")
        pairs.append((key, tag.get("value")))
    return pairs


def _tag_json(key: str, value: object) -> dict:
    return {"key": key, "type": "METADATA", "value": value}


def tags_get(*, target_type: str, name: str) -> list[dict]:
    """The tags of one definition as TagObjects ``{key, type: METADATA, value}``, in the
    order they were added. NotFound when the definition does not exist."""
    _tag_target_exists(target_type, name)
    rows = MetadataTag.objects.filter(target_type=target_type, target_name=name).order_by("id")
    return [_tag_json(r.key, r.value) for r in rows]


@transaction.atomic
def tags_add(*, target_type: str, name: str, tags: object) -> None:
    """Add tags to a definition (POST adds one TagObject, PUT a list; Orkes adds in both).
    A tag already there (same key and value) is not added twice. Errors: NotFound,
    InvalidInput (not tags)."""
    _tag_target_exists(target_type, name)
    existing = {(r.key, json.dumps(r.value, sort_keys=True))
                for r in MetadataTag.objects.filter(target_type=target_type, target_name=name)}
    for key, value in _tag_pairs(tags, "tags"):
        marker = (key, json.dumps(value, sort_keys=True))
        if marker not in existing:
            existing.add(marker)
            MetadataTag.objects.create(target_type=target_type, target_name=name, key=key, value=value)


@transaction.atomic
def tags_delete(*, target_type: str, name: str, tag: object) -> None:
    """Remove the tag with that key and value (a TagObject or TagString body; a value
    compared as text, as TagString carries it). Errors: NotFound, InvalidInput."""
    _tag_target_exists(target_type, name)
    [(key, value)] = _tag_pairs([tag], "tag")
    for row in MetadataTag.objects.filter(target_type=target_type, target_name=name, key=key):
        if row.value == value or str(row.value) == str(value):
            row.delete()


def tags_all() -> list[dict]:
    """Every distinct tag of every definition (``GET /api/metadata/tags``)."""
    seen, out = set(), []
    for key, value in MetadataTag.objects.order_by("id").values_list("key", "value"):
        marker = (key, json.dumps(value, sort_keys=True))
        if marker not in seen:
            seen.add(marker)
            out.append(_tag_json(key, value))
    return out
