"""The SDK worker of the problem-views browser tests (``tests/browser/test_problems_ui.py``).

Module-level: ``TaskHandler`` spawns one process per worker and the child re-imports this
module. No ``from __future__ import annotations``: the SDK maps task input to arguments
by their annotations.
"""
from conductor.client.worker.exception import NonRetryableException
from conductor.client.worker.worker_task import worker_task

CHARGE_TASK = "pv_charge"


@worker_task(task_definition_name=CHARGE_TASK)
def charge(order_id: str) -> dict:
    """Charges an order; an order id starting with ``bad`` is declined for good."""
    if str(order_id).startswith("bad"):
        raise NonRetryableException(f"card declined for {order_id}")
    return {"charged": True, "order_id": order_id}
