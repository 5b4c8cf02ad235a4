"""A JSONField that gives back a document's keys in the order they were written.

Django's ``JSONField`` is ``jsonb`` on PostgreSQL, which stores objects with their keys
sorted by length and then bytes: a WorkflowDef registered as ``{"name", "description",
"version", "tasks"}`` came back from ``GET /api/metadata/workflow/{name}`` and in the UI as
``{"name", "tasks", "version", ..., "description"}``. On SQLite the column is text and keeps
the order. ``KeyOrderJSONField`` is ``json`` on PostgreSQL (the text as written, checked to
be JSON), for columns that hold a document a person wrote and reads back (definitions),
not for columns searched with jsonb operators (``@>``, ``?``) or compared with ``=``:
``json`` has neither. Key look-ups (``->``/``->>``, Django's ``KT()``) work on both.
"""
from __future__ import annotations

from django.db import models


class KeyOrderJSONField(models.JSONField):
    """``models.JSONField`` whose PostgreSQL column is ``json`` rather than ``jsonb``, so a
    stored object keeps its key order; on other databases it is ``JSONField`` unchanged.

    Values are written as ``json`` (Django would cast them to ``jsonb`` first, which
    reorders them) and read back as psycopg parses ``json`` (``json.loads``: order kept).
    """

    def db_type(self, connection):
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_db_prep_value(self, value, connection, prepared=False):
        adapted = super().get_db_prep_value(value, connection, prepared)
        if connection.vendor == "postgresql":
            from psycopg.types.json import Json, Jsonb

            if isinstance(adapted, Jsonb):
                return Json(adapted.obj, dumps=adapted.dumps)
        return adapted

    def from_db_value(self, value, expression, connection):
        if value is not None and not isinstance(value, str):
            return value  # a json column: psycopg has parsed it already
        return super().from_db_value(value, expression, connection)
