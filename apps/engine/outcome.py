"""What a decide produces: the changed state (``DeciderOutcome``), the side effects the
executor must perform (``Action``) and the exception that ends a workflow from inside
the decider (``TerminateWorkflow``). Plain data, shared by the decider, the task types,
the store and the executor; imports nothing but ``apps.engine.state``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from apps.engine.state import TaskState


class TerminateWorkflow(Exception):
    """Raised inside the decider to end the workflow (Conductor's TerminateWorkflowException).

    ``status`` is the workflow status to set (FAILED, TIMED_OUT, TERMINATED, COMPLETED);
    ``task`` the task that caused it, if any.
    """

    def __init__(self, reason: str, status: str = "FAILED", task: TaskState | None = None):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.task = task


@dataclass(slots=True)
class Action:
    """A side effect the decider asks the executor for (performed by ``apps.engine.effects``;
    not an operator action of the UI, ``apps.ui.actions.OperatorAction``, nor an event
    handler's action). ``kind`` is one of:
    ``start_sub_workflow`` (task), ``terminate_sub_workflow`` (task, reason),
    ``run_system_task`` (task: an async system task to run in the cluster),
    ``start_failure_workflow`` (reason), ``notify_parent`` (workflow ended),
    ``start_workflow`` (task: START_WORKFLOW), ``publish_event`` (task), ``evaluate``
    (task, request: an ``evaluation.Request`` the executor runs outside the lock, after
    the transaction)."""

    kind: str
    task: TaskState | None = None
    data: dict = field(default_factory=dict)


@dataclass(slots=True)
class DeciderOutcome:
    """What one decide changed. ``new_tasks`` are to insert, ``updated_tasks`` to update
    (keyed by task_id), ``workflow_changed`` says the workflow row must be written."""

    new_tasks: list[TaskState] = field(default_factory=list)
    updated_tasks: dict[str, TaskState] = field(default_factory=dict)
    removed_task_ids: list[str] = field(default_factory=list)
    workflow_changed: bool = False
    actions: list[Action] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Services:
    """What an inline action may do outside the workflow being decided, handed to
    ``TaskType.apply_inline`` by the executor (``apps.engine.executor.SERVICES``), so task
    types import neither the executor nor the ORM.

    * ``workflow_start(**kwargs) -> str``: ``executor.workflow_start`` (starting a child
      workflow decides it inside the parent's transaction: the one recursion of the engine).
    * ``workflow_terminate(*, workflow_id, reason)``: ``executor.workflow_terminate``.
    * ``workflow_summary(workflow_id) -> dict | None``: ``{workflow_id, status, output,
      reason_for_incompletion, workflow_name, workflow_version}`` of a stored execution.
    * ``event_message_insert(*, message_id, event, payload, now) -> bool``: write a
      message on the internal event queue in the current transaction
      (``event_queue.event_message_insert``).
    * ``env``: what ``${workflow.env.X}`` and bare names read (``WorkflowEnvironment``).
    * ``workflow_messages_pop(workflow_id, count, now) -> list[dict]``: take up to
      ``count`` messages of the workflow's message queue in the current transaction
      (``apps.wmq.queue.pop``), oldest first; ``wmq_max_batch_size() -> int`` the most one
      PULL_WORKFLOW_MESSAGES takes.
    """

    workflow_start: Callable[..., str]
    workflow_terminate: Callable[..., None]
    workflow_summary: Callable[[str], "dict | None"]
    event_message_insert: Callable[..., bool]
    env: Mapping[str, str]
    workflow_messages_pop: Callable[[str, int, int], list]
    wmq_max_batch_size: Callable[[], int]
