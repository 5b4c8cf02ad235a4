"""The environment a definition may read, and the environment store behind it.

What ``${...}`` can reach of the server (docs/secrets.md):

* ``${workflow.env.NAME}`` (optionally ``${workflow.env.NAME.json.path}`` into a JSON
  value) reads the environment store (``EnvironmentVariable`` rows, served at
  ``/api/environment``), then the process variable ``<ENV_PREFIX>NAME``
  (``CONDUCTOR_ENV_NAME`` by default): Conductor's EnvVariableEnvironmentDAO and its
  ``conductor.environment.env.prefix``. No other process variable.
* A bare ``${NAME}`` reads only Conductor's system parameters (EnvUtils.SystemParameters:
  ``CPEWF_TASK_ID``, the task's id, resolved in apps.engine.params; ``NETFLIX_ENV`` and
  ``NETFLIX_STACK`` from the process) and the process variables an operator lists in
  ``CONDUCTOR_BARE_ENV_NAMES``. Conductor's EnvUtils reads any process variable for a bare
  name; here that would hand SECRET_KEY or DATABASE_URL to any definition.

``WorkflowEnvironment`` is the one provider the engine hands the decider, the simulator
(``/workflow/test``), inline effects and event handlers.
"""
from __future__ import annotations

import os

from django.conf import settings

from apps.core.clock import now_ms
from apps.metadata.models import EnvironmentVariable

# Conductor's EnvUtils.SystemParameters read from the process (CPEWF_TASK_ID is the task id)
SYSTEM_PARAMETERS = ("NETFLIX_ENV", "NETFLIX_STACK")


# process variables never readable through ``${workflow.env.X}``, whatever the prefix (a
# broad CONDUCTOR_ENV_PREFIX such as CONDUCTOR_ would otherwise hand out the secrets' key)
PROTECTED = ("SECRET_KEY", "DATABASE_URL", "CONDUCTOR_SECRETS_KEYS", "CONDUCTOR_AUTH_KEY", "CONDUCTOR_AUTH_SECRET",
             "Q_REDIS_URL", "CHANNEL_REDIS_URL")


def _prefix() -> str:
    return settings.CONDUCTOR.get("ENV_PREFIX", "CONDUCTOR_ENV_")


def _process_variables() -> dict[str, str]:
    """The process variables ``${workflow.env.X}`` may read: ``<prefix>X`` -> ``X``."""
    prefix = _prefix()
    if not prefix:
        return {}
    return {k[len(prefix):]: v for k, v in os.environ.items()
            if k.startswith(prefix) and len(k) > len(prefix) and k not in PROTECTED}


def env_all() -> dict[str, str]:
    """Every variable ``${workflow.env.X}`` reads, ``{name: value}``: the prefixed process
    variables overlaid by the store (a value set through the API wins)."""
    found = _process_variables()
    found.update(EnvironmentVariable.objects.values_list("name", "value"))
    return found


def env_list() -> list[dict]:
    """``GET /api/environment``: ``[{"name", "value"}]`` sorted by name (Conductor's
    ``List<EnvironmentVariable>``)."""
    return [{"name": k, "value": v} for k, v in sorted(env_all().items())]


def env_get(name: str) -> str | None:
    """The value of one variable (store first, then ``<prefix>name``), or None."""
    value = EnvironmentVariable.objects.filter(pk=name).values_list("value", flat=True).first()
    if value is not None:
        return value
    prefix = _prefix()
    if not prefix or prefix + name in PROTECTED:
        return None
    return os.environ.get(prefix + name)


def env_put(*, name: str, value: str) -> None:
    """Create or replace the stored variable ``name`` (``PUT /api/environment/{key}``)."""
    now = now_ms()
    EnvironmentVariable.objects.update_or_create(
        name=name, defaults={"value": value, "update_time": now},
        create_defaults={"value": value, "create_time": now, "update_time": now})


def env_delete(*, name: str) -> bool:
    """Remove the stored variable ``name``; whether there was one (a process variable
    cannot be removed through the API)."""
    deleted, _ = EnvironmentVariable.objects.filter(pk=name).delete()
    return deleted > 0


class WorkflowEnvironment:
    """What ``${workflow.env.X}`` and bare ``${NAME}`` read (module doc), for
    ``apps.engine.params.Document``: ``get(name)`` and ``system_parameter(name)``, each a
    string or None.

    ``snapshot=True`` (one decide, one simulation) reads the store once, on first use, and
    keeps it for the object's life: a decide queries it at most once, and only when a
    definition references ``workflow.env``. ``snapshot=False`` (a long-lived object) reads
    the row on every call."""

    __slots__ = ("snapshot", "_values")

    def __init__(self, *, snapshot: bool = True):
        self.snapshot = snapshot
        self._values: dict[str, str] | None = None

    def get(self, name: str, default=None):
        if not self.snapshot:
            value = env_get(name)
            return default if value is None else value
        if self._values is None:
            self._values = env_all()
        return self._values.get(name, default)

    def system_parameter(self, name: str) -> str | None:
        if name in SYSTEM_PARAMETERS or name in settings.CONDUCTOR.get("BARE_ENV_NAMES", ()):
            return os.environ.get(name)
        return None
