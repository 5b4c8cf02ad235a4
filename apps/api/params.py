"""Query-string helpers for Conductor's clients.

The SDK sends booleans as ``true``/``false`` on GET and ``True``/``False`` on writes, and
``None`` or an empty string for "not given"; integers may be absent. These helpers read
all of them and raise InvalidInput (400) naming the parameter otherwise.
"""
from __future__ import annotations

from apps.core.errors import InvalidInput

_ABSENT = ("", "none", "null", "undefined")
MAX_LONG = 2**63 - 1  # query integers are Java longs at most


def qbool(params, name: str, default: bool) -> bool:
    value = params.get(name)
    if value is None or value.strip().lower() in _ABSENT:
        return default
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise InvalidInput(f"Invalid boolean value for query parameter '{name}': {value}")


def qint(params, name: str, default: int | None) -> int | None:
    value = params.get(name)
    if value is None or value.strip().lower() in _ABSENT:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise InvalidInput(f"Invalid integer value for query parameter '{name}': {value}") from None
    if not -MAX_LONG - 1 <= number <= MAX_LONG:
        raise InvalidInput(f"Invalid integer value for query parameter '{name}': {value} (out of range)")
    return number


def qstr(params, name: str, default: str | None = None) -> str | None:
    value = params.get(name)
    if value is None or value.strip().lower() in _ABSENT:
        return default
    return value
