"""Registry of task types: one module per Conductor task type.

``get_type(type_name)`` returns the registered type; an unknown type is a worker task
(Conductor's USER_DEFINED behaves like SIMPLE).
"""
from __future__ import annotations

import importlib
import pkgutil

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


# Every module of this package but ``base`` holds one task type and registers it on import.
MODULES = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "base")

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")
