"""SDK workers of the operations browser tests (task logs, alert rules), run by
``TaskHandler`` in their own processes. No ``from __future__ import annotations``: the SDK
reads the parameter annotations to map task input to arguments."""
from typing import Union

from conductor.client.context.task_context import TaskInProgress, get_task_context
from conductor.client.worker.exception import NonRetryableException
from conductor.client.worker.worker_task import worker_task

ALERT_TASK = "ops_alert_task"
LOGGED_TASK = "ops_logged_task"
LOG_STEPS = 4


@worker_task(task_definition_name=ALERT_TASK)
def alert_task(fail: bool) -> dict:
    """Fails for good when ``fail`` is true, else completes."""
    if fail:
        raise NonRetryableException("payment provider refused the charge")
    return {"ok": True}


@worker_task(task_definition_name=LOGGED_TASK)
def logged_task(job: str) -> Union[dict, TaskInProgress]:
    """Writes one log line per delivery and asks to be called back in 1 s, ``LOG_STEPS``
    times, then completes: its log grows while it runs."""
    ctx = get_task_context()
    step = ctx.get_poll_count()
    ctx.add_log(f"{job} step {step}: processed batch <{step}> of {LOG_STEPS} " + "x" * 160)
    if step < LOG_STEPS:
        return TaskInProgress(callback_after_seconds=1, output={"step": step})
    return {"steps": step}
