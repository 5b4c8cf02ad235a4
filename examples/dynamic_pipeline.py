"""Dynamic pipeline: the "build at run time, no registration" example of the
"dynamic workflows in Python" article.

The list of steps is only known at run time (here ``["validate", "enrich", "store"]``;
an LLM's plan in the article's use case). Each step becomes a SIMPLE task whose ``data``
input is the previous step's ``result`` (``${validate_0.output.result}`` ...); the
definition travels inline in a ``StartWorkflowRequest(workflow_def=...)`` and
``executor.start_workflow`` starts it without registering anything.

A SIMPLE task needs a worker polling its name: ``validate``, ``enrich`` and ``store``
below (each answers ``{"result": ...}``). A step without a worker would wait for one.

    make run                                   # server on http://127.0.0.1:8080
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    python examples/dynamic_pipeline.py

No ``from __future__ import annotations`` here: the SDK maps task input to worker
arguments by their annotations and needs real types, not strings.
"""
import sys
import time

from conductor.client.automator.task_handler import TaskHandler
from conductor.client.configuration.configuration import Configuration
from conductor.client.http.models import StartWorkflowRequest
from conductor.client.orkes_clients import OrkesClients
from conductor.client.worker.worker_task import worker_task
from conductor.client.workflow.executor.workflow_executor import WorkflowExecutor

WORKFLOW_NAME = "dynamic_pipeline"
DEFAULT_STEPS = ["validate", "enrich", "store"]
TERMINAL_STATUSES = ("COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED")


@worker_task(task_definition_name="validate")
def validate(data: dict) -> dict:
    data = dict(data or {})
    if not data:
        raise ValueError("nothing to validate")
    return {"result": {**data, "validated": True}}


@worker_task(task_definition_name="enrich")
def enrich(data: dict) -> dict:
    data = dict(data or {})
    return {"result": {**data, "enriched": True, "field_count": len(data)}}


@worker_task(task_definition_name="store")
def store(data: dict) -> dict:
    data = dict(data or {})
    return {"result": {**data, "stored": True}}


def build_workflow_def(steps: list) -> dict:
    """The inline WorkflowDef of ``steps``, each step a SIMPLE task fed by the previous one."""
    tasks = []
    for i, step in enumerate(steps):
        tasks.append({
            "name": step,
            "taskReferenceName": f"{step}_{i}",
            "type": "SIMPLE",
            "inputParameters": {
                "data": "${workflow.input.data}" if i == 0 else f"${{{steps[i-1]}_{i-1}.output.result}}",
            },
        })
    return {
        "name": WORKFLOW_NAME,
        "version": 1,
        "tasks": tasks,
        "outputParameters": {
            "result": f"${{{steps[-1]}_{len(steps)-1}.output.result}}",
        },
    }


def start_dynamic_pipeline(executor: WorkflowExecutor, steps: list = None, data: dict = None) -> str:
    """Start ``dynamic_pipeline`` from an inline definition (no pre-registration); return its id."""
    steps = list(steps or DEFAULT_STEPS)  # determined at runtime
    # Start with inline definition: no pre-registration needed
    request = StartWorkflowRequest(
        name=WORKFLOW_NAME,
        workflow_def=build_workflow_def(steps),
        input={"data": data if data is not None else {"key": "value"}},
    )
    return executor.start_workflow(request)


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
        workflow_id = start_dynamic_pipeline(executor, DEFAULT_STEPS, {"key": "value"})
        print(f"Started dynamic workflow: {workflow_id}")
        done = wait_for_completion(executor, workflow_id)
        print(f"Status: {done.status if done else None}")
        print(f"Output: {done.output if done else None}")
        print(f"View: {config.ui_host}/execution/{workflow_id}")
    finally:
        task_handler.stop_processes()
    return 0 if done is not None and done.status == "COMPLETED" else 1


if __name__ == "__main__":
    sys.exit(main())
