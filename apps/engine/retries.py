"""Retry delay and timeout rules for task executions. Pure.

Source: Conductor ``DeciderService.retry``, ``checkTaskTimeout``, ``checkTaskPollTimeout``,
``isResponseTimedOut`` and ``checkWorkflowTimeout`` (docs/conductor-notes.md §4.2-4.3).
"""
from __future__ import annotations

from random import Random

INT_MAX = 2**31 - 1


def retry_delay_ms(task_def: dict, retry_count: int, rng: Random | None = None) -> int:
    """Delay before attempt ``retry_count + 1`` in **milliseconds**.

    ``retry_count`` is the attempt number of the failed task (0 for the first attempt).
    FIXED: retryDelaySeconds; LINEAR_BACKOFF: retryDelaySeconds * backoffScaleFactor *
    (retry_count + 1); EXPONENTIAL_BACKOFF: retryDelaySeconds * 2^retry_count. Capped at
    INT_MAX s on overflow, then at ``maxRetryDelaySeconds`` when > 0, plus a random jitter
    in [0, backoffJitterMs] ms drawn from ``rng`` (the caller's random source; ValueError
    when a jitter is configured and no ``rng`` is given: this module holds no randomness).
    """
    base = int(task_def.get("retryDelaySeconds") or 0)
    logic = task_def.get("retryLogic") or "FIXED"
    if logic == "LINEAR_BACKOFF":
        delay = base * int(task_def.get("backoffScaleFactor") or 1) * (retry_count + 1)
    elif logic == "EXPONENTIAL_BACKOFF":
        delay = base * (2 ** min(retry_count, 62))
    else:
        delay = base
    delay = min(delay, INT_MAX)
    cap = int(task_def.get("maxRetryDelaySeconds") or 0)
    if cap > 0:
        delay = min(delay, cap)
    jitter = int(task_def.get("backoffJitterMs") or 0)
    if jitter > 0 and rng is None:
        raise ValueError("backoffJitterMs needs a random source (rng)")
    extra = rng.randint(0, jitter) if jitter > 0 else 0
    return delay * 1000 + extra


def expected_retry_count(task_def: dict | None, workflow_task: dict | None) -> int:
    """How many retries a task may use: ``WorkflowTask.retryCount`` overrides
    ``TaskDef.retryCount``; no TaskDef means no retries."""
    if task_def is None:
        return 0
    if workflow_task and workflow_task.get("retryCount") is not None:
        return int(workflow_task["retryCount"])
    return int(task_def.get("retryCount") or 0)
