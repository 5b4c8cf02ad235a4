"""Batch processor: the SUB_WORKFLOW example of the "dynamic workflows in Python" article.

The child workflow ``process_single_item`` (``validate_item >> transform_item``, output
``result``) is registered on its own; the parent ``batch_processor`` prepares a batch,
runs the child on its first item with a ``SubWorkflowTask`` (version 1) and aggregates
what the child answered (``run_child.output("result")``).

    make run                                   # server on http://127.0.0.1:8080
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    python examples/batch_processor.py

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
from conductor.client.workflow.task.sub_workflow_task import SubWorkflowTask

try:  # imported from the repository root (the tests), or run as python examples/<name>.py
    from examples.registration import register_unless_present
except ImportError:
    from registration import register_unless_present

CHILD_NAME = "process_single_item"
PARENT_NAME = "batch_processor"
TERMINAL_STATUSES = ("COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED")


def batch_items(batch_id: str) -> list:
    """The items of a batch (a stand-in for reading them from storage)."""
    return [{"sku": f"{batch_id}-{n}", "quantity": n, "unit_price": 2.5 * n} for n in (1, 2, 3)]


@worker_task(task_definition_name="prepare_batch")
def prepare_batch(batch_id: str) -> dict:
    items = batch_items(batch_id)
    return {"batch_id": batch_id, "size": len(items), "first_item": items[0], "items": items}


@worker_task(task_definition_name="validate_item")
def validate_item(item: dict) -> dict:
    item = dict(item or {})
    if not item.get("sku") or (item.get("quantity") or 0) <= 0:
        raise ValueError(f"invalid item: {item}")
    return {"validated": {**item, "valid": True}}


@worker_task(task_definition_name="transform_item")
def transform_item(item: dict) -> dict:
    item = dict(item or {})
    return {"transformed": {**item, "total": round(item["quantity"] * item["unit_price"], 2),
                            "sku": item["sku"].upper()}}


@worker_task(task_definition_name="aggregate_results")
def aggregate_results(result: dict) -> dict:
    results = [result] if result else []
    return {"processed": len(results), "grand_total": sum(r.get("total", 0) for r in results),
            "skus": [r.get("sku") for r in results]}


def process_single_item_workflow(executor: WorkflowExecutor, register: bool = True) -> ConductorWorkflow:
    """Build the child ``process_single_item`` v1 (validate >> transform) and register it."""
    child = ConductorWorkflow(name=CHILD_NAME, version=1, executor=executor)
    validate = validate_item(task_ref_name="validate", item=child.input("item"))
    transform = transform_item(task_ref_name="transform", item=validate.output("validated"))
    child >> validate >> transform
    child.output_parameters({"result": transform.output("transformed")})
    if register:
        register_unless_present(executor, child)
    return child


def batch_processor_workflow(executor: WorkflowExecutor, register: bool = True) -> ConductorWorkflow:
    """Build the parent ``batch_processor`` v1 (prepare >> child >> aggregate) and register
    it; ``register`` also registers the child first."""
    if register:
        process_single_item_workflow(executor, register=True)

    parent = ConductorWorkflow(name=PARENT_NAME, version=1, executor=executor)
    prepare = prepare_batch(task_ref_name="prepare", batch_id=parent.input("batch_id"))
    run_child = SubWorkflowTask(
        task_ref_name="process_item",
        workflow_name=CHILD_NAME,
        version=1,
    )
    run_child.input_parameters.update({"item": prepare.output("first_item")})
    aggregate = aggregate_results(
        task_ref_name="aggregate",
        result=run_child.output("result"),
    )
    parent >> prepare >> run_child >> aggregate
    parent.output_parameters({
        "item_result": run_child.output("result"),
        "processed": aggregate.output("processed"),
        "grand_total": aggregate.output("grand_total"),
    })
    if register:
        register_unless_present(executor, parent)
    return parent


def wait_for_completion(executor: WorkflowExecutor, workflow_id: str, timeout_seconds: float = 60):
    """Poll the execution until it ends or ``timeout_seconds`` pass; return the last read."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        workflow = executor.get_workflow(workflow_id=workflow_id, include_tasks=True)
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
        parent = batch_processor_workflow(executor)
        workflow_id = parent.start_workflow_with_input(workflow_input={"batch_id": "batch-7"})
        print(f"Started workflow: {workflow_id}")
        done = wait_for_completion(executor, workflow_id)
        print(f"Status: {done.status if done else None}")
        print(f"Output: {done.output if done else None}")
        child_ids = [t.sub_workflow_id for t in (done.tasks if done else None) or [] if t.sub_workflow_id]
        print(f"Child workflow: {child_ids[0] if child_ids else None}")
        print(f"View: {config.ui_host}/execution/{workflow_id}")
    finally:
        task_handler.stop_processes()
    return 0 if done is not None and done.status == "COMPLETED" else 1


if __name__ == "__main__":
    sys.exit(main())
