"""PULL_WORKFLOW_MESSAGES: take messages pushed to the workflow's message queue
(``POST /api/workflow/{id}/messages``, ``apps.wmq``).

Input (resolved ``inputParameters``): ``batchSize`` (a number, default 1, at least 1, at
most ``CONDUCTOR_WMQ["MAX_BATCH_SIZE"]``: 100) and ``blocking`` (a boolean, default true;
any non-boolean value counts as true, as Conductor reads it). Output: ``messages`` (the
WorkflowMessages taken, oldest first: ``{id, workflowId, payload, receivedAt}``) and
``count``. A blocking pull with an empty queue stays IN_PROGRESS until a push; a
non-blocking one completes with ``messages: []`` and ``count: 0``.
Source: Conductor's PullWorkflowMessages and PullWorkflowMessagesTaskMapper.

Conductor re-evaluates a waiting pull every second. Here the task asks for the inline
action ``pull_workflow_messages`` on every decide while IN_PROGRESS; the executor runs it
in the deciding transaction (``Services.workflow_messages_pop``: rows deleted with the
task's completion, so a message is taken exactly once and nothing is lost on a crash).
The push service writes the message and decides the workflow under its lock in one
transaction, so a waiting pull completes in the push's own decide: no polling at all.
"""
from __future__ import annotations

from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import SystemTask, act_once

PULL = "pull_workflow_messages"


def batch_size(task: TaskState, max_batch_size: int) -> int:
    """``batchSize`` of the input as Conductor reads it: a number (not a boolean) taken as
    an integer, below 1 -> 1, above ``max_batch_size`` -> ``max_batch_size``; anything
    else -> 1."""
    raw = task.input_data.get("batchSize")
    requested = int(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else 1
    return min(max(requested, 1), max_batch_size)


def blocking(task: TaskState) -> bool:
    """``blocking`` of the input: the boolean when it is one, else True."""
    raw = task.input_data.get("blocking")
    return raw if isinstance(raw, bool) else True


@register
class PullWorkflowMessages(SystemTask):
    """``start`` sets the task IN_PROGRESS and asks for a pull; ``execute`` asks again on
    every later decide while it waits; ``apply_inline`` takes the messages."""

    type_name = "PULL_WORKFLOW_MESSAGES"

    def start(self, d, task: TaskState) -> None:
        task.status = "IN_PROGRESS"
        task.start_time = task.start_time or d.now
        task.update_time = d.now
        d.touch(task)
        d.act(PULL, task)

    def execute(self, d, task: TaskState) -> bool:
        if task.status == "IN_PROGRESS":
            act_once(d, PULL, task)
        return False

    def apply_inline(self, wf, outcome, action, now: int, services) -> bool:
        """Pop up to ``batchSize`` messages inside the deciding transaction and complete the
        task with them (or with none when not blocking); True when the task changed."""
        task = action.task
        if action.kind != PULL or task.status != "IN_PROGRESS":
            return False
        messages = services.workflow_messages_pop(wf.workflow_id, batch_size(task, services.wmq_max_batch_size()), now)
        if not messages and blocking(task):
            return False
        task.output_data = {**(task.output_data or {}), "messages": messages, "count": len(messages)}
        task.status = "COMPLETED"
        task.update_time = now
        task.end_time = now
        return True
