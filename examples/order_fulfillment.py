"""Order fulfillment: the minimal sequential workflow of the "dynamic workflows in Python"
article, run with the official SDK (``pip install conductor-python``).

Three ``@worker_task`` functions (fetch the order, charge it, ship it) are chained with
``>>``; each step's input is wired from the workflow input or an earlier step's output.

    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    python examples/order_fulfillment.py              # all in one (make run on loopback: no key)
    python examples/order_fulfillment.py --register   # the deploy step: an admin key
    python examples/order_fulfillment.py --workers    # the workers alone, until Ctrl-C: a worker key

All in one, it registers the definition when the server does not have it yet (a
definition ``make run`` loaded is left as it is), starts the workers (one process per
worker, ``spawn``), starts one execution asynchronously and waits for it, then runs a
second one synchronously with ``executor.execute``. Starting needs an operator key and
registering an admin key; a key without the role needed gets a message naming it.

No ``from __future__ import annotations`` here: the SDK maps task input to worker
arguments by their annotations and needs real types, not strings.
"""
import argparse
import signal
import sys
import time

from conductor.client.automator.task_handler import TaskHandler
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.rest import ApiException
from conductor.client.orkes_clients import OrkesClients
from conductor.client.worker.worker_task import worker_task
from conductor.client.workflow.conductor_workflow import ConductorWorkflow
from conductor.client.workflow.executor.workflow_executor import WorkflowExecutor

try:  # imported from the repository root (the tests), or run as python examples/<name>.py
    from examples.registration import register_unless_present
except ImportError:
    from registration import register_unless_present

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
    """Build ``order_fulfillment`` v1 (fetch >> pay >> ship); with ``register``, register
    it unless the server already has that name and version."""
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
        register_unless_present(executor, workflow)
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


def run_workers(config: Configuration) -> int:
    """Poll for the three tasks until SIGTERM or Ctrl-C (a worker key suffices)."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    with TaskHandler(workers=[], configuration=config, scan_for_annotated_workers=True) as task_handler:
        task_handler.start_processes()
        print("Workers polling: fetch_order, process_payment, ship_order (Ctrl-C stops them)", flush=True)
        try:
            while not stop:
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
    return 0


def run_all(config: Configuration, executor: WorkflowExecutor) -> int:
    """Register (when missing), start the workers and run the workflow twice."""
    workflow = order_fulfillment_workflow(executor)
    task_handler = TaskHandler(workers=[], configuration=config, scan_for_annotated_workers=True)
    task_handler.start_processes()
    try:
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


def main() -> int:
    parser = argparse.ArgumentParser(description="The order_fulfillment example (see the module doc).")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--register", action="store_true", help="only register the definition (admin key)")
    mode.add_argument("--workers", action="store_true", help="only run the workers, until Ctrl-C (worker key)")
    args = parser.parse_args()

    config = Configuration()  # CONDUCTOR_SERVER_URL, CONDUCTOR_AUTH_KEY/_SECRET from the environment
    executor = OrkesClients(configuration=config).get_workflow_executor()
    try:
        if args.register:
            registered = register_unless_present(executor, order_fulfillment_workflow(executor, register=False))
            print(f"{WORKFLOW_NAME} v{WORKFLOW_VERSION}: {'registered' if registered else 'already there, left as it is'}")
            return 0
        if args.workers:
            return run_workers(config)
        return run_all(config, executor)
    except ApiException as exc:
        if exc.status != 403:
            raise
        # The server names the role the call needs: "... may not POST /api/workflow/...: it needs the operator role"
        print(f"Refused: {exc.body}\nRegister with an admin key (--register), run the workers with a worker key "
              "(--workers) and start workflows with an operator key (docs/security.md).", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
