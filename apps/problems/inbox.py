"""The human-task inbox: HUMAN tasks, and WAIT tasks that wait for a signal (no
``duration``/``until`` timer), waiting across executions.

``waiting(...)`` reads the ``task_inbox`` index (task_type, status, scheduled_time), one
range per waiting (type, status): as small as the number of tasks waiting for people,
whatever the size of the task table. Filters:
the definition (``workflow_type``) and one field of the task's input (``assignee`` by
default, or a dotted path) equal to a string. ``form_schema(task)`` is the JSON Schema a completion is
built from and checked against, when the task has one.
"""
from __future__ import annotations

import heapq
import re


from apps.core.errors import InvalidInput

from apps.engine import store
from apps.engine.models import TaskExecution
from apps.metadata.models import TaskDef

INBOX_TYPES = ("HUMAN", "WAIT")
WAITING = [(t, s) for t in INBOX_TYPES for s in ("SCHEDULED", "IN_PROGRESS")]
PAGE = 100
ASSIGNEE_FIELD = "assignee"


FIELD_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,3}$")


def waiting(*, workflow_name: str = "", ref: str = "", field: str = ASSIGNEE_FIELD, value: str = "",
            limit: int = PAGE) -> list[TaskExecution]:
    """Waiting inbox tasks, oldest scheduled first, at most ``limit``: HUMAN tasks, and
    WAIT tasks without a timer. ``workflow_name`` narrows to one definition, ``ref`` to
    one taskReferenceName; ``value``
    keeps the tasks whose input ``field`` (a key, or a dotted path of up to four keys)
    is that string. InvalidInput for a field name that is not such a path."""
    if value and (not FIELD_RE.match(field or "") or "__" in field):
        raise InvalidInput(f"Invalid input field name: {field[:80]!r} (keys of letters, digits, '_' and '-', "
                           "joined by '.')")
    # one query per (type, status): equality on both leading columns of ``task_inbox`` and
    # its own order, so each is an index range read ``limit`` rows deep (an IN list there
    # lets SQLite's planner prefer a scan), merged here
    found: list[TaskExecution] = []
    for task_type, status in WAITING:
        qs = TaskExecution.objects.filter(task_type=task_type, status=status)
        if task_type == "WAIT":
            qs = qs.filter(timer_at__isnull=True)
        if workflow_name:
            qs = qs.filter(workflow_type=workflow_name)
        if ref:
            qs = qs.filter(reference_task_name=ref)
        if value:
            qs = qs.filter(**{"input_data__" + field.replace(".", "__"): value})
        found += qs.defer("output_data").order_by("scheduled_time", "task_id")[:limit]
    return heapq.nsmallest(limit, found, key=lambda t: (t.scheduled_time, t.task_id))


def definitions_waiting() -> list[str]:
    """Names of the definitions with inbox tasks waiting, sorted."""
    names: set[str] = set()
    for task_type, status in WAITING:
        names |= set(TaskExecution.objects.filter(task_type=task_type, status=status)
                     .order_by().values_list("workflow_type", flat=True).distinct())
    return sorted(names)


def form_schema(task: TaskExecution, definition: dict | None = None) -> dict | None:
    """The JSON Schema (``{"type": "object", "properties": ...}``) a completion of
    ``task`` is built from and validated against: its TaskDef's ``outputSchema.data``
    (what the task must return), else its ``inputSchema.data``; the WorkflowTask's inline
    ``taskDefinition`` first, then the registered TaskDef. None when neither has one.
    ``definition`` is the execution's definition snapshot (read when not given): a task
    made from its definition stores no WorkflowTask of its own (``store.workflow_task_of``)."""
    inline = store.workflow_task_of(task, definition).get("taskDefinition")
    definitions = [inline] if isinstance(inline, dict) else []
    stored = TaskDef.objects.filter(name=task.task_def_name).values_list("definition", flat=True).first()
    if isinstance(stored, dict):
        definitions.append(stored)
    for d in definitions:
        for key in ("outputSchema", "inputSchema"):
            data = (d.get(key) or {}).get("data") if isinstance(d.get(key), dict) else None
            if isinstance(data, dict) and data:
                return data
    return None


def form_fields(schema: dict | None) -> list[dict]:
    """The form of ``schema``'s top-level properties: ``[{"name", "kind" ("text",
    "number", "integer", "boolean", "choice", "json"), "required", "title", "choices",
    "default"}]``; empty for no schema."""
    if not schema:
        return []
    required = set(schema.get("required") or [])
    out = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        kind = {"string": "text", "number": "number", "integer": "integer", "boolean": "boolean"}.get(
            prop.get("type"), "json")
        if isinstance(prop.get("enum"), list):
            kind = "choice"
        out.append({"name": name, "kind": kind, "required": name in required,
                    "title": prop.get("title") or name, "description": prop.get("description") or "",
                    "choices": [str(c) for c in prop.get("enum") or []], "default": prop.get("default")})
    return out


def read_form(fields: list[dict], data) -> tuple[dict, list[str]]:
    """(output, errors): the posted form ``data`` (a QueryDict) read by ``fields``: empty
    inputs are left out, numbers parsed, a boolean is a checkbox, JSON fields parsed."""
    import json

    out, errors = {}, []
    for f in fields:
        raw = data.get("field." + f["name"], "")
        if f["kind"] == "boolean":
            out[f["name"]] = raw in ("on", "true", "1")
            continue
        if raw == "":
            continue
        try:
            if f["kind"] == "integer":
                out[f["name"]] = int(raw)
            elif f["kind"] == "number":
                out[f["name"]] = float(raw)
            elif f["kind"] == "json":
                out[f["name"]] = json.loads(raw)
            else:
                out[f["name"]] = raw
        except ValueError:
            errors.append(f"{f['title']}: not a valid {f['kind']}: {raw[:40]!r}")
    return out, errors


def schema_errors(schema: dict | None, output: dict) -> list[str]:
    """Why ``output`` does not satisfy ``schema`` (jsonschema; the path and message of
    each error, at most 10); empty when it does or there is no schema."""
    if not schema:
        return []
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{'/'.join(map(str, e.path)) or '(output)'}: {e.message}"
            for e in list(validator.iter_errors(output))[:10]]
