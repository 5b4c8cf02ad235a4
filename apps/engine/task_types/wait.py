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

from apps.core.clock import parse_duration_seconds, parse_until_ms
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, finish


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
