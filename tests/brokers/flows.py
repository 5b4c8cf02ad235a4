"""The end-to-end flow every broker test runs: an EVENT task on a broker queue, an
EventHandler on that same queue that starts a workflow, the outbox sending after commit,
the consumer handling what arrives; and the checks (one started workflow per published
message, none twice)."""
from __future__ import annotations

from apps.engine.models import WorkflowExecution
from tests.factories import unique, workflow_def


def publisher_def(name: str, sink: str) -> dict:
    return workflow_def(name, [{"name": "notify", "taskReferenceName": "notify", "type": "EVENT", "sink": sink,
                                "inputParameters": {"orderId": "${workflow.input.orderId}"}}])


def handler(name: str, event: str, target: str) -> dict:
    return {"name": name, "event": event, "active": True, "actions": [{
        "action": "start_workflow",
        "start_workflow": {"name": target, "input": {"orderId": "${orderId}", "from": "${workflowInstanceId}"}}}]}


def set_up(api, sink: str) -> tuple[str, str]:
    """Register the publishing workflow, the started one and the handler; returns their
    names ``(publisher, started)``."""
    publisher, started = unique("pub"), unique("started")
    api.register_workflow(workflow_def(started, [{"name": "noop", "taskReferenceName": "noop", "type": "NOOP"}]))
    api.register_workflow(publisher_def(publisher, sink))
    api.ok(api.post("/event", handler(unique("h"), sink, started)))
    return publisher, started


def start_publishers(api, publisher: str, orders: list[str]) -> dict[str, str]:
    """Start one publisher per order; returns ``{orderId: EVENT task id}`` after checking
    each EVENT task COMPLETED with the sink as ``event_produced``."""
    out = {}
    for order in orders:
        wf = api.workflow(api.start(publisher, {"orderId": order}))
        task = wf["tasks"][0]
        assert task["status"] == "COMPLETED", task
        out[order] = task["taskId"]
    return out


def started_orders(started: str) -> list[tuple[str, str]]:
    """``(orderId, conductor.event.messageId)`` of every started workflow (sorted)."""
    rows = WorkflowExecution.objects.filter(workflow_name=started).values_list("input", flat=True)
    return sorted((r["orderId"], r["conductor.event.messageId"]) for r in rows)
