"""The small pieces every part of the agent compiler shares (``apps.agents.compiler``,
``apps.agents.guardrails``, ``apps.agents.options``): names, task references, models and
the TaskDefs of worker tasks. Pure: no ORM, no clock."""
from __future__ import annotations

import re

NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
TASK_DEF_DEFAULTS = {"retryCount": 2, "retryLogic": "FIXED", "retryDelaySeconds": 2, "timeoutSeconds": 0,
                     "responseTimeoutSeconds": 3600, "timeoutPolicy": "TIME_OUT_WF",
                     "ownerEmail": "agents@conductor-web.local"}


def to_ref(name: str) -> str:
    """A task reference made from an agent name (Conductor's toRef: non-word characters
    become ``_``)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def parse_model(model) -> tuple[str, str] | None:
    """``"provider/model"`` -> ``(provider, model)``; None when not of that form."""
    if not isinstance(model, str) or "/" not in model:
        return None
    provider, _, name = model.partition("/")
    return (provider, name) if provider and name else None


def whole(value) -> bool:
    """An integer (not a boolean), as the compiled scripts write it."""
    return isinstance(value, int) and not isinstance(value, bool)


def task_def(name: str, task_defs: dict, timeout=None) -> None:
    """Add the TaskDef of the worker task ``name`` to ``task_defs`` (``{name: TaskDef}``)
    unless it is there: Conductor's defaults of an agent's worker, ``timeout`` (seconds,
    when a positive int) its ``responseTimeoutSeconds``."""
    d = {"name": name, **TASK_DEF_DEFAULTS}
    if isinstance(timeout, int) and timeout > 0:
        d["responseTimeoutSeconds"] = timeout
    task_defs.setdefault(name, d)
