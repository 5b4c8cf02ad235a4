"""Rules for client-supplied strings that name things or are stored in columns.

* ``name_errors``: a definition or schedule name (WorkflowDef, TaskDef, WorkflowSchedule)
  is one URL path segment (``/api/metadata/workflow/{name}``, ``/definitions/{name}/1``),
  so it may not contain '/'; it is also bounded by its column.
* ``length_errors``: a string longer than the ``max_length`` of the column it is stored
  in. PostgreSQL refuses such a value ("value too long", a 500 if unchecked) where SQLite
  stores it; checking against the model's own ``max_length`` gives the same 400 naming
  the field on both databases, with no limit written twice.

Columns are named ``"app_label.Model.field"`` and looked up in Django's app registry, so
any layer can check against any model without importing it. Errors are Conductor's
``validationErrors`` entries ``{"path", "message", "invalidValue"?}``.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from django.apps import apps

from apps.core.errors import validation_failed

# a too long value is echoed only in part in ``invalidValue``
_ECHO = 80


@cache
def max_length(column: str) -> int | None:
    """The ``max_length`` (characters) of ``"app_label.Model.field"``; None for a field
    without one (TextField). Errors: LookupError/FieldDoesNotExist for an unknown name
    (a programming error)."""
    label, model, field = column.split(".")
    return apps.get_model(label, model)._meta.get_field(field).max_length


def length_errors(value: Any, column: str, path: str) -> list[dict]:
    """``[{path, message, invalidValue}]`` when ``value`` is a string longer than the
    column ``"app_label.Model.field"`` holds; ``[]`` otherwise (non-strings included:
    their type is checked elsewhere)."""
    limit = max_length(column)
    if not isinstance(value, str) or limit is None or len(value) <= limit:
        return []
    return [{"path": path, "message": f"must be at most {limit} characters, not {len(value)}",
             "invalidValue": value[:_ECHO] + "..."}]


def name_errors(name: Any, column: str, path: str) -> list[dict]:
    """Errors of a definition or schedule name stored in ``column``: a '/' (a name is one
    URL path segment, in the API and in the UI's links) and ``length_errors``. ``[]`` for
    a non-string (the callers report a missing or mistyped name themselves)."""
    if not isinstance(name, str):
        return []
    if "/" in name:
        return [{"path": path, "message": "must not contain '/' (a name is one URL path segment)",
                 "invalidValue": name[:_ECHO]}]
    return length_errors(name, column, path)


def check_length(value: Any, column: str, path: str) -> None:
    """Raise InvalidInput (400, Conductor's validation body) naming ``path`` when
    ``value`` does not fit the column (``length_errors``)."""
    errors = length_errors(value, column, path)
    if errors:
        raise validation_failed(errors)
