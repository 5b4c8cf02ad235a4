"""SDK workers of the operations browser tests (backfilled runs, alert rules), run by
``TaskHandler`` in their own processes. No ``from __future__ import annotations``: the SDK
reads the parameter annotations to map task input to arguments."""
from conductor.client.worker.exception import NonRetryableException
from conductor.client.worker.worker_task import worker_task

ALERT_TASK = "ops_alert_task"
HELD_TASK = "ops_held_task"  # no worker process: the log test holds it through the SDK's task client


@worker_task(task_definition_name=ALERT_TASK)
def alert_task(fail: bool) -> dict:
    """Fails for good when ``fail`` is true, else completes."""
    if fail:
        raise NonRetryableException("payment provider refused the charge")
    return {"ok": True}
