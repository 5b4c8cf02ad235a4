"""Order fulfillment: the minimal sequential workflow of the "dynamic workflows in Python"
article, run unmodified with the official SDK (``pip install conductor-python``).

Three ``@worker_task`` functions (fetch the order, charge it, ship it) are chained with
``>>``; each step's input is wired from the workflow input or an earlier step's output.

    make run                                   # server on http://127.0.0.1:8080
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    python examples/order_fulfillment.py

``main()`` starts the workers (one process per worker, ``spawn``), registers the
definition, starts one execution asynchronously and waits for it, then runs a second one
synchronously with ``executor.execute`` and prints its status and output.

No ``from __future__ import annotations`` here: the SDK maps task input to worker
arguments by their annotations and needs real types, not strings.
"""
import sys
import time

from conductor.client.automator.task_handler import TaskHandler
from conductor.client.configuration.configuration import Configuration
from conductor.client.orkes_clients import OrkesClients
from conductor.client.worker.worker_task import worker_task
from conductor.client.workflow.conductor_workflow import ConductorWorkflow
from conductor.client.workflow.executor.workflow_executor import WorkflowExecutor

WORKFLOW_NAME = "order_fulfillment"
WORKFLOW_VERSION = 1
TERMINAL_STATUSES = ("COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED")


@worker_task(task_definition_name="fetch_order")
def fetch_order(order_id: str) -> dict:
    return {"order_id": order_id, "amount": 99.99, "item": "Widget"}


@worker_task(task_definition_name="process_payment")
def process_payment(order_id: str, amount: float) -> dict:
    return {"transaction_id": "txn_abc123", "status": "charged"}


@worker_task(task_definition_name="ship_order")
def ship_order(order_id: str, transaction_id: str) -> dict:
    return {"tracking": "TRACK-456", "carrier": "FedEx"}


def order_fulfillment_workflow(executor: WorkflowExecutor, register: bool = True) -> ConductorWorkflow:
    """Build ``order_fulfillment`` v1 (fetch >> pay >> ship) and register it (overwrite)."""
    workflow = ConductorWorkflow(name=WORKFLOW_NAME, version=WORKFLOW_VERSION, executor=executor)

    fetch = fetch_order(task_ref_name="fetch", order_id=workflow.input("order_id"))
    pay = process_payment(
        task_ref_name="pay",
        order_id=workflow.input("order_id"),
        amount=fetch.output("amount"),
    )
    ship = ship_order(
        task_ref_name="ship",
        order_id=workflow.input("order_id"),
        transaction_id=pay.output("transaction_id"),
    )

    workflow >> fetch >> pay >> ship
    workflow.output_parameters({
        "tracking": ship.output("tracking"),
        "transaction_id": pay.output("transaction_id"),
    })
    if register:
        workflow.register(overwrite=True)
    return workflow


def wait_for_completion(executor: WorkflowExecutor, workflow_id: str, timeout_seconds: float = 60):
    """Poll the execution until it ends or ``timeout_seconds`` pass; return the last read."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        workflow = executor.get_workflow(workflow_id=workflow_id, include_tasks=False)
        if workflow is not None and workflow.status in TERMINAL_STATUSES:
            return workflow
        if time.monotonic() >= deadline:
            return workflow
        time.sleep(0.25)


def main() -> int:
    config = Configuration()  # CONDUCTOR_SERVER_URL, default http://localhost:8080/api
    clients = OrkesClients(configuration=config)
    executor = clients.get_workflow_executor()

    task_handler = TaskHandler(workers=[], configuration=config, scan_for_annotated_workers=True)
    task_handler.start_processes()
    try:
        workflow = order_fulfillment_workflow(executor)

        # Asynchronous: start, get an id back at once, follow the execution.
        workflow_id = workflow.start_workflow_with_input(workflow_input={"order_id": "ORD-123"})
        print(f"Started workflow: {workflow_id}")
        started = wait_for_completion(executor, workflow_id)
        print(f"Status: {started.status if started else None}")
        print(f"Output: {started.output if started else None}")

        # Synchronous: block until the execution ends (or 10 s pass) and get its result.
        run = executor.execute(
            name=WORKFLOW_NAME,
            version=WORKFLOW_VERSION,
            workflow_input={"order_id": "ORD-789"},
        )
        print(f"Status: {run.status}")
        print(f"Output: {run.output}")
        print(f"View: {config.ui_host}/execution/{run.workflow_id}")
    finally:
        task_handler.stop_processes()
    ok = started is not None and started.status == "COMPLETED" and run.status == "COMPLETED"
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
