"""Workers of the governed support agent (``examples/definitions/governed_support_agent.json``).

The workflow ``governed_support_agent`` plans each step with ``LLM_CHAT_COMPLETE`` (JSON
mode), lets a SWITCH route only allow-listed actions to MCP tools (``CALL_MCP_TOOL``
``lookup_order``), caps the loop by iterations and by tokens spent (DO_WHILE), asks a
person before the irreversible ``issue_refund`` (HUMAN), and tells the customer through
the ``notify_customer`` worker below. If anything fails after the refund, its
``failureWorkflow`` ``governed_support_agent_compensation`` voids the refund
(``void_refund``) and opens an incident (``open_incident`` worker below).

The AI tasks run inside the server; only these two are workers:

    make run                                    # loads the definitions
    export CONDUCTOR_SERVER_URL=http://127.0.0.1:8080/api
    python examples/governed_support_agent.py   # runs the workers until Ctrl-C

See docs/ai.md for the provider and MCP settings; ``examples/agent_demo.py`` runs the
whole agent with a demo MCP shop and a scripted planner, no keys needed.

No ``from __future__ import annotations`` here: the SDK maps task input to worker
arguments by their annotations and needs real types, not strings.
"""
from conductor.client.automator.task_handler import TaskHandler
from conductor.client.configuration.configuration import Configuration
from conductor.client.worker.worker_task import worker_task

BOUNCING_DOMAIN = "@bounce.invalid"


class MailboxRejected(Exception):
    """The customer's mail server refused the message."""


@worker_task(task_definition_name="notify_customer")
def notify_customer(email: str, ticketId: str, outcome: str, detail: object = None) -> dict:
    """Tell the customer the outcome (``refunded``, ``declined``, ``no_refund``). A
    mailbox on ``bounce.invalid`` refuses mail: the task fails (TaskDef retryCount 0),
    so the workflow fails and its compensation runs."""
    if not email or email.endswith(BOUNCING_DOMAIN):
        raise MailboxRejected(f"mailbox {email!r} rejected the message")
    return {"sent": True, "to": email, "ticketId": ticketId, "outcome": outcome, "detail": detail}


@worker_task(task_definition_name="open_incident")
def open_incident(ticketId: str, failedWorkflowId: str, reason: str = None, voidedRefund: str = None) -> dict:
    """Record an incident for a failed agent run (here: the incident id only)."""
    return {"incident": f"INC-{ticketId}", "failedWorkflowId": failedWorkflowId, "reason": reason,
            "voidedRefund": voidedRefund}


def main() -> None:
    handler = TaskHandler(workers=[], configuration=Configuration(), scan_for_annotated_workers=True)
    handler.start_processes()
    try:
        handler.join_processes()
    except KeyboardInterrupt:
        pass
    finally:
        handler.stop_processes()


if __name__ == "__main__":
    main()
