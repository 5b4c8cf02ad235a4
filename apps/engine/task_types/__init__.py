"""Registry of task types: one module per Conductor task type.

``get_type(type_name)`` returns the registered type; an unknown type is a worker task
(Conductor's USER_DEFINED behaves like SIMPLE).
"""
from __future__ import annotations

import importlib

from apps.engine.task_types.base import TaskType

REGISTRY: dict[str, TaskType] = {}


def register(cls: type[TaskType]) -> type[TaskType]:
    """Class decorator: register one instance under ``cls.type_name``."""
    REGISTRY[cls.type_name] = cls()
    return cls


def get_type(type_name: str) -> TaskType:
    """The task type for a type string; unknown strings are worker tasks."""
    found = REGISTRY.get(type_name)
    if found is None:
        return REGISTRY["SIMPLE"]
    return found


MODULES = ["simple", "operators", "wait", "switch", "fork_join", "do_while", "dynamic", "sub_workflow", "http", "event", "ai"]

for _module in MODULES:
    importlib.import_module(f"apps.engine.task_types.{_module}")
