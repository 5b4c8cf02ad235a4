"""The populated WorkflowDef a start runs (its WorkflowTasks carrying their TaskDefs), cached
per process and checked against the database on every use.

Why: a start by name looked the WorkflowDef and its TaskDefs up through the ORM, decoded
both and deep-copied the definition to populate it (``executor.populate_task_definitions``),
about two thirds of a start's server time (bench/README.md, docs/performance.md). Here one
start reads the registered definition's JSON *text* (one prepared statement) and, when it is
the text the cached entry was made from, the text of the TaskDefs that entry used (a second
statement); when both are unchanged, the cached populated definition is handed out (a fresh
copy: the execution owns and may change its snapshot). Any change of the WorkflowDef version
or of one of its TaskDefs (by any process: the check reads the database) or a TaskDef newly
registered under one of its task names makes the texts differ, and the entry is rebuilt, so a
start never runs a definition other than the one committed when it read them (as before:
Conductor's ``MetadataMapperService.populateTaskDefinitions`` at start).
"""
from __future__ import annotations

import json
import pickle
import threading
from collections import OrderedDict

from django.db import connection

from apps.engine.store import sql_cursor
from apps.metadata.validation import iter_workflow_tasks, with_task_definitions

MAX_ENTRIES = 512  # (name, version) pairs kept per process, least recently used dropped first

# (name, version or None) -> (WorkflowDef text, ((TaskDef name, text), ...) of its registered
# TaskDefs, its task names that had no registered TaskDef, the pickled populated definition)
_cache: OrderedDict[tuple[str, int | None], tuple[str, tuple, tuple, bytes]] = OrderedDict()
_lock = threading.Lock()


def _text_column() -> str:
    return "definition::text" if connection.vendor == "postgresql" else "definition"


def _task_def_texts(cursor, names: list[str]) -> tuple[tuple[str, str], ...]:
    """``((name, definition text), ...)`` of the registered TaskDefs among ``names``, by name."""
    if not names:
        return ()
    marks = ", ".join(["%s"] * len(names))
    cursor.execute(f"SELECT name, {_text_column()} FROM metadata_task_def WHERE name IN ({marks})", names)
    return tuple(sorted((name, text) for name, text in cursor.fetchall()))


def registered_populated(name: str, version: int | None) -> dict | None:
    """The registered WorkflowDef ``name`` at ``version`` (None: the latest version) with
    every WorkflowTask's ``taskDefinition`` filled in (``with_task_definitions``: inline,
    registered or ad hoc), as a new dict the caller owns; None when no such version is
    registered. Reads the database each call (see the module doc). Raises ValueError for a
    ``version`` that is not an integer (a numeric string is one), else only what the
    database raises."""
    if version is not None:
        version = int(version)  # as the ORM's IntegerField does (ValueError), before any SQL
    column = _text_column()
    key = (name, version)
    with sql_cursor() as cursor:
        if version is None:
            cursor.execute(f"SELECT {column} FROM metadata_workflow_def WHERE name = %s "
                           "ORDER BY version DESC LIMIT 1", [name])
        else:
            cursor.execute(f"SELECT {column} FROM metadata_workflow_def WHERE name = %s AND version = %s",
                           [name, version])
        row = cursor.fetchone()
        if row is None:
            return None
        text = row[0]
        with _lock:
            entry = _cache.get(key)
        if entry is not None and entry[0] == text:
            _text, texts, unregistered, payload = entry
            # a TaskDef changed, deleted, or newly registered under one of its names: rebuild
            if _task_def_texts(cursor, sorted({n for n, _ in texts} | set(unregistered))) == texts:
                with _lock:
                    if key in _cache:
                        _cache.move_to_end(key)
                return pickle.loads(payload)
        definition = json.loads(text)
        names = sorted({t.get("name") for t in iter_workflow_tasks(definition.get("tasks") or [])
                        if not t.get("taskDefinition") and t.get("name")})
        texts = _task_def_texts(cursor, names)
    populated = with_task_definitions(definition, {n: json.loads(t) for n, t in texts})
    registered = {n for n, _ in texts}
    unregistered = tuple(n for n in names if n not in registered)
    with _lock:
        _cache[key] = (text, texts, unregistered, pickle.dumps(populated, protocol=pickle.HIGHEST_PROTOCOL))
        _cache.move_to_end(key)
        while len(_cache) > MAX_ENTRIES:
            _cache.popitem(last=False)
    return populated


def clear() -> None:
    """Forget every cached definition (tests)."""
    with _lock:
        _cache.clear()
