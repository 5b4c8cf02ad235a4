"""SDK workers that fail or take their time, for the failure-semantics e2e test.

Module-level functions: ``TaskHandler`` spawns one process per worker and the child
re-imports this module. No ``from __future__ import annotations``: the SDK reads the
parameter annotations to map task input to arguments.
"""
from typing import Union

from conductor.client.context.task_context import TaskInProgress, get_task_context
from conductor.client.worker.exception import NonRetryableException
from conductor.client.worker.worker_task import worker_task

FLAKY_TASK = "e2e_flaky_charge"
TERMINAL_TASK = "e2e_blocked_order"
LONG_TASK = "e2e_long_running_job"

TERMINAL_REASON = "why: order is on the blocklist"


def flaky_reason(order_id: str) -> str:
    return f"card declined for {order_id}"


@worker_task(task_definition_name=FLAKY_TASK)
def flaky_charge(order_id: str) -> dict:
    """Fails its first attempt with an ordinary exception; the retry succeeds."""
    attempt = get_task_context().get_retry_count()
    if not attempt:
        raise RuntimeError(flaky_reason(order_id))
    return {"charged": True, "attempt": attempt}


@worker_task(task_definition_name=TERMINAL_TASK)
def blocked_order(order_id: str) -> dict:
    """Always fails for good: no retry may follow, whatever the TaskDef allows."""
    raise NonRetryableException(TERMINAL_REASON)


@worker_task(task_definition_name=LONG_TASK)
def long_running_job(job_id: str) -> Union[dict, TaskInProgress]:
    """First delivery: report progress and ask to be called back in 1 s. Next delivery
    (the same task): finish, reporting what the server handed back."""
    ctx = get_task_context()
    previous = dict(ctx.task.output_data or {})
    if ctx.get_poll_count() <= 1 and "progress" not in previous:
        return TaskInProgress(callback_after_seconds=1,
                              output={"progress": 50, "job_id": job_id, "task_id": ctx.get_task_id()})
    return {"progress": 100, "job_id": job_id, "task_id": ctx.get_task_id(),
            "poll_count": ctx.get_poll_count(), "previous_output": previous}
