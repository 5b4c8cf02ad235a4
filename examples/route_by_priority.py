"""Route by priority: the SWITCH example of the "dynamic workflows in Python" article.

``classify_ticket`` reads the ticket's description and answers a priority; a
``SwitchTask`` on ``classify.output("priority")`` then runs one branch:

* ``critical`` -> ``page_oncall`` then ``escalate``
* ``high``     -> ``assign_senior``
* anything else (the default case) -> ``add_to_backlog``

    make run                                   # server on http://127.0.0.1:8080
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    python examples/route_by_priority.py

``main()`` starts the workers, registers ``route_by_priority`` v1 and runs one ticket of
each kind synchronously with ``executor.execute``, printing the status, the output and the
branch taken.

No ``from __future__ import annotations`` here: the SDK maps task input to worker
arguments by their annotations and needs real types, not strings.
"""
import sys

from conductor.client.automator.task_handler import TaskHandler
from conductor.client.configuration.configuration import Configuration
from conductor.client.orkes_clients import OrkesClients
from conductor.client.worker.worker_task import worker_task
from conductor.client.workflow.conductor_workflow import ConductorWorkflow
from conductor.client.workflow.executor.workflow_executor import WorkflowExecutor
from conductor.client.workflow.task.switch_task import SwitchTask

try:  # imported from the repository root (the tests), or run as python examples/<name>.py
    from examples.registration import register_unless_present
except ImportError:
    from registration import register_unless_present

WORKFLOW_NAME = "route_by_priority"
WORKFLOW_VERSION = 1

# Words that make a ticket critical or high priority (a stand-in for a real classifier).
CRITICAL_WORDS = ("down", "outage", "data loss", "breach")
HIGH_WORDS = ("error", "fails", "urgent", "cannot")


@worker_task(task_definition_name="classify_ticket")
def classify_ticket(description: str) -> dict:
    text = (description or "").lower()
    if any(word in text for word in CRITICAL_WORDS):
        priority = "critical"
    elif any(word in text for word in HIGH_WORDS):
        priority = "high"
    else:
        priority = "low"
    return {"priority": priority}


@worker_task(task_definition_name="page_oncall")
def page_oncall(ticket_id: str) -> dict:
    return {"paged": "oncall-primary", "ticket_id": ticket_id}


@worker_task(task_definition_name="escalate")
def escalate(ticket_id: str) -> dict:
    return {"escalated_to": "incident-commander", "ticket_id": ticket_id}


@worker_task(task_definition_name="assign_senior")
def assign_senior(ticket_id: str) -> dict:
    return {"assignee": "senior-engineer", "ticket_id": ticket_id}


@worker_task(task_definition_name="add_to_backlog")
def add_to_backlog(ticket_id: str) -> dict:
    return {"backlog": "support-backlog", "ticket_id": ticket_id}


def route_by_priority_workflow(executor: WorkflowExecutor, register: bool = True) -> ConductorWorkflow:
    """Build ``route_by_priority`` v1 (classify >> switch) and register it unless present."""
    workflow = ConductorWorkflow(name=WORKFLOW_NAME, version=WORKFLOW_VERSION, executor=executor)

    classify = classify_ticket(
        task_ref_name="classify",
        description=workflow.input("description"),
    )

    switch = SwitchTask(task_ref_name="priority_router", case_expression=classify.output("priority"))
    # Each case is a list of tasks to execute
    switch.switch_case("critical", [
        page_oncall(task_ref_name="page", ticket_id=workflow.input("ticket_id")),
        escalate(task_ref_name="escalate", ticket_id=workflow.input("ticket_id")),
    ])
    switch.switch_case("high", [
        assign_senior(task_ref_name="assign", ticket_id=workflow.input("ticket_id")),
    ])
    switch.default_case([
        add_to_backlog(task_ref_name="backlog", ticket_id=workflow.input("ticket_id")),
    ])

    workflow >> classify >> switch
    workflow.output_parameters({"priority": classify.output("priority")})
    if register:
        register_unless_present(executor, workflow)
    return workflow


SAMPLE_TICKETS = [
    {"ticket_id": "TCK-1", "description": "Checkout is down for every customer"},
    {"ticket_id": "TCK-2", "description": "Export fails with an error for one account"},
    {"ticket_id": "TCK-3", "description": "Typo on the pricing page"},
]


def main() -> int:
    config = Configuration()  # CONDUCTOR_SERVER_URL, default http://localhost:8080/api
    clients = OrkesClients(configuration=config)
    executor = clients.get_workflow_executor()

    task_handler = TaskHandler(workers=[], configuration=config, scan_for_annotated_workers=True)
    task_handler.start_processes()
    statuses = []
    try:
        route_by_priority_workflow(executor)
        for ticket in SAMPLE_TICKETS:
            # Synchronous: block until the execution ends and get its result. The workers
            # poll for the first time a few seconds after start_processes(), hence a
            # longer wait than the default 10 s.
            run = executor.execute(name=WORKFLOW_NAME, version=WORKFLOW_VERSION, workflow_input=ticket,
                                   wait_for_seconds=30)
            branch = [t.reference_task_name for t in sorted(run.tasks or [], key=lambda t: t.seq or 0)
                      if t.task_type != "SWITCH" and t.reference_task_name != "classify"]
            print(f"Ticket: {ticket['ticket_id']}")
            print(f"Status: {run.status}")
            print(f"Output: {run.output}")
            print(f"Branch: {branch}")
            print(f"View: {config.ui_host}/execution/{run.workflow_id}")
            statuses.append(run.status)
    finally:
        task_handler.stop_processes()
    return 0 if statuses == ["COMPLETED"] * len(SAMPLE_TICKETS) else 1


if __name__ == "__main__":
    sys.exit(main())
