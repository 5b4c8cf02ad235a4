"""Operator recovery actions: restart, retry, rerun, skip a task, reset callbacks.

Each is one transaction like every engine service: lock the workflow row, change the
state, run the decider, save; a parent whose child is revived is re-opened in the same
transaction. Errors and their statuses are Conductor's (docs/conductor-notes.md §4.6-4.7):
restart/rerun of a running workflow -> 409, retry of a running one -> 404, skip errors ->
409 (Conductor: 500, an IllegalStateException), reset callbacks of a terminal one -> 409.
Source: WorkflowExecutorOps.restart / retry / rerun / skipTaskFromWorkflow /
resetCallbacksForWorkflow.
"""
from __future__ import annotations

from django.db import transaction

from apps.core.clock import now_ms
from apps.core.errors import Conflict, IllegalState, InvalidInput, NotFound, validation_failed
from apps.engine import executor, history, notify, params, store
from apps.engine.blueprint import Blueprint
from apps.engine.decider import Decider
from apps.engine.models import TaskExecution
from apps.engine.outcome import DeciderOutcome, TerminateWorkflow
from apps.engine.state import TaskState, WorkflowState
from apps.engine.status import RETRY_FROM_STATUSES, TERMINAL_WORKFLOW
from apps.engine.task_types import get_type

RESET_IN_PLACE = ("JOIN", "DO_WHILE", "FORK", "EXCLUSIVE_JOIN")


def _reopen(wf: WorkflowState, now: int) -> None:
    wf.status = "RUNNING"
    wf.reason_for_incompletion = None
    wf.end_time = 0
    wf.update_time = now
    wf.failed_reference_task_names = []
    wf.failed_task_names = []


def _reopen_parents(child: WorkflowState, now: int) -> None:
    """A revived child re-opens its parent chain: the parent's SUB_WORKFLOW task goes back
    to IN_PROGRESS and the parent to RUNNING (case 13). The walk stops at an optional
    SUB_WORKFLOW task and at one that was already retried (Conductor's
    updateAndPushParents)."""
    while child.parent_workflow_id:
        parent = store.lock_workflow(child.parent_workflow_id)
        if parent is None:
            return
        loaded = store.Loaded(parent)
        task = next((t for t in reversed(parent.tasks) if t.sub_workflow_id == child.workflow_id), None)
        if task is None or task.retried:
            return  # an orphan, or the child of a superseded attempt: the parent moved on
        workflow_task = task.workflow_task or Blueprint(parent.definition).get(params.definition_ref(task)) or {}
        if workflow_task.get("optional"):
            return  # an optional SUB_WORKFLOW's outcome is settled (updateAndPushParents)
        outcome = DeciderOutcome()
        if task.status != "IN_PROGRESS":
            task.status = "IN_PROGRESS"
            task.end_time = 0
            task.reason_for_incompletion = None
            task.executed = False
            task.update_time = now
            outcome.updated_tasks[task.task_id] = task
        if parent.terminal:
            _reopen(parent, now)
            # the parent's workflow timeout counts from now on (Conductor sets
            # lastRetriedTime on the parent it revives)
            parent.last_retried_time = now
            _repair_canceled_siblings(parent, task, outcome, now)
        store.save(loaded, outcome, workflow_changed=True)
        transaction.on_commit(lambda wid=parent.workflow_id: notify.workflow_changed(wid), robust=True)
        child = parent


def _repair_canceled_siblings(parent: WorkflowState, revived: TaskState, outcome: DeciderOutcome, now: int) -> None:
    """What ending the parent canceled comes back with it (WorkflowExecutorOps, a retried
    child reviving its parent): a CANCELED JOIN or DO_WHILE is IN_PROGRESS again, a
    CANCELED worker task is SCHEDULED again in place (retryCount + 1)."""
    for task in parent.tasks:
        if task is revived or task.status != "CANCELED" or task.retried:
            continue
        if task.task_type in ("JOIN", "DO_WHILE"):
            task.status = "IN_PROGRESS"
        elif get_type(task.task_type).is_worker:
            task.status = "SCHEDULED"
            task.retry_count += 1
            task.poll_count = 0
            task.worker_id = None
            task.scheduled_time = now
            task.start_time = 0
            task.visible_at = now
        else:
            continue
        task.end_time = 0
        task.reason_for_incompletion = None
        task.executed = False
        task.update_time = now
        outcome.updated_tasks[task.task_id] = task


def _locked_ended(workflow_id: str, action: str) -> store.Loaded:
    """Lock a workflow that must have ended; Conflict ``Workflow: %s is not in terminal
    state, unable to <action>.`` otherwise (NotFound when it does not exist)."""
    loaded = executor.locked(workflow_id)
    if not loaded.wf.terminal:
        raise Conflict(f"Workflow: {workflow_id} is not in terminal state, unable to {action}.")
    return loaded


def workflow_restart(*, workflow_id: str, use_latest_definitions: bool = False) -> None:
    """Run a terminal workflow again from the start with the same id and input; all its
    tasks are removed. ``use_latest_definitions`` swaps in the latest WorkflowDef version
    (TaskDefs re-read). Errors: NotFound; Conflict ``Workflow: %s is not in terminal
    state, unable to restart.``; NotFound ``Workflow: %s is non-restartable`` for a
    COMPLETED workflow whose definition has ``restartable: false``."""
    from apps.metadata.services import workflow_def_row

    def run() -> None:
        with transaction.atomic():
            loaded = _locked_ended(workflow_id, "restart")
            wf = loaded.wf
            if wf.status == "COMPLETED" and wf.definition.get("restartable") is False:
                raise NotFound(f"Workflow: {workflow_id} is non-restartable")
            loaded.note("restart", useLatestDefinitions=use_latest_definitions)
            if use_latest_definitions:
                row = workflow_def_row(name=wf.workflow_name)
                if row is not None:
                    wf.definition = executor.populate_task_definitions(row.definition)
                    wf.workflow_version = row.version
            now = now_ms()
            removed = [t.task_id for t in wf.tasks]
            wf.tasks = []
            _reopen(wf, now)
            wf.output = {}
            wf.create_time = now
            wf.last_retried_time = 0
            wf.next_decide_at = None
            executor.decide_and_save(loaded, now, removed=removed, workflow_changed=True)
            _reopen_parents(wf, now)
    executor.with_retries(run)


def latest_by_ref(wf: WorkflowState) -> dict[str, TaskState]:
    """``{reference: its latest attempt}`` (tasks are ordered by seq): what a workflow
    retry looks at (also the UI's dry run of it)."""
    latest: dict[str, TaskState] = {}
    for task in wf.tasks:
        latest[task.reference_task_name] = task
    return latest


def workflow_retry(*, workflow_id: str, resume_subworkflow_tasks: bool = False) -> None:
    """Retry a terminal workflow from its failed tasks: each reference whose latest attempt
    is FAILED, FAILED_WITH_TERMINAL_ERROR, TIMED_OUT or CANCELED gets a new attempt
    (retryCount+1, input re-resolved); JOIN/DO_WHILE/FORK/EXCLUSIVE_JOIN are reset in
    place. ``resume_subworkflow_tasks`` retries a failed child workflow instead of
    starting a new one. The workflow timeout restarts (``lastRetriedTime``).
    Errors: NotFound (also ``Workflow is still running.  status=%s``); Conflict
    ``Workflow has not started yet`` / ``There are no retryable tasks! Use restart if you
    want to attempt entire workflow execution again.``"""
    def run() -> str | None:
        with transaction.atomic():
            loaded = executor.locked(workflow_id)
            wf = loaded.wf
            if not wf.terminal:
                raise NotFound(f"Workflow is still running.  status={wf.status}")
            if not wf.tasks:
                raise Conflict("Workflow has not started yet")
            latest = latest_by_ref(wf)
            failed = [t for t in latest.values() if t.status in RETRY_FROM_STATUSES]
            if resume_subworkflow_tasks:
                for t in failed:
                    if t.task_type == "SUB_WORKFLOW" and t.sub_workflow_id and \
                            wf.sub_workflows.get(t.sub_workflow_id) is None:
                        child = store.load_workflow(t.sub_workflow_id, include_tasks=False)
                        if child is not None and child.status in ("FAILED", "TIMED_OUT", "TERMINATED"):
                            return t.sub_workflow_id  # retry the child (outside this transaction)
            if not failed and wf.status != "TIMED_OUT":
                raise Conflict("There are no retryable tasks! Use restart if you want to attempt entire workflow "
                               "execution again.")
            now = now_ms()
            loaded.note("retry", resumeSubworkflowTasks=resume_subworkflow_tasks or None)
            _reopen(wf, now)
            wf.last_retried_time = now
            decider = executor.new_decider(wf, now, domains=False)
            fresh: list[TaskState] = []
            for task in failed:
                if task.task_type in RESET_IN_PLACE:
                    task.status = "IN_PROGRESS"
                    task.end_time = 0
                    task.reason_for_incompletion = None
                    task.executed = False
                    task.update_time = now
                    decider.touch(task)
                    continue
                fresh.append(decider.new_attempt(task, decider.workflow_task_of(task)))
            decider.schedule(fresh)
            decider.touch_workflow()
            decider.run()
            executor.decide_and_save(loaded, now, decider, workflow_changed=True)
            _reopen_parents(wf, now)
            return None

    child_id = executor.with_retries(run)
    if child_id:
        workflow_retry(workflow_id=child_id, resume_subworkflow_tasks=True)


def workflow_rerun(*, workflow_id: str, rerun_from_task_id: str | None = None, task_input: dict | None = None,
                   workflow_input: dict | None = None, correlation_id: str | None = None) -> str:
    """Re-run a terminal workflow, from the start or from one task (``reRunFromTaskId``,
    searched in this workflow and then in its sub-workflows): later tasks are removed,
    that task is scheduled again (input replaced by ``task_input`` when given) and the
    workflow is RUNNING with its failure information cleared. Returns the workflow id.
    Errors: NotFound; Conflict ``Workflow: %s is not in terminal state, unable to rerun.``;
    InvalidInput ``Task %s not found``, a ``correlation_id`` longer than its column, or
    (Conductor's validation 400, one entry per field) a ``task_input``/``workflow_input``
    that is not an object (``must be a JSON object``) or a ``correlation_id`` that is not a
    string (``must be a string``)."""
    _check_rerun_fields(task_input=task_input, workflow_input=workflow_input, correlation_id=correlation_id)
    executor.check_columns(correlation_id=correlation_id)
    if rerun_from_task_id:
        owner = TaskExecution.objects.filter(pk=rerun_from_task_id).values_list("workflow_id", flat=True).first()
        if owner is None:
            raise InvalidInput(f"Task {rerun_from_task_id} not found")
        if owner != workflow_id:
            if not _is_descendant(owner, workflow_id):
                raise InvalidInput(f"Task {rerun_from_task_id} not found")
            workflow_rerun(workflow_id=owner, rerun_from_task_id=rerun_from_task_id, task_input=task_input)
            return workflow_id

    def run() -> str:
        with transaction.atomic():
            loaded = _locked_ended(workflow_id, "rerun")
            wf = loaded.wf
            loaded.note("rerun", reRunFromTaskId=rerun_from_task_id,
                        taskInput=None if task_input is None else history.payload_size(task_input),
                        workflowInput=None if workflow_input is None else history.payload_size(workflow_input),
                        correlationId=correlation_id)
            now = now_ms()
            _reopen(wf, now)
            wf.output = {}
            # reruns happen in place, as Conductor's do (it leaves reRunFromWorkflowId unset): the
            # history's ``action`` event says when; never an execution named as its own origin
            if wf.re_run_from_workflow_id == workflow_id:
                wf.re_run_from_workflow_id = None  # set so by earlier versions
            if workflow_input is not None:
                wf.input = workflow_input
            if correlation_id is not None:
                wf.correlation_id = correlation_id
            removed: list[str] = []
            decider = None
            if not rerun_from_task_id:
                removed = [t.task_id for t in wf.tasks]
                wf.tasks = []
                wf.create_time = now
            else:
                target = next(t for t in wf.tasks if t.task_id == rerun_from_task_id)
                removed = [t.task_id for t in wf.tasks if t.seq > target.seq]
                wf.tasks = [t for t in wf.tasks if t.seq <= target.seq]
                decider = executor.new_decider(wf, now, domains=False)
                _reset_task(decider, target, task_input, now)
                decider.run()
            executor.decide_and_save(loaded, now, decider, removed=removed, workflow_changed=True)
            _reopen_parents(wf, now)
            return workflow_id
    return executor.with_retries(run)


def _check_rerun_fields(*, task_input, workflow_input, correlation_id) -> None:
    """The RerunWorkflowRequest fields' types, for every caller (API, UI, CLI, event
    actions): a list or text as ``taskInput`` reached the worker as its inputData (a WAIT
    failed with a 500), as ``workflowInput`` it became the execution's input. Errors:
    InvalidInput (400, Conductor's validation body naming each field)."""
    errors = [{"path": key, "message": "must be a JSON object", "invalidValue": str(value)[:80]}
              for key, value in (("taskInput", task_input), ("workflowInput", workflow_input))
              if value is not None and not isinstance(value, dict)]
    if correlation_id is not None and not isinstance(correlation_id, str):
        errors.append({"path": "correlationId", "message": "must be a string", "invalidValue": str(correlation_id)[:80]})
    if errors:
        raise validation_failed(errors)


def _is_descendant(candidate_id: str, ancestor_id: str) -> bool:
    from apps.engine.models import WorkflowExecution

    current = candidate_id
    for _ in range(50):
        parent = WorkflowExecution.objects.filter(pk=current).values_list("parent_workflow_id", flat=True).first()
        if not parent:
            return False
        if parent == ancestor_id:
            return True
        current = parent
    return False


def _reset_task(decider: Decider, task: TaskState, task_input: dict | None, now: int) -> None:
    """Schedule an existing task execution again, in place (same task id)."""
    task.status = "SCHEDULED"
    if task_input is not None:
        task.input_data = task_input
    task.output_data = {}
    task.reason_for_incompletion = None
    task.scheduled_time = now
    task.start_time = 0
    task.end_time = 0
    task.update_time = now
    task.poll_count = 0
    task.worker_id = None
    task.executed = False
    task.retried = False
    task.callback_after_seconds = 0
    task.visible_at = now
    task.timer_at = None
    task.sub_workflow_id = None
    decider.touch(task)
    get_type(task.task_type).start(decider, task)


def task_skip(*, workflow_id: str, task_reference_name: str, task_input: dict | None = None,
              task_output: dict | None = None) -> None:
    """Mark a task that has not been scheduled yet as SKIPPED (with the given input and
    output); the workflow passes over it. Errors (IllegalState, 409; Conductor answers 500):
    ``The workflow %s is not running so the task referenced by %s cannot be skipped``,
    ``The task referenced by %s does not exist in the WorkflowDefinition %s``,
    ``The task referenced %s has already been processed, cannot be skipped``."""
    def run() -> None:
        with transaction.atomic():
            loaded = executor.locked(workflow_id)
            wf = loaded.wf
            if wf.status != "RUNNING":
                raise IllegalState(f"The workflow {workflow_id} is not running so the task referenced by "
                                   f"{task_reference_name} cannot be skipped")
            decider = executor.new_decider(wf, now_ms(), domains=False)
            workflow_task = decider.blueprint.get(task_reference_name)
            if workflow_task is None:
                raise IllegalState(f"The task referenced by {task_reference_name} does not exist in the "
                                   f"WorkflowDefinition {wf.workflow_name}")
            if any(t.reference_task_name == task_reference_name for t in wf.tasks):
                raise IllegalState(f"The task referenced {task_reference_name} has already been processed, "
                                   "cannot be skipped")
            loaded.note("skip", taskReferenceName=task_reference_name)
            try:
                skipped = decider.new_task(workflow_task, task_type=workflow_task.get("name"),
                                           input_data=task_input or {}, status="SKIPPED")
            except TerminateWorkflow as exc:  # a name longer than the task type column
                raise InvalidInput(exc.reason) from None
            skipped.output_data = task_output or {}
            skipped.start_time = skipped.end_time = decider.now
            skipped.executed = True
            skipped.seq = max((t.seq for t in wf.tasks), default=0) + 1
            wf.tasks.append(skipped)
            decider.outcome.new_tasks.append(skipped)
            decider.run()
            executor.decide_and_save(loaded, decider.now, decider, workflow_changed=True)
    executor.with_retries(run)


def workflow_reset_callbacks(*, workflow_id: str) -> None:
    """Make every SCHEDULED worker task waiting on a ``callbackAfterSeconds`` pollable now.
    Errors: NotFound; Conflict ``Workflow is in terminal state. Status = %s``."""
    def run() -> None:
        with transaction.atomic():
            loaded = executor.locked(workflow_id)
            wf = loaded.wf
            if wf.status in TERMINAL_WORKFLOW:
                raise Conflict(f"Workflow is in terminal state. Status = {wf.status}")
            now = now_ms()
            loaded.note("reset_callbacks")
            outcome = DeciderOutcome()
            for task in wf.tasks:
                if task.status == "SCHEDULED" and task.queue_name and task.visible_at > now:
                    task.callback_after_seconds = 0
                    task.visible_at = now
                    outcome.updated_tasks[task.task_id] = task
            store.save(loaded, outcome, workflow_changed=False)
            executor.after_commit(wf, outcome)
    executor.with_retries(run)
