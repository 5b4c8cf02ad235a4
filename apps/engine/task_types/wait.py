"""WAIT: IN_PROGRESS until ``duration`` passes, the ``until`` time comes, or (with neither)
until completed from outside (task update API, event handler).

The due time is kept in ``timer_at`` (epoch ms; None when there is no timer, Conductor's
``waitTimeout == 0``) and named to the sweeper through ``due_at``, so the timer fires
within a sweeper tick.
Source: Conductor Wait / WaitTaskMapper (``duration`` like ``10s``, ``1m 30s``,
``2 hours``, ``1d``; ``until`` as ``yyyy-MM-dd HH:mm``, ``yyyy-MM-dd HH:mm z`` or
``yyyy-MM-dd``).
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish

_UNITS = {
    "d": 86400, "day": 86400, "days": 86400,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
}
_PART = re.compile(r"(\d+)\s*([a-zA-Z]+)")


def parse_duration_seconds(text: str) -> int:
    """``"1m 30s"`` -> 90. Raises ValueError for anything else."""
    text = str(text).strip()
    if re.fullmatch(r"\d+", text):
        return int(text)
    parts = _PART.findall(text)
    if not parts or _PART.sub("", text).strip():
        raise ValueError(text)
    total = 0
    for amount, unit in parts:
        if unit.lower() not in _UNITS:
            raise ValueError(text)
        total += int(amount) * _UNITS[unit.lower()]
    return total


def parse_until_ms(text: str) -> int:
    """``yyyy-MM-dd HH:mm[ z]`` or ``yyyy-MM-dd`` (UTC unless a zone is given) -> epoch ms."""
    text = str(text).strip()
    for fmt in ("%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return int(datetime.strptime(text, fmt).replace(tzinfo=timezone.utc).timestamp() * 1000)
        except ValueError:
            pass
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\s+(\S+)", text)
    if m:
        dt = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M")
        zone = m.group(2)
        tz = timezone.utc if zone.upper() in ("UTC", "GMT", "Z") else ZoneInfo(zone)
        return int(dt.replace(tzinfo=tz).timestamp() * 1000)
    raise ValueError(text)


@register
class Wait(SystemTask):
    type_name = "WAIT"

    def start(self, d, task: TaskState) -> None:
        params = task.input_data
        duration = params.get("duration")
        until = params.get("until") or params.get("wait_until")
        if duration and until:
            finish(d, task, "FAILED_WITH_TERMINAL_ERROR",
                   reason="Both 'duration' and 'until' specified. Please provide only one input")
            return
        try:
            if duration:
                task.timer_at = d.now + parse_duration_seconds(duration) * 1000
            elif until:
                task.timer_at = parse_until_ms(until)
            else:
                task.timer_at = None  # no timer: completed from outside
        except ValueError:
            if duration:
                reason = f"Unable to parse the duration {duration}"
            else:
                reason = f"Invalid/Unsupported Wait Until format.  Provided: {until}"
            finish(d, task, "FAILED_WITH_TERMINAL_ERROR", reason=reason)
            return
        finish(d, task, "IN_PROGRESS")

    def execute(self, d, task: TaskState) -> bool:
        if task.status == "IN_PROGRESS" and task.timer_at is not None and d.now >= task.timer_at:
            finish(d, task, "COMPLETED")
            return True
        return False

    def due_at(self, d, task: TaskState) -> int | None:
        return task.timer_at
