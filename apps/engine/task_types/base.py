"""The contract of a task type (Conductor's TaskMapper + WorkflowSystemTask roles).

A task type turns a WorkflowTask into task executions (``map``), does its work when
scheduled (``start``), is re-evaluated on every decide while not terminal (``execute``,
synchronous types only), may name a due time for the sweeper (``due_at``) and reacts to
workflow termination (``cancel``). Types run inside the decider: they mutate TaskState /
WorkflowState in memory and ask for side effects with ``decider.act(...)``; they never
touch the ORM, the clock or the network (async types do that in ``run_async``, called by
the django-q2 cluster outside any lock; inline actions in ``apply_inline`` get the
executor's services passed in). ``finish`` and ``SystemTask`` are shared by the system
task types.
"""
from __future__ import annotations

from apps.engine import evaluation
from apps.engine.state import TaskState


def async_complete(task: TaskState, workflow_task: dict | None = None) -> bool:
    """Conductor's ``TaskModel.isAsyncComplete``: the task input's ``asyncComplete`` when
    the input has that key (true or "true"), else the WorkflowTask's ``asyncComplete``
    (default False). An async-complete system task stays IN_PROGRESS after its work until
    something completes it through the task update API."""
    if "asyncComplete" in task.input_data:
        value = task.input_data["asyncComplete"]
        return value is True or (isinstance(value, str) and value.lower() == "true")
    return bool((workflow_task or {}).get("asyncComplete"))


class TaskType:
    """Base task type. Class attributes:

    * ``type_name``: Conductor's type string (``SIMPLE``, ``SWITCH`` ...).
    * ``is_worker``: handed to workers by poll (queue ``[domain:]name``).
    * ``is_async``: run by the django-q2 cluster outside the decide lock (HTTP ...).
    * ``has_task_def``: timeouts/retries come from a TaskDef.

    Every hook gets ``d``, the running ``apps.engine.decider.Decider`` (its ``now``, ``wf``,
    ``new_task``, ``touch``, ``act`` ...); the decider imports the task types, never the
    other way round.
    """

    type_name = ""
    is_worker = False
    is_async = False
    has_task_def = True

    def map(self, d, workflow_task: dict, retry_count: int) -> list[TaskState]:
        """Task executions for this WorkflowTask (default: one, SCHEDULED)."""
        return [d.new_task(workflow_task, retry_count=retry_count)]

    def start(self, d, task: TaskState) -> None:
        """Called once when the task is added to the workflow."""

    def execute(self, d, task: TaskState) -> bool:
        """Re-evaluate a non-terminal synchronous system task; True if it changed."""
        return False

    def continues_after(self, d, task: TaskState) -> bool:
        """Whether the WorkflowTask after this one is scheduled when it finishes (False
        for operators whose own children carry on, e.g. a SWITCH with a taken case)."""
        return True

    def due_at(self, d, task: TaskState) -> int | None:
        """Epoch ms at which the sweeper must decide again for this task, or None."""
        return None

    def cancel(self, d, task: TaskState) -> None:
        """The workflow is ending while this task is not terminal."""

    # --- hooks for the executor (outside the pure decide) ---------------------------------

    def apply_inline(self, wf, outcome, action, now: int, services) -> bool:
        """Perform an inline action this type asked for, inside the deciding transaction;
        True when the task changed. ``services`` (``apps.engine.outcome.Services``) is how
        it reaches other workflows and the event queue; ``now`` is epoch ms."""
        raise NotImplementedError(f"{self.type_name} asked for action {action.kind}")

    def run_async(self, task: TaskState) -> dict:
        """Work of an async system task, run by the cluster with no lock or transaction.
        Returns a TaskResult-like dict ``{status, outputData, reasonForIncompletion?}``."""
        raise NotImplementedError(f"{self.type_name} is not an async system task")


def finish(d, task: TaskState, status: str, output: dict | None = None, reason: str | None = None) -> None:
    """Set a task's outcome (status, output, reason, start/end times)."""
    task.status = status
    if output is not None:
        task.output_data = output
    if reason is not None:
        task.reason_for_incompletion = reason
    if not task.start_time:
        task.start_time = d.now
    task.update_time = d.now
    if task.terminal:
        task.end_time = d.now
    d.touch(task)


def act_once(d, kind: str, task: TaskState) -> None:
    """Ask for the action ``kind`` on ``task`` unless this decide has asked for one on it
    already (its ``start`` in the same decide): how an inline action that was lost (a
    crash between the decide and its effect) is asked for again on a later decide."""
    if not any(a.task is task for a in d.outcome.actions):
        d.act(kind, task)


class SystemTask(TaskType):
    """A server-side task; no TaskDef needed unless registered (no retries by default)."""

    has_task_def = True



class EvaluatingTask(SystemTask):
    """A system task whose work is a user-supplied expression (INLINE, LAMBDA,
    JSON_JQ_TRANSFORM), evaluated outside the workflow's lock (``apps.engine.evaluation``):
    ``start`` settles what needs no evaluation (bad input, ``value-param``) at once, else
    sets the task IN_PROGRESS and asks for the evaluation; the decide that receives its
    result (``Decider.evaluated``) settles the task in ``execute``. A task whose result does
    not come within its time limit plus ``EVALUATION_REDISPATCH_GRACE_MS`` is asked for again
    (``due_at`` brings the sweeper).

    Subclasses set ``kind`` and implement ``settle_at_once`` (True when ``start`` finished
    the task itself), ``spec`` (``(expression, bindings, evaluator_type)``) and ``settle``.
    """

    kind = evaluation.SCRIPT

    def settle_at_once(self, d, task: TaskState) -> bool:
        return False

    def spec(self, task: TaskState) -> tuple:
        raise NotImplementedError

    def settle(self, d, task: TaskState, result: evaluation.Evaluated) -> None:
        raise NotImplementedError

    def start(self, d, task: TaskState) -> None:
        if self.settle_at_once(d, task):
            return
        task.status = "IN_PROGRESS"
        task.start_time = task.start_time or d.now
        task.update_time = d.now
        d.touch(task)
        expression, bindings, evaluator_type = self.spec(task)
        d.evaluation_result(task, self.kind, expression, bindings, evaluator_type=evaluator_type)

    def execute(self, d, task: TaskState) -> bool:
        if task.status != "IN_PROGRESS":
            return False
        due = d.redispatch_evaluations or d.now >= evaluation.redispatch_at(task.update_time, self.kind, d.config)
        newly = due and task.task_id not in d.asked
        expression, bindings, evaluator_type = self.spec(task)
        result = d.evaluation_result(task, self.kind, expression, bindings, evaluator_type=evaluator_type, ask=due)
        if result is None:
            if newly:
                task.update_time = d.now  # asked again: its deadline starts over
                return True
            return False
        self.settle(d, task, result)
        return True

    def due_at(self, d, task: TaskState) -> int | None:
        if task.status != "IN_PROGRESS":
            return None
        return evaluation.redispatch_at(task.update_time, self.kind, d.config)
