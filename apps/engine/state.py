"""Plain in-memory state of an execution, the decider's input and output.

``WorkflowState`` and ``TaskState`` carry the same field names as the model columns
(``apps.engine.models``; snake_case, times in epoch ms) so ``apps.engine.store`` converts
rows without mapping tables. Nothing here touches the ORM, the clock or HTTP.

Two task times are easy to confuse: ``visible_at`` is when a poll may hand a worker task
out (always a time: 0 or any past time means "now"), ``timer_at`` is when a system task's
timer fires (``None``, NULL in the database, means "never": no timer).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

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
        attempts = attempts_of(self.tasks, (reference_task_name,))[reference_task_name]
        return attempts[-1] if attempts else None


# --- the task list of a locked execution, loaded as far as a decide needs ------------------

class TaskSource(Protocol):
    """Where a ``TaskList`` reads the task rows it has not loaded (``apps.engine.store``).
    Every method returns TaskState objects built from rows, ordered by ``seq``."""

    def by_refs(self, refs: list[str]) -> list[TaskState]:
        """Every attempt whose runtime reference is one of ``refs``."""

    def by_id(self, task_id: str) -> TaskState | None:
        """The task with this id in this execution, or None."""

    def all(self) -> list[TaskState]:
        """Every task of the execution."""

    def max_seq(self) -> int:
        """The highest ``seq`` stored (0 when none)."""

    def matching(self, statuses: frozenset[str] | None, task_type: str | None) -> list[TaskState]:
        """Every task whose status is one of ``statuses`` (any when None) and whose type
        is ``task_type`` (any when None)."""

    def last(self) -> TaskState | None:
        """The task with the highest ``seq``, or None."""

    def outputs(self) -> list:
        """Every task as a narrow read-only row (``store.NarrowTask``: ``task_id``,
        ``reference_task_name``, ``seq``, ``retry_count``, ``iteration``, ``status``,
        ``task_def_name``, ``task_type``, ``reason_for_incompletion``, ``output_data``,
        ``workflow_task``, ``terminal``, ``successful``), for a reader of many outputs."""


class TaskList:
    """The tasks of a locked execution (ordered by ``seq``), loaded on demand.

    A decide needs the tasks that are not settled (``active``: neither ``executed`` nor
    ``retried`` nor SKIPPED: pending tasks, and finished ones whose successors are not
    scheduled yet) plus a few finished ones found by reference (``attempts_of``). Only the
    active rows are read when the workflow is locked; the others are read by reference
    when asked for, and all of them (``materialize``) only when something iterates, indexes
    or measures the list: then it behaves as the plain list of every task. Loaded objects
    are never replaced (a task changed in memory stays changed); ``loaded_status`` keeps
    the status each row had when read (the compare-and-set of ``store.save``).

    More than ``LOOKUP_LIMIT`` references asked for one by one load everything instead
    (one statement instead of many). ``store`` reads an execution whose highest seq is at
    most ``LOAD_ALL_UP_TO`` whole when it locks it (a list with no source: complete from
    the start); ``max_seq``, when given, is the stored tasks' highest seq (read with the
    workflow row), so a decide that schedules a task needs no statement for it."""

    LOOKUP_LIMIT = 64
    LOAD_ALL_UP_TO = 32

    def __init__(self, active: list[TaskState], source: TaskSource | None, max_seq: int | None = None):
        self._items = list(active)
        self._source = source
        self._complete = source is None
        self._objects = {t.task_id: t for t in self._items}
        self.loaded_status = {t.task_id: t.status for t in self._items}
        self._new: list[TaskState] = []
        self._removed: set[str] = set()
        self._index: dict[str, list[TaskState]] | None = None  # ref -> attempts (seq order)
        self._db_max_seq: int | None = max_seq  # the stored tasks' highest seq, when read with them
        self._looked_up = 0

    # --- loading ----------------------------------------------------------------------------

    def _adopt(self, row: TaskState) -> TaskState:
        known = self._objects.get(row.task_id)
        if known is not None:
            return known
        self._objects[row.task_id] = row
        self.loaded_status[row.task_id] = row.status
        return row

    def materialize(self) -> list[TaskState]:
        """Load every task (once) and return the full list, ordered by seq."""
        if not self._complete:
            rows = [self._adopt(r) for r in self._source.all() if r.task_id not in self._removed]
            ids = {t.task_id for t in rows}
            self._items = rows + [t for t in self._new if t.task_id not in ids and t.task_id not in self._removed]
            self._complete = True
            self._index = None
        return self._items

    @property
    def complete(self) -> bool:
        """True once every task is loaded (then ``active`` is the full list)."""
        return self._complete

    def active(self) -> list[TaskState]:
        """The loaded tasks in seq order: the unsettled ones and the new ones (every task
        once the list is complete). A superset of the tasks that are not terminal."""
        return self._items

    def attempts_of(self, refs: Iterable[str]) -> dict[str, list[TaskState]]:
        """``{ref: [every attempt with that runtime reference, in seq order]}``."""
        refs = list(dict.fromkeys(refs))
        if self._complete:
            if self._index is None:
                self._index = {}
                for t in self._items:
                    self._index.setdefault(t.reference_task_name, []).append(t)
            return {r: self._index.get(r, []) for r in refs}
        if self._index is None:
            self._index = {}
        missing = [r for r in refs if r not in self._index]
        if missing:
            self._looked_up += len(missing)
            if self._looked_up > self.LOOKUP_LIMIT:
                self.materialize()
                return self.attempts_of(refs)
            wanted = set(missing)
            for r in missing:
                self._index[r] = []
            for row in self._source.by_refs(missing):
                if row.task_id not in self._removed:
                    self._index[row.reference_task_name].append(self._adopt(row))
            for t in self._new:
                if t.reference_task_name in wanted and t.task_id not in self._removed:
                    self._index[t.reference_task_name].append(t)
        return {r: self._index[r] for r in refs}

    def by_id(self, task_id: str) -> TaskState | None:
        """The task with this id (loaded, or read), or None."""
        known = self._objects.get(task_id)
        if known is not None or self._complete:
            return known if known is not None and task_id not in self._removed else None
        row = self._source.by_id(task_id)
        return self._adopt(row) if row is not None and task_id not in self._removed else None

    def max_seq(self) -> int:
        """The highest seq of any task (0 when there is none)."""
        if self._complete:
            return max((t.seq for t in self._items), default=0)
        if self._db_max_seq is None:
            self._db_max_seq = self._source.max_seq()
        return max(self._db_max_seq, max((t.seq for t in self._new), default=0))

    def _loaded_and_new(self) -> Iterator[TaskState]:
        for t in self._objects.values():
            if t.task_id not in self._removed:
                yield t

    def matching(self, *, statuses: frozenset[str] | None = None, task_type: str | None = None) -> list[TaskState]:
        """The tasks (in seq order) whose status is one of ``statuses`` and whose type is
        ``task_type`` (None: any), as they are now: the rows that match in the database
        and the loaded or new tasks that match in memory (a loaded task changed by this
        decide is judged by its new status). Reads only the matching rows."""
        def fits(t: TaskState) -> bool:
            return (statuses is None or t.status in statuses) and (task_type is None or t.task_type == task_type)

        if self._complete:
            return [t for t in self._items if fits(t)]
        found = {t.task_id: t for t in (self._adopt(r) for r in self._source.matching(statuses, task_type))
                 if t.task_id not in self._removed}
        for t in self._loaded_and_new():
            found.setdefault(t.task_id, t)
        return sorted((t for t in found.values() if fits(t)), key=lambda t: t.seq)

    def last(self) -> TaskState | None:
        """The task with the highest seq (``list[-1]``), reading one row."""
        if self._complete or self._removed:
            return self._items[-1] if self.materialize() else None
        stored = self._source.last()
        candidates = [t for t in self._loaded_and_new()]
        if stored is not None:
            candidates.append(self._adopt(stored))
        return max(candidates, key=lambda t: t.seq, default=None)

    def outputs_of(self, refs: Iterable[str]) -> dict[str, list]:
        """``{ref: attempts in seq order}`` like ``attempts_of``, for a reader that does not
        change them (``params.loop_output``, a JOIN that ends): beyond ``LOOKUP_LIMIT``
        references the execution's tasks are read as narrow rows (``TaskSource.outputs``)
        instead of whole ones; a task loaded (or new) is given as its object, as changed
        in memory."""
        refs = list(dict.fromkeys(refs))
        if self._complete or len(refs) <= self.LOOKUP_LIMIT:
            return self.attempts_of(refs)
        out: dict[str, list] = {r: [] for r in refs}
        seen: set[str] = set()
        for row in self._source.outputs():
            seen.add(row.task_id)
            if row.task_id in self._removed:
                continue
            found = out.get(row.reference_task_name)
            if found is not None:
                found.append(self._objects.get(row.task_id, row))
        for t in self._new:
            if t.task_id not in seen and t.task_id not in self._removed and t.reference_task_name in out:
                out[t.reference_task_name].append(t)
                out[t.reference_task_name].sort(key=lambda x: x.seq)
        return out

    # --- the list protocol (what is not answered above loads everything) --------------------

    def append(self, task: TaskState) -> None:
        self._items.append(task)
        self._objects[task.task_id] = task
        if not self._complete:
            self._new.append(task)
        if self._index is not None and (self._complete or task.reference_task_name in self._index):
            self._index.setdefault(task.reference_task_name, []).append(task)

    def extend(self, tasks: Iterable[TaskState]) -> None:
        for task in tasks:
            self.append(task)

    def remove(self, task: TaskState) -> None:
        if self._complete:
            self._items.remove(task)
        elif task in self._items:
            self._items.remove(task)
        self._removed.add(task.task_id)
        if not self._complete and task in self._new:
            self._new.remove(task)
        if self._index is not None and task in self._index.get(task.reference_task_name, ()):
            self._index[task.reference_task_name].remove(task)

    def __bool__(self) -> bool:
        if self._items:
            return True
        return not self._complete and self.max_seq() > 0

    def __iter__(self) -> Iterator[TaskState]:
        return iter(self.materialize())

    def __reversed__(self) -> Iterator[TaskState]:
        return reversed(self.materialize())

    def __len__(self) -> int:
        return len(self.materialize())

    def __getitem__(self, index):
        return self.materialize()[index]

    def __contains__(self, task) -> bool:
        return task in self.materialize()

    def index(self, task, *args) -> int:
        return self.materialize().index(task, *args)

    def __eq__(self, other) -> bool:
        if isinstance(other, TaskList):
            other = other.materialize()
        return self.materialize() == other

    def __repr__(self) -> str:
        return f"TaskList({self.materialize()!r})"


def active_tasks(tasks: list[TaskState] | TaskList) -> list[TaskState]:
    """The tasks a decide must look at (``TaskList.active``; a plain list is all of it)."""
    return tasks.active() if isinstance(tasks, TaskList) else tasks


def attempts_of(tasks: list[TaskState] | TaskList, refs: Iterable[str]) -> dict[str, list[TaskState]]:
    """``{ref: attempts in seq order}`` for these runtime references (see ``TaskList``)."""
    if isinstance(tasks, TaskList):
        return tasks.attempts_of(refs)
    out: dict[str, list[TaskState]] = {r: [] for r in refs}
    for t in tasks:
        found = out.get(t.reference_task_name)
        if found is not None:
            found.append(t)
    return out


def task_by_id(tasks: list[TaskState] | TaskList, task_id: str) -> TaskState | None:
    """The task with this id, or None."""
    if isinstance(tasks, TaskList):
        return tasks.by_id(task_id)
    return next((t for t in tasks if t.task_id == task_id), None)


def matching(tasks: list[TaskState] | TaskList, *, statuses: frozenset[str] | None = None,
             task_type: str | None = None) -> list[TaskState]:
    """The tasks (seq order) with a status in ``statuses`` and of type ``task_type`` (None:
    any); a ``TaskList`` reads only the matching rows (``TaskList.matching``)."""
    if isinstance(tasks, TaskList):
        return tasks.matching(statuses=statuses, task_type=task_type)
    return [t for t in tasks if (statuses is None or t.status in statuses)
            and (task_type is None or t.task_type == task_type)]


def last_task(tasks: list[TaskState] | TaskList) -> TaskState | None:
    """The task with the highest seq (the list's last), or None when there is none."""
    if isinstance(tasks, TaskList):
        return tasks.last()
    return tasks[-1] if tasks else None


def outputs_of(tasks: list[TaskState] | TaskList, refs: Iterable[str]) -> dict[str, list]:
    """``attempts_of`` for a reader that changes none of them (``TaskList.outputs_of`` may
    answer with narrow read-only rows, see ``TaskSource.outputs``)."""
    if isinstance(tasks, TaskList):
        return tasks.outputs_of(refs)
    return attempts_of(tasks, refs)


def max_seq(tasks: list[TaskState] | TaskList) -> int:
    """The highest seq among the tasks (0 when none)."""
    if isinstance(tasks, TaskList):
        return tasks.max_seq()
    return max((t.seq for t in tasks), default=0)


WORKFLOW_FIELDS: tuple[str, ...] = tuple(f for f in WorkflowState.__slots__ if f not in ("tasks", "sub_workflows"))  # type: ignore[attr-defined]
TASK_FIELDS: tuple[str, ...] = tuple(TaskState.__slots__)  # type: ignore[attr-defined]

