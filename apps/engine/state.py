"""Plain in-memory state of an execution, the decider's input and output.

``WorkflowState`` and ``TaskState`` carry the same field names as the model columns
(``apps.engine.models``; snake_case, times in epoch ms) so ``apps.engine.store`` converts
rows without mapping tables. Nothing here touches the ORM, the clock or HTTP.

Two task times are easy to confuse: ``visible_at`` is when a poll may hand a worker task
out (always a time: 0 or any past time means "now"), ``timer_at`` is when a system task's
timer fires (``None``, NULL in the database, means "never": no timer).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from apps.engine.status import SUCCESSFUL_TASK, TERMINAL_TASK, TERMINAL_WORKFLOW


# Task types Conductor never retries (TaskType.isBuiltIn).
BUILT_IN_TYPES = frozenset({"DECISION", "SWITCH", "FORK", "FORK_JOIN", "FORK_JOIN_DYNAMIC", "JOIN",
                            "EXCLUSIVE_JOIN", "DO_WHILE"})


@dataclass(slots=True)
class TaskState:
    """One task execution (attempt). Field names match ``TaskExecution`` columns."""

    task_id: str
    workflow_id: str
    task_type: str
    task_def_name: str
    reference_task_name: str
    seq: int = 0
    status: str = "SCHEDULED"
    workflow_type: str = ""
    workflow_priority: int = 0
    iteration: int = 0
    retry_count: int = 0
    poll_count: int = 0
    input_data: dict = field(default_factory=dict)
    output_data: dict = field(default_factory=dict)
    workflow_task: dict = field(default_factory=dict)
    scheduled_time: int = 0
    start_time: int = 0
    end_time: int = 0
    update_time: int = 0
    first_scheduled_time: int = 0
    start_delay_seconds: int = 0
    callback_after_seconds: int = 0
    response_timeout_seconds: int = 0
    queue_name: str = ""
    # poll visibility of a worker task on its queue: handed out once visible_at <= now
    visible_at: int = 0
    # due time of a system task's timer (WAIT duration/until, a delayed retry); None = no timer
    timer_at: int | None = None
    domain: str | None = None
    worker_id: str | None = None
    reason_for_incompletion: str | None = None
    retried: bool = False
    executed: bool = False
    retried_task_id: str | None = None
    sub_workflow_id: str | None = None
    # limits of the TaskDef the task was scheduled with (apps.engine.limits); 0 = none
    concurrent_exec_limit: int = 0
    rate_limit_per_frequency: int = 0
    rate_limit_frequency_in_seconds: int = 0
    # digest (apps.engine.evaluation.key) of the evaluation a DO_WHILE asked for at
    # update_time and still waits for; "" = none
    evaluation_key: str = ""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_TASK

    @property
    def successful(self) -> bool:
        return self.status in SUCCESSFUL_TASK


@dataclass(slots=True)
class WorkflowState:
    """One workflow execution with its tasks ordered by ``seq``. Field names match
    ``WorkflowExecution`` columns; ``tasks`` is the list of TaskState."""

    workflow_id: str
    workflow_name: str
    workflow_version: int
    status: str
    definition: dict
    input: dict = field(default_factory=dict)
    output: dict = field(default_factory=dict)
    variables: dict = field(default_factory=dict)
    correlation_id: str | None = None
    priority: int = 0
    task_to_domain: dict = field(default_factory=dict)
    parent_workflow_id: str | None = None
    parent_workflow_task_id: str | None = None
    reason_for_incompletion: str | None = None
    failed_reference_task_names: list = field(default_factory=list)
    failed_task_names: list = field(default_factory=list)
    re_run_from_workflow_id: str | None = None
    created_by: str | None = None
    event: str | None = None
    idempotency_key: str | None = None
    create_time: int = 0
    update_time: int = 0
    end_time: int = 0
    last_retried_time: int = 0
    next_decide_at: int | None = None
    tasks: list[TaskState] = field(default_factory=list)
    # Not persisted: status/output of the children of SUB_WORKFLOW tasks, loaded with the
    # workflow so the pure decider can mirror them ({child id: {"status", "output", ...}}).
    sub_workflows: dict = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_WORKFLOW

    def task_by_ref(self, reference_task_name: str) -> TaskState | None:
        """The latest attempt with this runtime reference (Conductor: last one wins)."""
        for task in reversed(self.tasks):
            if task.reference_task_name == reference_task_name:
                return task
        return None



WORKFLOW_FIELDS: tuple[str, ...] = tuple(f for f in WorkflowState.__slots__ if f not in ("tasks", "sub_workflows"))  # type: ignore[attr-defined]
TASK_FIELDS: tuple[str, ...] = tuple(TaskState.__slots__)  # type: ignore[attr-defined]

