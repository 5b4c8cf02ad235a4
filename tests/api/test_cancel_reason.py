"""A task cancelled because its workflow ended (terminate, a failed task elsewhere) keeps
no reason of its own: Conductor's ``WorkflowExecutorOps.cancelNonTerminalTasks`` only sets
CANCELED; the workflow carries the reason. Found by the reference run against Conductor
OSS 3.32.3 (cases 14 and 48; docs/differences.md)."""
from __future__ import annotations

from tests.factories import simple_task, task_def, unique, workflow_def


def test_a_terminated_workflows_pending_task_is_cancelled_without_a_reason(api):
    name, worker = unique("cancel_reason"), unique("cancel_reason_task")
    api.register_task_defs(task_def(worker))
    api.register_workflow(workflow_def(name, [simple_task(worker, "pending")]))
    workflow_id = api.start(name)
    api.ok(api.delete(f"/workflow/{workflow_id}", params={"reason": "operator stop"}))

    wf = api.workflow(workflow_id, include_tasks=True)
    assert (wf["status"], wf["reasonForIncompletion"]) == ("TERMINATED", "operator stop")
    (task,) = wf["tasks"]
    assert task["status"] == "CANCELED"
    assert task.get("reasonForIncompletion") is None, task
