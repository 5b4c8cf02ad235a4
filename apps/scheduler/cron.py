"""Spring's cron expressions, as Conductor's scheduler reads them (``CronExpression.parse``).

Six fields, seconds first: ``second minute hour day-of-month month day-of-week``, with
``*``, ``?``, ranges (``1-5``), lists, steps (``*/2``), names (``MON-FRI``, ``JAN``), ``L``
and ``#``, or one of the macros ``@yearly`` ``@annually`` ``@monthly`` ``@weekly``
``@daily`` ``@midnight`` ``@hourly``. As in Spring, a restricted day-of-month and
day-of-week must both match (not either). Evaluation is done by the croniter library in
the IANA zone given (``zoneId``, default UTC), so daylight-saving changes follow the zone.

Times are epoch milliseconds. ``next_after`` is strictly after the given instant (Spring's
``CronExpression.next``). Errors: ``InvalidInput`` naming the field, never a 500.
"""
from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from croniter.croniter import CroniterBadDateError, CroniterError

from apps.core.clock import now_ms
from apps.core.errors import InvalidInput

MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def _fields_ok(expression: str) -> bool:
    text = expression.strip()
    if text.startswith("@"):
        return text.lower() in MACROS
    return len(text.split()) == 6


@lru_cache(maxsize=512)
def _checked(expression: str) -> str:
    text = expression.strip()
    if not _fields_ok(text) or not croniter.is_valid(text, second_at_beginning=True):
        raise ValueError(text)
    return text.lower() if text.startswith("@") else text


def validate_cron(expression, field: str = "cronExpression", *, must_fire: bool = True) -> str:
    """The expression, stripped, if Spring would parse it; else InvalidInput (400)
    ``Invalid cron expression: <expr>`` with a validation error on ``field`` (Spring
    requires exactly six fields: a five-field Unix expression is refused). An expression
    that matches no date from now on (``0 0 0 30 2 *``; Spring's has no year field, so
    it never will) is refused too, unless ``must_fire`` is false: ``Cron expression never
    fires: <expr>``."""
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidInput(f"{field} cannot be empty",
                           validation_errors=[{"path": field, "message": "cron expression cannot be empty"}])
    try:
        checked = _checked(expression)
    except ValueError:
        raise InvalidInput(
            f"Invalid cron expression: {expression}",
            validation_errors=[{"path": field, "message": "must be a Spring cron expression of 6 fields "
                                                          "(second minute hour day-of-month month day-of-week) "
                                                          "or a macro such as @daily",
                                "invalidValue": expression}]) from None
    if must_fire and next_after(checked, "UTC", now_ms()) is None:
        raise InvalidInput(
            f"Cron expression never fires: {expression}",
            validation_errors=[{"path": field, "message": "matches no date (e.g. February 30): the schedule would "
                                                          "never start a workflow", "invalidValue": expression}])
    return checked


@lru_cache(maxsize=256)
def zone(zone_id: str) -> ZoneInfo:
    """The IANA zone of ``zone_id`` (``ValueError`` if unknown)."""
    try:
        return ZoneInfo(zone_id)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ValueError(zone_id) from None


def validate_zone(zone_id, field: str = "zoneId") -> str:
    """``zone_id`` (default ``UTC`` when empty) if it names an IANA zone; else
    InvalidInput (400) ``Invalid zoneId: <id>`` naming ``field``."""
    if zone_id is None or zone_id == "":
        return "UTC"
    if not isinstance(zone_id, str):
        raise InvalidInput(f"Invalid zoneId: {zone_id}", validation_errors=[{"path": field, "message": "must be a string"}])
    try:
        zone(zone_id)
    except ValueError:
        raise InvalidInput(f"Invalid zoneId: {zone_id}",
                           validation_errors=[{"path": field, "message": "unknown time zone", "invalidValue": zone_id}]) from None
    return zone_id


def next_after(expression: str, zone_id: str, after_ms: int) -> int | None:
    """The first instant (epoch ms, whole seconds) strictly after ``after_ms`` that
    ``expression`` matches in ``zone_id``; None when it never matches again (e.g.
    ``0 0 0 30 2 *``). The expression must have passed ``validate_cron``."""
    start = datetime.fromtimestamp(after_ms / 1000, tz=timezone.utc).astimezone(zone(zone_id or "UTC"))
    try:
        it = croniter(_checked(expression), start, second_at_beginning=True, day_or=False)
        nxt = it.get_next(float)
    except CroniterBadDateError:
        return None
    except (CroniterError, ValueError):
        return None
    ms = int(round(nxt * 1000))
    return ms if ms > after_ms else None
