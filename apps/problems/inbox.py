"""The human-task inbox: HUMAN tasks, and WAIT tasks that wait for a signal (no
``duration``/``until`` timer), waiting across executions.

``waiting(...)`` reads the ``task_inbox`` partial index (task_type, scheduled_time over
HUMAN/WAIT tasks that are SCHEDULED or IN_PROGRESS): the range stays as small as the
number of tasks waiting for people, whatever the size of the executions table. Filters:
the definition (``workflow_type``) and one field of the task's input (``assignee`` by
default) equal to a value. ``form_schema(task)`` is the JSON Schema a completion is
built from and checked against, when the task has one.
"""
from __future__ import annotations

from django.db.models import Q

from apps.engine.models import TaskExecution
from apps.metadata.models import TaskDef

INBOX_TYPES = ("HUMAN", "WAIT")
PAGE = 100
ASSIGNEE_FIELD = "assignee"


def waiting(*, workflow_name: str = "", field: str = ASSIGNEE_FIELD, value: str = "", before: int | None = None,
            limit: int = PAGE) -> list[TaskExecution]:
    """Waiting inbox tasks, oldest scheduled first (``before``: only those scheduled at or
    after this ms, the next page's marker), at most ``limit``: HUMAN tasks, and WAIT tasks
    without a timer. ``workflow_name`` narrows to one definition; ``value`` keeps the
    tasks whose input ``field`` equals it (a string, or a list that contains it)."""
    qs = (TaskExecution.objects.filter(task_type__in=INBOX_TYPES, status__in=["SCHEDULED", "IN_PROGRESS"])
          .filter(Q(task_type="HUMAN") | Q(timer_at__isnull=True))
          .select_related("workflow").order_by("scheduled_time", "task_id"))
    if workflow_name:
        qs = qs.filter(workflow_type=workflow_name)
    if before is not None:
        qs = qs.filter(scheduled_time__gte=before)
    if value and field:
        # equality in SQL; a list value is checked here (JSON containment differs by database)
        rows = [t for t in qs[:limit * 20] if _matches(t.input_data.get(field) if isinstance(t.input_data, dict)
                                                      else None, value)]
        return rows[:limit]
    return list(qs[:limit])


def _matches(found, value: str) -> bool:
    if isinstance(found, list):
        return any(str(v) == value for v in found)
    return found is not None and str(found) == value


def definitions_waiting() -> list[str]:
    """Names of the definitions with inbox tasks waiting, sorted."""
    return sorted(set(TaskExecution.objects.filter(task_type__in=INBOX_TYPES, status__in=["SCHEDULED", "IN_PROGRESS"])
                      .order_by().values_list("workflow_type", flat=True).distinct()))


def form_schema(task: TaskExecution) -> dict | None:
    """The JSON Schema (``{"type": "object", "properties": ...}``) a completion of
    ``task`` is built from and validated against: its TaskDef's ``outputSchema.data``
    (what the task must return), else its ``inputSchema.data``; the WorkflowTask's inline
    ``taskDefinition`` first, then the registered TaskDef. None when neither has one."""
    inline = (task.workflow_task or {}).get("taskDefinition")
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
