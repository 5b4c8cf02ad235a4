"""SDK workers of the Overview browser test (``TaskHandler`` spawns one process per
worker and the child re-imports this module; no ``from __future__ import annotations``:
the SDK maps task input to arguments by the annotations)."""
from conductor.client.worker.exception import NonRetryableException
from conductor.client.worker.worker_task import worker_task

PACK_TASK = "overview_pack_order"
CHARGE_TASK = "overview_charge_card"


@worker_task(task_definition_name=PACK_TASK)
def pack_order(order_id: str) -> dict:
    return {"packed": order_id}


@worker_task(task_definition_name=CHARGE_TASK)
def charge_card(order_id: str) -> dict:
    """Declines every card: the workflow FAILS (no retry) with the order id in its reason."""
    raise NonRetryableException(f"card declined for order {order_id}")
