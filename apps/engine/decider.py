"""The decider: given an execution's state, decide what happens next. Pure.

``decide(wf, now_ms=...)`` mutates the given ``WorkflowState`` in memory (schedules tasks,
runs synchronous system tasks, applies retries and timeouts, completes or ends the
workflow) and returns a ``DeciderOutcome`` naming what changed, so that
``apps.engine.executor`` can persist it in the same transaction. No ORM, no clock (time
is an argument), no randomness (task ids and the retry jitter come from the ``new_id``
and ``rng`` arguments), no process environment (``env``) or settings (``config``), no HTTP, no django-q2 in here: side effects the executor must perform
(start a sub-workflow, run an async system task, notify a parent) are returned as
``actions``.

Source: Conductor ``DeciderService.decide`` / ``WorkflowExecutorOps.decide`` (the loop
that re-decides while synchronous system tasks change state), docs/conductor-notes.md §4 and §6.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from random import Random
from typing import Any

from apps.core.fields import max_length
from apps.engine import evaluation, params
from apps.engine.blueprint import Blueprint
from apps.engine.outcome import Action, DeciderOutcome, TerminateWorkflow
from apps.engine.retries import expected_retry_count, retry_delay_ms
from apps.engine.state import (BUILT_IN_TYPES, TaskState, WorkflowState, active_tasks, attempts_of, last_task, matching,
                               max_seq, outputs_of)
from apps.engine.status import RETRIABLE_TASK, SUCCESSFUL_TASK, TERMINAL_TASK
from apps.engine.task_types import get_type

# Rounds of the decide loop before giving up for this call (a sync system task loop that
# never settles); the sweeper decides again later.
MAX_ROUNDS = 1000


TaskDefLookup = Callable[[str], "dict | None"]


def _no_task_def(_name: str) -> dict | None:
    return None


class Decider:
    """One decide over one workflow state. Task types call back into it (see
    ``apps.engine.task_types.base.TaskType``)."""

    def __init__(self, wf: WorkflowState, *, now_ms: int, new_id: Callable[[], str], rng: Random,
                 task_def_lookup: TaskDefLookup | None = None,
                 domain_selector: Callable[[str, list[str]], str | None] | None = None,
                 env: Mapping[str, str] | None = None, config: Mapping | None = None,
                 evaluated: Mapping[str, evaluation.Evaluated] | None = None, redispatch_evaluations: bool = False,
                 speculative: bool = False, keep_earlier_deadline: bool = False):
        self.wf = wf
        # keep a stored ``next_decide_at`` that is earlier than the one this decide works
        # out and still ahead (a worker's task update); see set_next_decide_at
        self.keep_earlier_deadline = keep_earlier_deadline
        # a decide of a snapshot that is never saved (the evaluations' run-ahead): what
        # only a saved state needs (a DO_WHILE's whole output at its end) is left out
        self.speculative = speculative
        self.evaluated = evaluated if evaluated is not None else {}
        self.redispatch_evaluations = redispatch_evaluations
        self.asked: set[str] = set()  # task ids whose evaluation this decide asked for
        self.env = env if env is not None else {}
        self.config = config if config is not None else {}
        self.now = now_ms
        self.new_id = new_id
        self.blueprint = Blueprint(wf.definition)
        self.task_def_lookup = task_def_lookup or _no_task_def
        self.rng = rng
        self.domain_selector = domain_selector
        self.outcome = DeciderOutcome()
        self._new_ids: set[str] = set()

    # --- bookkeeping ------------------------------------------------------------------

    def touch(self, task: TaskState) -> None:
        """Record that an existing task changed (new tasks are written anyway)."""
        if task.task_id not in self._new_ids:
            self.outcome.updated_tasks[task.task_id] = task

    def touch_workflow(self) -> None:
        self.outcome.workflow_changed = True

    def get_type(self, type_name: str):
        """The task type object for a type string (see apps.engine.task_types)."""
        return get_type(type_name)

    def remove_task(self, task: TaskState) -> None:
        """Drop a task execution from the workflow (DO_WHILE keepLastN)."""
        self.wf.tasks.remove(task)
        if task.task_id in self._new_ids:
            self.outcome.new_tasks = [t for t in self.outcome.new_tasks if t.task_id != task.task_id]
        else:
            self.outcome.removed_task_ids.append(task.task_id)
            self.outcome.updated_tasks.pop(task.task_id, None)

    def act(self, kind: str, task: TaskState | None = None, **data: Any) -> None:
        self.outcome.actions.append(Action(kind, task, data))

    def evaluation_result(self, task: TaskState, kind: str, expression: Any, bindings: Any, *,
                          evaluator_type: str | None = None, ask: bool = True,
                          digest: str | None = None, lean: tuple[str, ...] | None = None,
                          whole: Callable[[], dict] | None = None) -> evaluation.Evaluated | None:
        """The result of evaluating ``expression`` over ``bindings`` for ``task`` when the
        executor supplied one computed from exactly these inputs (``evaluated``, keyed by
        ``evaluation.key``); otherwise None, and with ``ask`` an ``evaluate`` action (once
        per decide and task) asks the executor to run it outside the lock. ``digest`` is
        ``evaluation.key`` of these inputs when the caller has it already; ``lean`` names
        the top-level bindings given in part and ``whole()`` returns them whole (JavaScript
        only, see ``evaluation.Request``)."""
        if not self.evaluated and not ask:
            return None
        if digest is None:
            digest = evaluation.key(kind, evaluator_type, expression, bindings)
        found = self.evaluated.get(digest)
        if found is not None:
            return found
        if ask and task.task_id not in self.asked:
            self.asked.add(task.task_id)
            limit = evaluation.time_limit_ms(kind, self.config) / 1000
            self.act("evaluate", task, request=evaluation.Request(
                workflow_id=self.wf.workflow_id, task_id=task.task_id, key=digest, kind=kind,
                expression=expression, bindings=bindings, evaluator_type=evaluator_type, time_limit=limit,
                lean=lean or (), whole=whole))
        return None

    def document(self) -> params.Document:
        return params.Document(self.wf, self.env, self.blueprint)

    # --- definitions --------------------------------------------------------------------

    def workflow_task_of(self, task: TaskState) -> dict:
        """The WorkflowTask a task execution was made from (stored on dynamic tasks,
        otherwise looked up in the definition by its reference without ``__N``)."""
        if task.workflow_task:
            return task.workflow_task
        return self.blueprint.get(params.definition_ref(task)) or {}

    def task_def_of(self, workflow_task: dict) -> dict | None:
        """TaskDef for a WorkflowTask: the inline/populated ``taskDefinition`` of the
        snapshot, else a registered one (runtime lookup, used by dynamic tasks)."""
        task_def = workflow_task.get("taskDefinition")
        if task_def:
            return task_def
        name = workflow_task.get("name")
        return self.task_def_lookup(name) if name else None

    def adhoc_task_def(self, workflow_task: dict) -> dict:
        """Conductor's made-up TaskDef for an unregistered task (see metadata.validation)."""
        from apps.metadata.validation import adhoc_task_def

        return adhoc_task_def(workflow_task)

    # --- scheduling -----------------------------------------------------------------

    def new_task(self, workflow_task: dict, *, task_type: str | None = None, retry_count: int = 0,
                 input_data: dict | None = None, status: str = "SCHEDULED", reference_task_name: str | None = None,
                 task_def: dict | None = None, store_workflow_task: bool = False, doc: params.Document | None = None) -> TaskState:
        """Build a new task execution for a WorkflowTask (not yet added to the workflow).

        ``input_data`` defaults to the resolved ``inputParameters``. Times are ``now``.
        """
        task_id = self.new_id()
        task_def = task_def if task_def is not None else self.task_def_of(workflow_task)
        if input_data is None:
            input_data = params.resolve_task_input(workflow_task.get("inputParameters") or {}, self.wf,
                                                   task_def=task_def, task_id=task_id,
                                                   doc=doc if doc is not None else self.document())
        ttype = task_type or workflow_task.get("type") or "SIMPLE"
        task = TaskState(
            task_id=task_id,
            workflow_id=self.wf.workflow_id,
            task_type=ttype,
            task_def_name=workflow_task.get("name") or ttype,
            reference_task_name=reference_task_name or workflow_task.get("taskReferenceName"),
            status=status,
            workflow_type=self.wf.workflow_name,
            workflow_priority=self.wf.priority,
            retry_count=retry_count,
            input_data=input_data,
            scheduled_time=self.now,
            update_time=self.now,
            first_scheduled_time=self.now,
            visible_at=self.now,
            response_timeout_seconds=int((task_def or {}).get("responseTimeoutSeconds") or 0),
            **task_limit_fields(task_def),
            workflow_task=workflow_task if (store_workflow_task or self.blueprint.get(
                workflow_task.get("taskReferenceName", "")) is not workflow_task) else {},
        )
        self._check_columns(task, task_def_name=task.task_def_name, reference_task_name=task.reference_task_name,
                            task_type=task.task_type)
        return task

    def _check_columns(self, task: TaskState, **values: str | None) -> None:
        """End the workflow FAILED with a reason naming the field when a task value known
        only at run time (a DYNAMIC task's name, a dynamic fork's names and references,
        a domain prefixed to the queue) is longer than the TaskExecution column it is
        stored in (``apps.core.fields``): PostgreSQL would refuse the row, SQLite would
        keep it; either way the workflow would be stuck."""
        for field, value in values.items():
            limit = max_length(f"engine.TaskExecution.{field}")
            if isinstance(value, str) and limit is not None and len(value) > limit:
                raise TerminateWorkflow(
                    f"Task {(task.reference_task_name or '')[:80]!r} cannot be scheduled: its {field} is "
                    f"{len(value)} characters long, at most {limit} are allowed", "FAILED")

    def tasks_to_schedule(self, workflow_task: dict, retry_count: int = 0) -> list[TaskState]:
        """Map one WorkflowTask to the task executions it creates (Conductor's TaskMapper
        for its type), skipping references already present in the workflow."""
        mapped = get_type(workflow_task.get("type") or "SIMPLE").map(self, workflow_task, retry_count)
        existing = self.attempts_of(t.reference_task_name for t in mapped)
        return [t for t in mapped if not existing[t.reference_task_name]]

    def schedule(self, tasks: list[TaskState]) -> None:
        """Add new tasks to the workflow (assigning ``seq``) and start them: worker tasks
        become pollable, synchronous system tasks run their ``start``, async system tasks
        are handed to the cluster."""
        seq = max_seq(self.wf.tasks)
        existing = {ref: list(found) for ref, found in self.attempts_of(t.reference_task_name for t in tasks).items()}
        for task in tasks:
            if any(not t.retried and t.task_id != task.task_id and t.retry_count == task.retry_count
                   for t in existing[task.reference_task_name]):
                continue  # dedupe by reference + retry count (Conductor: refName_retryCount)
            seq += 1
            task.seq = seq
            self.wf.tasks.append(task)
            existing[task.reference_task_name].append(task)
            self._new_ids.add(task.task_id)
            self.outcome.new_tasks.append(task)
            if self._delayed_system_task(task):
                continue  # a system task's retry waits out retryDelaySeconds SCHEDULED
            get_type(task.task_type).start(self, task)

    def _delayed_system_task(self, task: TaskState) -> bool:
        """A retry of a system task whose retry delay has not passed: Conductor queues it
        with that delay, so it stays SCHEDULED until then (``start_delayed`` starts it)."""
        from apps.engine.task_types import get_type

        return (task.status == "SCHEDULED" and task.callback_after_seconds > 0
                and task.timer_at is not None and task.timer_at > self.now
                and task.retried_task_id is not None and not get_type(task.task_type).is_worker)

    def start_delayed(self) -> bool:
        """Start the delayed system-task retries whose delay has passed."""
        from apps.engine.task_types import get_type

        started = False
        for task in list(active_tasks(self.wf.tasks)):
            if task.status == "SCHEDULED" and task.callback_after_seconds > 0 and task.retried_task_id \
                    and not task.retried and (task.timer_at is None or task.timer_at <= self.now) \
                    and not get_type(task.task_type).is_worker:
                task.callback_after_seconds = 0
                self.touch(task)
                get_type(task.task_type).start(self, task)
                started = True
        return started

    def make_pollable(self, task: TaskState) -> None:
        """Put a worker task on its queue ``[domain:]taskDefName``; it is handed out once
        ``visible_at`` (epoch ms, set by the caller) has passed."""
        domain = self._domain_for(task)
        task.domain = domain
        task.queue_name = f"{domain}:{task.task_def_name}" if domain else task.task_def_name
        self._check_columns(task, queue_name=task.queue_name)

    def _domain_for(self, task: TaskState) -> str | None:
        mapping = self.wf.task_to_domain or {}
        value = mapping.get(task.task_def_name) or mapping.get("*")
        if not value:
            return None
        domains = [d.strip() for d in str(value).split(",") if d.strip()]
        if not domains:
            return None
        chosen = domains[-1]
        if len(domains) > 1 and self.domain_selector is not None:
            chosen = self.domain_selector(task.task_def_name, domains) or chosen
        return None if chosen == "NO_DOMAIN" else chosen

    def next_tasks_after(self, task: TaskState) -> list[TaskState]:
        """Tasks to schedule after a finished task (Conductor's DeciderService.getNextTask)."""
        ref = params.definition_ref(task)
        workflow_task = self.workflow_task_of(task)
        if workflow_task.get("type") == "TERMINATE" or task.task_type == "TERMINATE":
            return []
        if not get_type(task.task_type).continues_after(self, task):
            return []
        if task.workflow_task and task.workflow_task.get("taskReferenceName") not in self.blueprint.by_ref:
            return []  # a dynamic fork branch: its JOIN is already scheduled
        nxt = self.blueprint.next_task(ref)
        while nxt is not None and self._skipped(nxt):
            nxt = self.blueprint.next_task(nxt["taskReferenceName"])
        if nxt is None:
            return []
        suffix = params.loop_scope(task)
        if nxt.get("type") == "DO_WHILE" and nxt is self.blueprint.loop_owner(ref):
            return []  # the end of a loop body: the DO_WHILE itself is re-evaluated
        if suffix:
            return self.map_in_scope(nxt, suffix, task.iteration)
        return self.tasks_to_schedule(nxt)

    def map_in_scope(self, workflow_task: dict, suffix: str, iteration: int, retry_count: int = 0) -> list[TaskState]:
        """Map a WorkflowTask inside a DO_WHILE body: every new task gets the loop scope
        ``suffix`` (``__N``, or ``__M__N`` in nested loops) appended to its reference and
        ``iteration`` N (Conductor's filterNextLoopOverTasks / appendIteration)."""
        mapped = get_type(workflow_task.get("type") or "SIMPLE").map(self, workflow_task, retry_count)
        for t in mapped:
            if not t.iteration:
                t.reference_task_name = f"{t.reference_task_name}{suffix}"
                t.iteration = iteration
        existing = self.attempts_of(t.reference_task_name for t in mapped)
        return [t for t in mapped if not existing[t.reference_task_name]]

    def _skipped(self, workflow_task: dict) -> bool:
        ref = workflow_task.get("taskReferenceName")
        return any(t.status == "SKIPPED" for t in self.attempts_of((ref,))[ref])

    def attempts_of(self, refs) -> dict[str, list[TaskState]]:
        """``{runtime ref: its attempts in seq order}`` (``state.attempts_of``: a locked
        execution reads finished tasks by reference instead of holding all of them)."""
        return attempts_of(self.wf.tasks, refs)

    def outputs_of(self, refs) -> dict[str, list]:
        """``attempts_of`` for a reader that changes none of them (``state.outputs_of``:
        many references are read as narrow read-only rows)."""
        return outputs_of(self.wf.tasks, refs)

    def active_tasks(self) -> list[TaskState]:
        """The tasks that may still change (``state.active_tasks``), in seq order."""
        return active_tasks(self.wf.tasks)

    # --- the decide loop -----------------------------------------------------------------

    def run(self) -> DeciderOutcome:
        wf = self.wf
        if wf.terminal:
            return self.outcome
        self._rounds_exhausted = False
        try:
            for _ in range(MAX_ROUNDS):
                if not self._decide_once():
                    break
                if wf.terminal:
                    break
            else:
                # still changing after MAX_ROUNDS passes (a long loop of system tasks):
                # the sweeper carries on shortly instead of leaving it RUNNING untouched
                self._rounds_exhausted = True
        except TerminateWorkflow as exc:
            self.end_workflow(exc.status, exc.reason, exc.task)
        self.set_next_decide_at()
        return self.outcome

    def _decide_once(self) -> bool:
        """One pass of DeciderService.decide; returns whether anything changed."""
        wf = self.wf
        self._check_workflow_timeout()
        if wf.status == "PAUSED":
            return False
        if not wf.tasks:
            first = self.blueprint.tasks[0] if self.blueprint.tasks else None
            while first is not None and self._skipped(first):
                first = self.blueprint.next_task(first["taskReferenceName"])
            if first is None:
                self.complete_workflow()
                return True
            self.schedule(self.tasks_to_schedule(first))
            return True

        changed = False
        # Phase 1: timeouts, retries, and the successors of finished tasks.
        to_schedule: list[TaskState] = []
        for task in list(active_tasks(wf.tasks)):
            if task.retried or task.executed or task.status == "SKIPPED":
                continue
            ttype = get_type(task.task_type)
            workflow_task = self.workflow_task_of(task)
            task_def = self.task_def_of(workflow_task) if ttype.has_task_def else None
            if not task.terminal and task_def is not None:
                if self._check_timeouts(task, task_def):
                    changed = True
            if task.terminal and not task.successful:
                retry = self.retry(task, task_def, workflow_task)
                if retry is not None:
                    to_schedule.append(retry)
                elif task.status != "COMPLETED_WITH_ERRORS" and \
                        not (workflow_task.get("permissive") and not workflow_task.get("optional")):
                    # optional (permissive or not) ends COMPLETED_WITH_ERRORS; a permissive
                    # task keeps its failure for the JOIN / the workflow's end to judge
                    task.status = "COMPLETED_WITH_ERRORS"
                self.touch(task)
                changed = True
            if task.terminal and not task.executed and not task.retried:
                task.executed = True
                self.touch(task)
                to_schedule.extend(self.next_tasks_after(task))
                changed = True
        if to_schedule:
            self.schedule(to_schedule)
            changed = True
        if self.start_delayed():
            changed = True
        # Phase 2: synchronous system tasks and operators re-evaluate (after the
        # successors above exist, so a DO_WHILE or JOIN never judges a half-built step).
        for task in list(active_tasks(wf.tasks)):
            if task.retried or task.executed or task.terminal:
                continue
            ttype = get_type(task.task_type)
            if not ttype.is_worker and ttype.execute(self, task):
                self.touch(task)
                changed = True
                if task.terminal and not task.successful:
                    # its retry or the workflow's end comes first (phase 1 of the next
                    # pass): a JOIN must not judge an attempt that is about to be retried
                    break
        if not wf.terminal and self.check_for_completion() and self._successful_terminate() is None:
            self._fail_for_permissive_tasks()
            self.complete_workflow()
            return True
        return changed

    def _permissive(self, task: TaskState) -> bool:
        workflow_task = self.workflow_task_of(task)
        return bool(workflow_task.get("permissive")) and not workflow_task.get("optional")

    def _fail_for_permissive_tasks(self) -> None:
        """A workflow about to complete fails instead when the latest attempt of a
        permissive (non-optional) task ended unsuccessfully; the reason names each such
        task (DeciderService.decide: permissiveTasksTerminalNonSuccessful)."""
        # only a reference with an unsuccessful permissive attempt can fail it: read those
        unsuccessful = matching(self.wf.tasks, statuses=TERMINAL_TASK - SUCCESSFUL_TASK)
        refs = {t.reference_task_name for t in unsuccessful if self._permissive(t)}
        if not refs:
            return
        latest: dict[str, TaskState] = {}
        for task in sorted((t for found in self.attempts_of(refs).values() for t in found), key=lambda t: t.seq):
            if self._permissive(task):
                known = latest.get(task.reference_task_name)
                if known is None or task.retry_count >= known.retry_count:
                    latest[task.reference_task_name] = task
        failed = [t for t in latest.values() if t.terminal and not t.successful]
        if failed:
            raise TerminateWorkflow(". ".join(
                f"Task {t.task_id} failed with status: {t.status} and reason: '{t.reason_for_incompletion}'"
                for t in failed), "FAILED", failed[0])

    # --- retries and timeouts -----------------------------------------------------------

    def new_attempt(self, task: TaskState, workflow_task: dict, task_def: dict | None = None) -> TaskState:
        """The next attempt of ``task`` (the one place a retry attempt is built): same type,
        reference, iteration and TaskDef name, ``retryCount`` + 1, ``retriedTaskId`` and
        ``firstScheduledTime`` carried over; ``task`` is marked ``retried``. Used by
        ``retry`` (automatic retries) and by the operator's workflow retry."""
        attempt = self.new_task(workflow_task, task_type=task.task_type, retry_count=task.retry_count + 1,
                                reference_task_name=task.reference_task_name, task_def=task_def,
                                store_workflow_task=bool(task.workflow_task))
        if task.workflow_task:
            attempt.workflow_task = task.workflow_task
        attempt.iteration = task.iteration
        attempt.task_def_name = task.task_def_name
        attempt.retried_task_id = task.task_id
        attempt.first_scheduled_time = task.first_scheduled_time or task.scheduled_time
        task.retried = True
        self.touch(task)
        return attempt

    def retry(self, task: TaskState, task_def: dict | None, workflow_task: dict) -> TaskState | None:
        """A new attempt of a failed task, or None when the task is optional and out of
        retries. Raises TerminateWorkflow when the workflow must end.

        Source: DeciderService.retry. Reason template:
        ``Task %s failed with status: %s and reason: '%s'`` (task id, workflow status).
        """
        expected = expected_retry_count(task_def, workflow_task)
        if (task.status not in RETRIABLE_TASK or task.task_type in BUILT_IN_TYPES
                or task_def is None or task.retry_count >= expected):
            if workflow_task.get("optional") or workflow_task.get("permissive"):
                return None
            status = {"CANCELED": "TERMINATED", "TIMED_OUT": "TIMED_OUT"}.get(task.status, "FAILED")
            raise TerminateWorkflow(
                f"Task {task.task_id} failed with status: {status} and reason: '{task.reason_for_incompletion}'",
                status, task)
        total_s = int(task_def.get("totalTimeoutSeconds") or 0)
        first = task.first_scheduled_time or task.scheduled_time
        if total_s > 0 and first > 0 and self.now - first >= total_s * 1000:
            raise TerminateWorkflow(
                f"Task {task.task_id}/{task.task_def_name} exceeded total timeout of {total_s} seconds "
                f"(elapsed {(self.now - first) // 1000} seconds across all attempts). No further retries will be attempted.",
                "TIMED_OUT" if task.status == "TIMED_OUT" else "FAILED", task)
        delay = retry_delay_ms(task_def, task.retry_count, self.rng)
        retry = self.new_attempt(task, workflow_task, task_def)
        retry.start_delay_seconds = delay // 1000
        retry.callback_after_seconds = delay // 1000
        retry.input_data = params.resolve_task_input(workflow_task.get("inputParameters") or {}, self.wf,
                                                     task_def=task_def, task_id=retry.task_id,
                                                     doc=self.document()) \
            if workflow_task.get("inputParameters") is not None else dict(task.input_data)
        if get_type(retry.task_type).is_worker:
            retry.visible_at = self.now + delay  # the queue hides it until then
        else:
            retry.timer_at = self.now + delay  # ``start_delayed`` starts it then
        return retry

    def _check_timeouts(self, task: TaskState, task_def: dict) -> bool:
        """Task timeoutSeconds, pollTimeoutSeconds and responseTimeoutSeconds; returns
        whether the task changed. Raises TerminateWorkflow for policy TIME_OUT_WF."""
        policy = task_def.get("timeoutPolicy") or "TIME_OUT_WF"
        total_s = int(task_def.get("totalTimeoutSeconds") or 0)
        first = task.first_scheduled_time or task.scheduled_time
        if total_s > 0 and first > 0 and self.now - first >= total_s * 1000:
            elapsed = (self.now - first) // 1000
            reason = (f"Task {task.task_def_name}/{task.task_id} exceeded total timeout of {total_s} seconds "
                      f"(elapsed {elapsed} seconds across all attempts including retry delays). "
                      f"Timeout policy: {policy}")
            if self._timeout_with_policy(task, policy, reason):
                return True
        timeout_s = int(task_def.get("timeoutSeconds") or 0)
        if timeout_s > 0 and task.start_time > 0:
            elapsed = self.now - (task.start_time + task.start_delay_seconds * 1000)
            if elapsed >= timeout_s * 1000:
                reason = (f"Task timed out after {elapsed // 1000} seconds. Timeout configured as {timeout_s} "
                          f"seconds. Timeout policy configured to {policy}")
                if self._timeout_with_policy(task, policy, reason):
                    return True
        poll_timeout = int(task_def.get("pollTimeoutSeconds") or 0)
        if poll_timeout > 0 and task.status == "SCHEDULED":
            elapsed = self.now - (task.scheduled_time + task.start_delay_seconds * 1000)
            if elapsed >= poll_timeout * 1000 + task.callback_after_seconds * 1000:
                reason = (f"Task poll timed out after {elapsed // 1000} seconds. Poll timeout configured as "
                          f"{poll_timeout} seconds. Timeout policy configured to {policy}")
                if self._timeout_with_policy(task, policy, reason):
                    return True
        response_timeout = int(task_def.get("responseTimeoutSeconds") or 0)
        if response_timeout > 0 and task.status == "IN_PROGRESS" and not self.workflow_task_of(task).get("asyncComplete"):
            if get_type(task.task_type).is_worker:
                silent = self.now - task.update_time
                if silent >= (response_timeout + task.callback_after_seconds) * 1000:
                    task.status = "TIMED_OUT"
                    task.end_time = self.now
                    task.reason_for_incompletion = (f"responseTimeout: {response_timeout} exceeded for the taskId: "
                                                    f"{task.task_id} with Task Definition: {task.task_def_name}")
                    self.touch(task)
                    return True
        return False

    def _timeout_with_policy(self, task: TaskState, policy: str, reason: str) -> bool:
        if policy == "ALERT_ONLY":
            return False
        task.status = "TIMED_OUT"
        task.end_time = self.now
        task.reason_for_incompletion = reason
        self.touch(task)
        if policy == "TIME_OUT_WF":
            raise TerminateWorkflow(reason, "TIMED_OUT", task)
        return True

    def _check_workflow_timeout(self) -> None:
        wf = self.wf
        timeout_s = int(wf.definition.get("timeoutSeconds") or 0)
        if timeout_s <= 0 or wf.terminal:
            return
        policy = wf.definition.get("timeoutPolicy") or "ALERT_ONLY"
        if policy != "TIME_OUT_WF":
            return
        since = wf.last_retried_time or wf.create_time
        elapsed = self.now - since
        if elapsed >= timeout_s * 1000:
            raise TerminateWorkflow(f"Workflow timed out after {elapsed // 1000} seconds. Timeout configured as "
                                    f"{timeout_s} seconds. Timeout policy configured to {policy}", "TIMED_OUT")

    # --- completion ----------------------------------------------------------------------

    def _successful_terminate(self) -> TaskState | None:
        done = matching(self.wf.tasks, statuses=frozenset({"COMPLETED"}), task_type="TERMINATE")
        return done[0] if done else None

    def check_for_completion(self) -> bool:
        """Conductor's checkForWorkflowCompletion: every task terminal, every top-level
        WorkflowTask has a successful terminal task, and nothing is left to schedule.
        Reads only the tasks of the definition's references (the loaded ones hold every
        task that is not terminal; a task of another reference has no successor)."""
        if any(not t.terminal for t in active_tasks(self.wf.tasks)):
            return False  # the common answer, from the loaded tasks alone
        if not self.wf.tasks:
            return False
        # the latest attempt of each top-level task, read by reference
        top = self.attempts_of(wt.get("taskReferenceName") for wt in self.blueprint.tasks)
        if any(not top[wt.get("taskReferenceName")] for wt in self.blueprint.tasks):
            return False
        for workflow_task in self.blueprint.tasks:
            status = top[workflow_task.get("taskReferenceName")][-1].status
            if status not in ("COMPLETED", "COMPLETED_WITH_ERRORS", "SKIPPED") and not (
                    status in TERMINAL_TASK and workflow_task.get("permissive") and not workflow_task.get("optional")):
                return False
        # a finished task whose successor never ran (only references of the definition
        # have one: ``Blueprint.next_task``)
        found = self.attempts_of(self.blueprint.by_ref)
        for attempts in found.values():
            for task in attempts:
                if task.retried or task.iteration:
                    continue  # loop bodies are settled by their DO_WHILE
                if not self._continues(task):
                    continue
                nxt = self.blueprint.next_task(task.reference_task_name)
                if nxt is not None and not found.get(nxt.get("taskReferenceName")):
                    return False
        return True

    def _continues(self, task: TaskState) -> bool:
        return get_type(task.task_type).continues_after(self, task)

    def workflow_output(self, last: TaskState | None = None) -> dict:
        """Output of an ending workflow: a successful TERMINATE's output, else the
        resolved ``outputParameters``, else the last task's output (updateWorkflowOutput)."""
        terminate = self._successful_terminate()
        if terminate is not None:
            return terminate.output_data or {}
        output_parameters = self.wf.definition.get("outputParameters") or {}
        if output_parameters:
            return params.resolve_value(output_parameters, self.document())
        if not self.wf.tasks:
            return {}
        task = last or last_task(self.wf.tasks)
        return task.output_data or {}

    def note_failed_tasks(self) -> None:
        """Add every task that ended FAILED or FAILED_WITH_TERMINAL_ERROR (retried attempts
        included; TIMED_OUT and CANCELED are not) to ``failedReferenceTaskNames`` /
        ``failedTaskNames``, as Conductor does when a workflow completes or is terminated
        (WorkflowExecutorOps.completeWorkflow / terminateWorkflow)."""
        wf = self.wf
        failed = matching(wf.tasks, statuses=frozenset({"FAILED", "FAILED_WITH_TERMINAL_ERROR"}))
        wf.failed_reference_task_names = sorted(set(wf.failed_reference_task_names or [])
                                                | {t.reference_task_name for t in failed})
        wf.failed_task_names = sorted(set(wf.failed_task_names or []) | {t.task_def_name for t in failed})

    def complete_workflow(self) -> None:
        wf = self.wf
        wf.output = self.workflow_output()
        wf.status = "COMPLETED"
        wf.end_time = self.now
        wf.update_time = self.now
        self.note_failed_tasks()
        self.touch_workflow()
        if wf.parent_workflow_id:
            self.act("notify_parent")

    def end_workflow(self, status: str, reason: str | None, task: TaskState | None = None,
                     *, trigger_failure_workflow: bool = True) -> None:
        """End the workflow with a non-success status (or COMPLETED from a TERMINATE task):
        cancel what is still running, set output and reason, ask for the failure
        workflow and the parent notification. Source: WorkflowExecutorOps.terminateWorkflow."""
        wf = self.wf
        if wf.terminal:
            return
        # status and reason first: cancelling a SUB_WORKFLOW passes them to the child
        wf.status = status
        wf.reason_for_incompletion = reason
        for t in list(active_tasks(wf.tasks)):
            if not t.terminal:
                get_type(t.task_type).cancel(self, t)
                t.status = "CANCELED"
                t.end_time = self.now  # no reason of its own: Conductor's cancelNonTerminalTasks sets none
                self.touch(t)
        wf.output = self.workflow_output(task)
        wf.status = status
        wf.reason_for_incompletion = reason
        wf.end_time = self.now
        wf.update_time = self.now
        self.note_failed_tasks()
        self.touch_workflow()
        failure_wf = wf.definition.get("failureWorkflow")
        if trigger_failure_workflow and failure_wf and status in ("FAILED", "TIMED_OUT", "TERMINATED"):
            self.act("start_failure_workflow", task, reason=reason, status=status)
        if wf.parent_workflow_id:
            self.act("notify_parent")

    # --- timers ----------------------------------------------------------------------------

    def set_next_decide_at(self) -> None:
        """When the sweeper must decide this execution next (epoch ms), or None.

        The earliest of: a retry/callback becoming visible is handled by polls (no decide
        needed); timeouts (task, response, poll, workflow) and timers of system tasks
        (``TaskType.due_at``) are; an execution with async work in flight gets a repair
        deadline so a lost job is re-dispatched."""
        wf = self.wf
        if wf.terminal:
            if wf.next_decide_at is not None:
                wf.next_decide_at = None
                self.touch_workflow()
            return
        due: list[int] = [self.now] if getattr(self, "_rounds_exhausted", False) else []
        timeout_s = int(wf.definition.get("timeoutSeconds") or 0)
        if timeout_s > 0 and (wf.definition.get("timeoutPolicy") or "ALERT_ONLY") == "TIME_OUT_WF":
            due.append((wf.last_retried_time or wf.create_time) + timeout_s * 1000)
        if wf.status != "PAUSED":
            for task in active_tasks(wf.tasks):
                if task.terminal or task.retried:
                    continue
                ttype = get_type(task.task_type)
                if self._delayed_system_task(task):
                    due.append(task.timer_at)
                    continue
                at = ttype.due_at(self, task)
                if at is not None:
                    due.append(at)
                if ttype.has_task_def:
                    task_def = self.task_def_of(self.workflow_task_of(task))
                    if task_def:
                        due.extend(_timeout_deadlines(task, task_def, ttype.is_worker, self.now))
        # something due now was just decided: look again shortly, never in a hot loop
        next_at = max(min(due), self.now + 100) if due else None
        stored = wf.next_decide_at
        if (self.keep_earlier_deadline and next_at is not None and stored is not None
                and self.now < stored < next_at):
            # An earlier deadline still ahead stays: the sweeper decides then (a decide
            # with nothing due changes nothing) and writes the exact one, as every decide
            # but a task update's does. A task update that only pushes a response timeout
            # later then writes no workflow row (one UPDATE fewer, and on PostgreSQL no
            # new index entries for it).
            return
        if next_at != stored:
            wf.next_decide_at = next_at
            self.touch_workflow()


def task_limit_fields(task_def: dict | None) -> dict[str, int]:
    """The TaskState fields that carry a TaskDef's poll-time limits (``concurrentExecLimit``,
    ``rateLimitPerFrequency``, ``rateLimitFrequencyInSeconds``; 0 = none, also for a
    missing or malformed value and without a TaskDef), enforced by ``apps.engine.limits``."""
    task_def = task_def if isinstance(task_def, dict) else {}

    def count(key: str) -> int:
        try:
            return max(0, int(task_def.get(key) or 0))
        except (TypeError, ValueError):
            return 0

    return {"concurrent_exec_limit": count("concurrentExecLimit"),
            "rate_limit_per_frequency": count("rateLimitPerFrequency"),
            "rate_limit_frequency_in_seconds": count("rateLimitFrequencyInSeconds")}


def _timeout_deadlines(task: TaskState, task_def: dict, is_worker: bool, now: int) -> list[int]:
    """Epoch ms at which a timeout of this task may fire. A SCHEDULED worker task gets a
    provisional response-timeout check (its poll, which does not decide, starts the real
    clock): at that check the real deadline ``update_time + responseTimeout`` is known."""
    out = []
    policy = task_def.get("timeoutPolicy") or "TIME_OUT_WF"
    total_s = int(task_def.get("totalTimeoutSeconds") or 0)
    first = task.first_scheduled_time or task.scheduled_time
    if total_s > 0 and first > 0 and policy != "ALERT_ONLY":
        out.append(first + total_s * 1000)
    timeout_s = int(task_def.get("timeoutSeconds") or 0)
    if timeout_s > 0 and task.start_time > 0 and policy != "ALERT_ONLY":
        out.append(task.start_time + task.start_delay_seconds * 1000 + timeout_s * 1000)
    poll_timeout = int(task_def.get("pollTimeoutSeconds") or 0)
    if poll_timeout > 0 and task.status == "SCHEDULED" and policy != "ALERT_ONLY":
        out.append(task.scheduled_time + task.start_delay_seconds * 1000 + (poll_timeout + task.callback_after_seconds) * 1000)
    response_timeout = int(task_def.get("responseTimeoutSeconds") or 0)
    if response_timeout > 0 and is_worker:
        if task.status == "IN_PROGRESS":
            out.append(task.update_time + (response_timeout + task.callback_after_seconds) * 1000)
        elif task.status == "SCHEDULED":
            out.append(max(task.visible_at, now) + response_timeout * 1000)
    return out


def decide(wf: WorkflowState, *, now_ms: int, new_id: Callable[[], str], rng: Random,
           task_def_lookup: TaskDefLookup | None = None,
           domain_selector: Callable[[str, list[str]], str | None] | None = None,
           env: Mapping[str, str] | None = None, config: Mapping | None = None,
           evaluated: Mapping[str, evaluation.Evaluated] | None = None) -> DeciderOutcome:
    """Decide one workflow execution in memory and return what changed.

    ``wf`` is mutated (tasks appended/updated, status/output set); ``now_ms`` is epoch ms.
    Every input is an argument: ``new_id()`` gives the id of each new task,
    ``rng`` the retry jitter, ``task_def_lookup(name)`` a registered TaskDef dict for tasks
    whose WorkflowTask has no ``taskDefinition`` (dynamic tasks), ``domain_selector`` the
    active domain of a ``taskToDomain`` list, ``env`` the environment ``${workflow.env.X}``
    reads (none when not given), ``config`` the engine tunables the task types read
    (``settings.CONDUCTOR``: DO_WHILE_MAX_ITERATIONS, JQ_TIME_LIMIT_SECONDS; defaults when
    not given), ``evaluated`` the results of evaluations asked for by earlier decides
    (``{evaluation.key: evaluation.Evaluated}``, computed outside any lock). Never raises for
    workflow semantics: failures end the workflow inside the state.
    """
    return Decider(wf, now_ms=now_ms, new_id=new_id, rng=rng, task_def_lookup=task_def_lookup,
                   domain_selector=domain_selector, env=env, config=config, evaluated=evaluated).run()
