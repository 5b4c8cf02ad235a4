"""Engine services: every change to an execution goes through one function here.

Each service (1) locks the workflow row (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's
IMMEDIATE transaction serialises writers), (2) applies the change, (3) runs the decider
and (4) persists the outcome in the same transaction; side effects (jobs for the
django-q2 cluster, wake-ups of long polls, live updates) run on commit. A crash at any
point leaves either the old state or the new one, and ``next_decide_at`` tells the
sweeper what is due.

Shapes: arguments are snake_case Python values; JSON payloads (input, output) are stored
untouched. Times are epoch ms from ``apps.core.clock``. Errors: ``apps.core.errors``.
Source: Conductor ``WorkflowExecutorOps`` (startWorkflow, updateTask, decide, pause,
resume, terminateWorkflow) and ``ExecutionService``.
"""
from __future__ import annotations

import copy
import dataclasses
import random
import json
import logging
import pickle
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction

from apps.core.clock import now_ms
from apps.core.errors import Conflict, IllegalState, InvalidInput, NotFound, validation_failed
from apps.core.fields import length_errors
from apps.core.ids import new_id
from apps.core.logs import log_context
from apps.engine import (definitions, effects, evaluation, event_queue, history, jobqueue, notify, payloads, queue,
                         retention, store)
from apps.engine.decider import Decider
from apps.engine.outcome import DeciderOutcome, Services
from apps.engine.models import TaskExecLog, TaskExecution, WorkflowExecution
from apps.engine.state import TaskState, WorkflowState, task_by_id
from apps.engine.status import TASK_RESULT_STATUSES, TERMINAL_TASK, TERMINAL_WORKFLOW
from apps.engine.task_types import get_type, set_variable
from apps.metadata.models import TaskDef
from apps.metadata.services import workflow_def_validate
from apps.metadata.validation import iter_workflow_tasks, with_task_definitions
from apps.metadata import secrets
from apps.metadata.environment import WorkflowEnvironment
from apps.wmq import queue as wmq_queue

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_LOGS_PER_UPDATE = 10


def with_retries(fn: Callable[[], T], attempts: int = 8) -> T:
    """Run a transactional operation, re-running it when a concurrent poll changed a task
    under it (StaleState) or PostgreSQL reports a deadlock/serialisation failure.

    Every service runs through here: when the outermost one ends, the evaluations its
    decides asked for run (``run_evaluations``), outside its transaction and lock."""
    _service.depth += 1
    try:
        result = _attempts(fn, attempts)
    except BaseException:
        _service.depth -= 1
        if _service.depth == 0:
            _service.pending.clear()  # rolled back: what it asked for was never saved
        raise
    _service.depth -= 1
    if _service.depth == 0 and _service.pending:
        run_evaluations()
    return result


def _attempts(fn: Callable[[], T], attempts: int) -> T:
    if store.fusing():
        # in a fused batch the writes of an attempt are held: a failure fails the batch,
        # which groupcommit rolls back and runs again call by call (each with its retries)
        return fn()
    for attempt in range(attempts):
        try:
            return fn()
        except store.StaleState:
            if attempt == attempts - 1:
                raise
        except OperationalError as exc:  # deadlock detected / database is locked
            if attempt == attempts - 1:
                raise
            log.info("retrying after %s", exc)
        time.sleep(0.002 * (attempt + 1))
    raise AssertionError("unreachable")


# --- evaluate, then lock and apply (apps.engine.evaluation) ------------------------------------

class _ServiceState(threading.local):
    """Per thread: how deep in services we are, the evaluation requests waiting for the
    outermost service to end, and whether they are being run."""

    def __init__(self):
        self.depth = 0
        self.pending: list[evaluation.Request] = []
        self.running = False
        self.handoff: list[evaluation.Request] | None = None


_service = _ServiceState()


def run_evaluations() -> None:
    """Run the evaluations the decides of this thread asked for, outside any lock, then
    apply each workflow's results in one short locked transaction (``evaluations_apply``).
    Before applying, a chain is run ahead: an unlocked snapshot of the workflow is decided
    in memory with the results so far and what that decide asks for is evaluated too (an
    INLINE chain, a loop of scripts), so one locked transaction applies many results. At
    most ``CONDUCTOR["EVALUATIONS_PER_CALL"]`` evaluations run per call; the rest are
    handed to the cluster (``evaluations_job``). Inside a caller's transaction (it may hold
    a workflow's lock until it commits) they wait for its commit, and are dropped with it
    when it rolls back. Results that no longer match their task are dropped by the decide."""
    if _service.running or not _service.pending:
        return
    if connection.in_atomic_block:
        requests, _service.pending = _service.pending, []
        if _service.handoff is not None:
            _service.handoff.extend(requests)  # the caller runs them after the commit
            return
        transaction.on_commit(lambda: _run_after_commit(requests), robust=True)
        return
    _service.running = True
    budget = int(settings.CONDUCTOR.get("EVALUATIONS_PER_CALL", 500))
    try:
        while _service.pending and budget > 0:
            workflow_id = _service.pending[0].workflow_id
            batch = [r for r in _service.pending if r.workflow_id == workflow_id]
            _service.pending = [r for r in _service.pending if r.workflow_id != workflow_id]
            results = {r.key: evaluation.run(r) for r in batch}
            budget -= len(batch)
            budget = _run_ahead(workflow_id, results, budget)
            try:
                evaluations_apply(workflow_id=workflow_id, results=results)
            except NotFound:
                pass  # the workflow was removed meanwhile
            except Exception:  # noqa: BLE001 - the task's deadline brings the sweeper back
                log.exception("applying evaluations to %s failed; the sweeper asks again", workflow_id)
        left = {r.workflow_id for r in _service.pending}
        _service.pending.clear()
    finally:
        _service.running = False
    for workflow_id in left:
        jobqueue.enqueue("apps.engine.executor.evaluations_job", workflow_id, task_name=f"evaluate-{workflow_id}")


def _run_after_commit(requests: list[evaluation.Request]) -> None:
    _service.pending.extend(requests)
    run_evaluations()


class evaluations_handed_back:
    """``with evaluations_handed_back() as requests:`` the evaluations that the services
    called inside the block (in a caller's transaction) ask for are appended to
    ``requests`` instead of being run after that transaction's commit in this thread:
    a group-commit thread (``apps.engine.groupcommit``) hands them to the caller, which
    runs them after the batch's COMMIT with ``run_handed_back`` (outside any lock, as
    ``run_evaluations`` does). Dropped with the block when it raises (its savepoint is
    rolled back, and what it asked for with it)."""

    def __enter__(self) -> list[evaluation.Request]:
        self.outer, self.requests = _service.handoff, []
        _service.handoff = self.requests
        return self.requests

    def __exit__(self, *exc) -> None:
        _service.handoff = self.outer


def run_handed_back(requests: list[evaluation.Request]) -> None:
    """Run evaluations collected by ``evaluations_handed_back`` (after the COMMIT of the
    transaction their decides ran in), as ``run_evaluations`` would have."""
    _service.pending.extend(requests)
    run_evaluations()


def _run_ahead(workflow_id: str, results: dict[str, evaluation.Evaluated], budget: int) -> int:
    """Decide an unlocked snapshot of the workflow in memory with ``results`` and evaluate
    what it asks for next, adding to ``results``, while it asks and ``budget`` lasts;
    returns the budget left. Nothing is saved and no side effect runs: the locked decide
    of ``evaluations_apply`` redoes it all and uses only the results that match."""
    wf = store.snapshot_workflow(workflow_id)  # the unsettled tasks, not every one
    if wf is None:
        return budget
    while budget > 0 and not wf.terminal:
        outcome = new_decider(wf, now_ms(), evaluated=results, speculative=True).run()
        requests = [a.data["request"] for a in outcome.actions
                    if a.kind == "evaluate" and a.data["request"].key not in results]
        if not requests:
            break
        for request in requests[:budget]:
            results[request.key] = evaluation.run(request)
        budget -= len(requests)
    return budget


def evaluations_apply(*, workflow_id: str, results: dict[str, evaluation.Evaluated]) -> None:
    """Lock a workflow and decide it with evaluation results computed outside the lock
    (``{evaluation.key: Evaluated}``); the task types apply a result only to a task still
    waiting for that very evaluation. A terminal workflow is left alone. Errors: NotFound."""
    _decide_locked(workflow_id, evaluated=results)


def evaluations_job(workflow_id: str) -> None:
    """Cluster job: decide a workflow asking again for the evaluations it waits for, and
    run them (``run_evaluations``): what one call left over. Idempotent."""
    try:
        workflow_decide(workflow_id)
    except NotFound:
        pass



def active_domain(task_def_name: str, domains: list[str]) -> str | None:
    """For a ``taskToDomain`` list: the first domain whose queue a worker polled within
    ``CONDUCTOR["ACTIVE_WORKER_WINDOW_MS"]`` (Conductor's activeWorkerLastPollTimeout),
    else None (the caller takes the last)."""
    from apps.engine.models import PollData

    recent = set(PollData.objects.filter(queue_name=task_def_name, domain__in=domains,
                                         last_poll_time__gte=now_ms() - settings.CONDUCTOR["ACTIVE_WORKER_WINDOW_MS"])
                 .values_list("domain", flat=True))
    return next((d for d in domains if d in recent), None)


def task_def_lookup(name: str) -> dict | None:
    """Registered TaskDef by name (runtime lookup for dynamic tasks)."""
    row = TaskDef.objects.filter(pk=name).only("definition").first()
    return row.definition if row else None


# --- start -------------------------------------------------------------------------------

def populate_task_definitions(definition: dict) -> dict:
    """Copy of a WorkflowDef whose every WorkflowTask carries a ``taskDefinition`` (one
    query for the registered TaskDefs; see ``validation.with_task_definitions``). Done once
    at start so running executions never see later TaskDef changes (MetadataMapperService)."""
    names = {t.get("name") for t in iter_workflow_tasks(definition.get("tasks") or [])
             if not t.get("taskDefinition") and t.get("name")}
    registered = {r.name: r.definition for r in TaskDef.objects.filter(name__in=names)} if names else {}
    return with_task_definitions(definition, registered)


def _resolve_definition(name: str | None, version: int | None, workflow_def: dict | None,
                        not_found: str) -> dict:
    """The definition a start runs, TaskDefs populated: the inline ``workflow_def``
    (validated) or the registered one (``definitions.registered_populated``, cached per
    process and checked against the database); NotFound as ``plan_start`` says."""
    if workflow_def:
        return populate_task_definitions(workflow_def_validate(workflow_def=workflow_def, path="startWorkflow.workflowDef"))
    populated = definitions.registered_populated(name, version)
    if populated is None:
        if not_found == "name":
            raise NotFound(f"No such workflow found by name: {name}, version: {version if version is not None else 'null'}")
        raise NotFound(f"No such workflow defined. name={name}, version={version if version is not None else 'null'}")
    return populated


def workflow_start(**request) -> str:
    """Start a workflow execution and decide it once; return its id: ``start_planned`` of
    ``plan_start(**request)`` (the arguments and errors are ``plan_start``'s and
    ``start_planned``'s). Source: WorkflowExecutorOps.startWorkflow (decides
    synchronously inside the call)."""
    return start_planned(plan_start(**request))


@dataclasses.dataclass
class StartPlan:
    """A start checked and ready to run (``plan_start``): the new execution (no tasks
    yet; its id chosen), and its idempotency key and strategy. ``start_planned`` runs it
    in one transaction; a group-commit thread runs it inside a batch's
    (``apps.api.fastpath``), after the slow or user-supplied part (definition look-up,
    input schema, external payloads) ran elsewhere."""

    wf: WorkflowState
    idempotency_key: str | None = None
    idempotency_strategy: str | None = None
    # the execution as planned, for each attempt a copy of its own: a decide changes the
    # state it is given, and an attempt rolled back (a retry, a fused batch run again call
    # by call) must start again from the plan
    pristine: bytes = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.pristine = pickle.dumps(self.wf, protocol=pickle.HIGHEST_PROTOCOL)

    @property
    def workflow_id(self) -> str:
        return self.wf.workflow_id

    def fresh(self) -> WorkflowState:
        """A copy of the execution as planned, for one attempt."""
        return pickle.loads(self.pristine)


def plan_start(*, name: str | None, version: int | None = None, input: dict | None = None,
               correlation_id: str | None = None, priority: int | None = 0,
               task_to_domain: dict | None = None, workflow_def: dict | None = None,
               created_by: str | None = None, parent_workflow_id: str | None = None,
               parent_workflow_task_id: str | None = None, event: str | None = None,
               idempotency_key: str | None = None, idempotency_strategy: str | None = None,
               not_found: str = "request", workflow_id: str | None = None) -> StartPlan:
    """Check a start and build its execution, writing nothing: a ``StartPlan``.

    ``workflow_def`` (camelCase WorkflowDef) is run as given, without registration;
    otherwise ``name``/``version`` (None = latest) are looked up. The execution keeps the
    definition snapshot with TaskDefs populated. ``priority`` is 0..99.
    Errors: InvalidInput (missing name, NULL input, priority out of range, invalid inline
    definition); NotFound (``No such workflow defined. name=%s, version=%s`` or, with
    ``not_found="name"``, ``No such workflow found by name: %s, version: %s``).
    ``idempotency_key`` makes a repeated start safe: with ``idempotency_strategy``
    RETURN_EXISTING the existing execution's id is returned, otherwise (FAIL, the SDK's
    default) Conflict ``Workflow with idempotencyKey %s already exists: %s``. A WorkflowDef
    ``inputSchema`` (JSON Schema in ``inputSchema.data``) is enforced when
    ``enforceSchema`` is true: InvalidInput naming each offending field, nothing stored.
    Reads definitions (cached) and nothing else; ``start_planned`` writes.
    """
    if not name and not (workflow_def and workflow_def.get("name")):
        raise validation_failed([{"path": "startWorkflow.arg0.name", "message": "Workflow name cannot be null or empty"}])
    if input is None:
        raise InvalidInput("NULL input passed when starting workflow")
    if not isinstance(input, dict):
        raise InvalidInput("Workflow input must be a JSON object")
    priority = 0 if priority is None else priority
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise InvalidInput("priority must be an integer")
    if priority < 0:
        raise validation_failed([{"path": "startWorkflow.arg0.priority", "message": "0 is the minimum priority value", "invalidValue": priority}])
    if priority > 99:
        raise validation_failed([{"path": "startWorkflow.arg0.priority", "message": "99 is the maximum priority value", "invalidValue": priority}])
    check_columns(correlation_id=correlation_id, idempotency_key=idempotency_key, created_by=created_by,
                   event=event, task_to_domain=task_to_domain)
    definition = _resolve_definition(name, version, workflow_def, not_found)
    wf_input = dict(definition.get("inputTemplate") or {})
    wf_input.update(input)
    _check_input_schema(definition, wf_input)
    now = now_ms()
    wf = WorkflowState(
        workflow_id=workflow_id or new_id(),
        workflow_name=definition["name"],
        workflow_version=int(definition.get("version") or 1),
        status="RUNNING",
        definition=definition,
        input=wf_input,
        variables=copy.deepcopy(definition.get("variables") or {}),
        correlation_id=correlation_id or None,
        priority=priority,
        task_to_domain=task_to_domain or {},
        parent_workflow_id=parent_workflow_id,
        parent_workflow_task_id=parent_workflow_task_id,
        created_by=created_by,
        event=event,
        idempotency_key=idempotency_key,
        create_time=now,
        update_time=now,
    )
    return StartPlan(wf, idempotency_key, idempotency_strategy)


def start_planned(plan: StartPlan) -> str:
    """Run a ``StartPlan``: insert the execution and its first tasks, decided once, in one
    transaction (a savepoint of the caller's; none inside a fused batch, whose writes
    are held: ``store.fused``); return its id. With an idempotency key an existing
    execution of that key is returned (strategy RETURN_EXISTING) or refused (Conflict
    ``Workflow with idempotencyKey %s already exists: %s``, FAIL: the SDK's default),
    also when a concurrent start with the same key wins the race (IntegrityError).
    Side effects: on commit wakes pollers."""
    name, key = plan.wf.workflow_name, plan.idempotency_key
    if key:
        existing = _idempotent_existing(name, key, plan.idempotency_strategy)
        if existing:
            return existing

    def run() -> str:
        wf = plan.fresh()  # never the state an earlier, rolled-back attempt decided
        with transaction.atomic(savepoint=not store.fusing()):
            wf.tasks = []
            outcome = decide(wf, wf.create_time)
            store.insert_workflow(wf)
            store.insert_tasks(outcome.new_tasks)
            after_commit(wf, outcome)
        return wf.workflow_id

    if not key:
        return with_retries(run)
    try:
        return with_retries(run)
    except IntegrityError:
        # a concurrent start with the same key won the race
        existing = _idempotent_existing(name, key, plan.idempotency_strategy)
        if existing:
            return existing
        raise


def check_columns(*, correlation_id=None, idempotency_key=None, created_by=None, event=None,
                   task_to_domain=None) -> None:
    """InvalidInput (400) naming each StartWorkflowRequest string longer than the
    column that stores it (``apps.core.fields``: the same answer on SQLite, which would
    store it, and PostgreSQL, which would fail with "value too long"). ``task_to_domain``
    values are domains (``{task name: domain}``)."""
    errors = []
    for value, column, field in ((correlation_id, "correlation_id", "correlationId"),
                                 (idempotency_key, "idempotency_key", "idempotencyKey"),
                                 (created_by, "created_by", "createdBy"), (event, "event", "event")):
        errors += length_errors(value, f"engine.WorkflowExecution.{column}", f"startWorkflow.arg0.{field}")
    for task_name, domain in (task_to_domain.items() if isinstance(task_to_domain, dict) else ()):
        errors += length_errors(domain, "engine.TaskExecution.domain", f"startWorkflow.arg0.taskToDomain.{task_name}")
    if errors:
        raise validation_failed(errors)


def _idempotent_existing(name: str, key: str, strategy: str | None) -> str | None:
    existing = (WorkflowExecution.objects.filter(workflow_name=name, idempotency_key=key)
                .values_list("workflow_id", flat=True).first())
    if existing is None:
        return None
    if (strategy or "FAIL").upper() == "RETURN_EXISTING":
        return existing
    raise Conflict(f"Workflow with idempotencyKey {key} already exists: {existing}")


def _check_input_schema(definition: dict, wf_input: dict) -> None:
    """Validate the input against ``inputSchema.data`` (JSON Schema, with the
    jsonschema library) when ``enforceSchema`` is true. Errors: InvalidInput (400) with one
    validationErrors entry per violation, its path naming the input field; InvalidInput
    (400) for a schema that cannot be applied (invalid, or a ``$ref`` outside itself: no
    URL is fetched and no file read)."""
    schema = definition.get("inputSchema")
    if not isinstance(schema, dict) or definition.get("enforceSchema") is False:
        return
    data = schema.get("data") if isinstance(schema.get("data"), dict) else None
    if data is None:
        return
    import jsonschema
    from referencing import Registry
    from referencing.exceptions import NoSuchResource, Unresolvable

    def no_retrieval(uri: str):
        raise NoSuchResource(ref=uri)  # never fetch a URL or read a file named by a schema

    validator_cls = jsonschema.validators.validator_for(data)
    entries = []
    try:
        violations = list(validator_cls(data, registry=Registry(retrieve=no_retrieval)).iter_errors(wf_input))
    except (jsonschema.exceptions.SchemaError, jsonschema.exceptions.UnknownType, Unresolvable) as exc:
        # a schema stored before registration checked it: the start is refused, clearly
        reason = getattr(exc, "message", None) or str(exc)
        raise InvalidInput(f"The workflow's inputSchema cannot be applied: {reason}") from None
    for e in violations:
        base = "input" + "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in e.absolute_path)
        # jsonschema gives one ``required`` violation per missing property, on the object
        missing = [k for k in e.validator_value if k not in e.instance and e.message == f"{k!r} is a required property"] \
            if e.validator == "required" and isinstance(e.instance, dict) else []
        if missing:
            entries += [{"path": f"{base}.{k}", "message": f"'{k}' is a required property"} for k in missing]
        else:
            entries.append({"path": base, "message": e.message})
    if entries:
        raise validation_failed(sorted(entries, key=lambda x: x["path"]))


# --- the decide cycle: lock, decide, save (used by every service, recovery and events) ------

def locked(workflow_id: str) -> store.Loaded:
    """Lock and load a workflow with its tasks (must run inside ``transaction.atomic()``).
    Errors: NotFound ``No such workflow found by id: %s``."""
    wf = store.lock_workflow(workflow_id)
    if wf is None:
        raise NotFound(f"No such workflow found by id: {workflow_id}")
    return store.Loaded(wf)


def _merge(total: DeciderOutcome, part: DeciderOutcome) -> None:
    new_ids = {t.task_id for t in total.new_tasks}
    total.new_tasks.extend(part.new_tasks)
    for task_id, task in part.updated_tasks.items():
        if task_id not in new_ids:
            total.updated_tasks[task_id] = task
    for task_id in part.removed_task_ids:
        if task_id in new_ids:
            total.new_tasks = [t for t in total.new_tasks if t.task_id != task_id]
        else:
            total.removed_task_ids.append(task_id)
            total.updated_tasks.pop(task_id, None)
    total.workflow_changed = total.workflow_changed or part.workflow_changed
    total.actions.extend(part.actions)


# The random source of retry jitter (``backoffJitterMs``): one per process, seeded once
# (a new ``random.Random()`` per decide read the OS's entropy on every task update).
_JITTER = random.Random()


def new_decider(wf: WorkflowState, now: int, *, domains: bool = True,
                evaluated: dict[str, evaluation.Evaluated] | None = None,
                redispatch_evaluations: bool = False, speculative: bool = False,
                keep_earlier_deadline: bool = False) -> Decider:
    """A decider over ``wf`` at ``now`` (epoch ms) with the engine's inputs: random ids
    (UUID v4) for new tasks, the process's random source for retry jitter, the environment
    (``${workflow.env.X}``: ``WorkflowEnvironment``), ``settings.CONDUCTOR``, registered
    TaskDefs and, with ``domains``, the active-worker choice among a ``taskToDomain`` list
    (operator actions schedule with the list's last domain, as before); ``evaluated``
    the results computed outside the lock; ``redispatch_evaluations`` asks again for
    every evaluation still waiting (an explicit decide); ``speculative`` a decide whose
    state is thrown away (``Decider.speculative``); ``keep_earlier_deadline`` keeps a
    stored ``next_decide_at`` that is earlier and still ahead (a worker's task update:
    ``Decider.set_next_decide_at``)."""
    return Decider(wf, now_ms=now, new_id=new_id, rng=_JITTER, task_def_lookup=task_def_lookup,
                   domain_selector=active_domain if domains else None, env=WorkflowEnvironment(),
                   config=settings.CONDUCTOR, evaluated=evaluated, redispatch_evaluations=redispatch_evaluations,
                   speculative=speculative, keep_earlier_deadline=keep_earlier_deadline)


def decide(wf: WorkflowState, now: int, decider: Decider | None = None) -> DeciderOutcome:
    """Run the decider over ``wf`` (or take the outcome of ``decider``, already run by the
    caller), perform its inline actions (start children, the failure workflow, publish
    events) and decide again while those changed the state; return the merged outcome,
    whose ``actions`` are the deferred ones left for ``after_commit``."""
    total = DeciderOutcome()
    for _ in range(20):
        if decider is None:
            part = new_decider(wf, now).run()
        else:
            part = decider.outcome
        decider = None
        _merge(total, part)
        changed = False
        for action in part.actions:
            if not effects.is_deferred(action):
                if effects.apply_inline(wf, part, action, now, SERVICES):
                    changed = True
                    task = action.task
                    if task is not None and all(t.task_id != task.task_id for t in total.new_tasks):
                        total.updated_tasks[task.task_id] = task
                    total.workflow_changed = True
        if part.workflow_changed:
            total.workflow_changed = True
        if not changed or wf.terminal:
            break
    total.actions = [a for a in total.actions if effects.is_deferred(a)]
    return total


def decide_and_save(loaded: store.Loaded, now: int, decider: Decider | None = None, *,
                    touched: set[str] | None = None, removed: list[str] | None = None,
                    workflow_changed: bool = False) -> DeciderOutcome:
    """The second half of every service: ``decide`` (with ``decider`` if the caller ran
    one), delete the ``removed`` task ids, save the workflow (its row when
    ``workflow_changed`` or the decide changed it; the ``touched`` task ids even when the
    decide did not change them) and register ``after_commit``. Runs inside the caller's
    transaction, on a workflow from ``locked``."""
    wf = loaded.wf
    outcome = decide(wf, now, decider)
    if removed:
        outcome.removed_task_ids = list(removed) + outcome.removed_task_ids
    store.save(loaded, outcome, workflow_changed=workflow_changed, extra_task_ids=touched)
    after_commit(wf, outcome)
    return outcome


def after_commit(wf: WorkflowState, outcome: DeciderOutcome) -> None:
    """Register what runs after commit: the deferred actions (cluster jobs, deciding the
    parent), waking the polls of the queues that got tasks, and the change notification.
    ``evaluate`` actions join this thread's pending evaluations (``run_evaluations`` runs
    them when the outermost service ends, after this transaction)."""
    _service.pending.extend(a.data["request"] for a in outcome.actions if a.kind == "evaluate")
    deferred = [a for a in outcome.actions if effects.is_deferred(a) and a.kind != "evaluate"]
    queues = {t.queue_name for t in outcome.new_tasks if t.queue_name}
    queues |= {t.queue_name for t in outcome.updated_tasks.values() if t.queue_name and t.status == "SCHEDULED"}
    workflow_id = wf.workflow_id
    notify.publish_queued(queues)  # other processes' long polls, at commit (PostgreSQL)

    def on_commit() -> None:
        for action in deferred:
            effects.run_deferred(workflow_id, action, workflow_decide)
        notify.tasks_queued(queues)
        notify.workflow_changed(workflow_id)

    transaction.on_commit(on_commit, robust=True)


def workflow_decide(workflow_id: str, *, redispatch_evaluations: bool = True) -> None:
    """Decide a workflow now (``PUT /api/workflow/decide/{id}``, the sweeper, jobs); with
    ``redispatch_evaluations`` (the default: an explicit decide, or the sweeper's, comes when
    something is due or was left over) the evaluations it waits for are asked for again and
    run after its commit. Errors: NotFound."""
    _decide_locked(workflow_id, redispatch_evaluations=redispatch_evaluations)


def _decide_locked(workflow_id: str, *, evaluated: dict[str, evaluation.Evaluated] | None = None,
                   redispatch_evaluations: bool = False) -> None:
    """Lock, decide (with ``evaluated`` results / asking again for pending evaluations)
    and save a non-terminal workflow in one transaction. Errors: NotFound."""
    def run() -> None:
        with transaction.atomic():
            loaded = locked(workflow_id)
            if loaded.wf.terminal:
                return
            now = now_ms()
            decider = new_decider(loaded.wf, now, evaluated=evaluated, redispatch_evaluations=redispatch_evaluations)
            decider.run()
            decide_and_save(loaded, now, decider)
    with log_context(workflowId=workflow_id):
        with_retries(run)


# --- task updates ----------------------------------------------------------------------

def _normalise_log_time(value: Any, now: int) -> int:
    try:
        t = int(value)
    except (TypeError, ValueError):
        return now
    return t * 1000 if 0 < t < 100_000_000_000 else (t or now)


def task_update(*, task_result: dict) -> TaskState | None:
    """Apply a worker's TaskResult (camelCase dict) and decide; return the updated task.
    (``task_update_and_claim`` also hands the worker its next task: update-v2.)

    Shapes: ``task_result`` = ``{workflowInstanceId, taskId, status, outputData?,
    reasonForIncompletion?, callbackAfterSeconds? (s), workerId?, logs?, extendLease?}``.
    Behaviour (WorkflowExecutorOps.updateTask): ``extendLease`` only refreshes the
    response timer; an update of a terminal task or of a terminal workflow is ignored
    (returns the task unchanged); IN_PROGRESS on a worker task puts it back on its queue,
    visible after ``callbackAfterSeconds``; ``outputData`` replaces the old output.
    Errors: InvalidInput for missing ids or an unknown status, and for a task that belongs
    to another workflow than ``workflowInstanceId`` (nothing changes); NotFound
    ``No such workflow found by id: %s`` (checked first, as Conductor's updateTask loads the
    workflow before the task) / ``No such task found by id: %s``.
    """
    return _task_update(task_result, claim_next=False)[0]


def task_update_and_claim(*, task_result: dict) -> tuple[TaskState | None, TaskState | None]:
    """``POST /tasks/update-v2``: ``task_update``, then, when the updated task is terminal
    and a worker task, claim the same worker's next task of its queue (``[domain:]type``,
    IN_PROGRESS for ``workerId``), in the update's transaction: one commit for both.
    Returns ``(updated task, next task or None)``; errors as ``task_update``.
    Source: TaskResource.updateTaskV2."""
    return _task_update(task_result, claim_next=True)


def _task_update(task_result: dict, claim_next: bool) -> tuple[TaskState | None, TaskState | None]:
    workflow_id = task_result.get("workflowInstanceId")
    task_id = task_result.get("taskId")
    errors = []
    if not workflow_id:
        errors.append({"path": "updateTask.arg0.workflowInstanceId", "message": "Workflow Id cannot be null or empty"})
    if not task_id:
        errors.append({"path": "updateTask.arg0.taskId", "message": "Task ID cannot be null or empty"})
    errors += length_errors(task_result.get("workerId"), "engine.TaskExecution.worker_id", "updateTask.arg0.workerId")
    if errors:
        raise validation_failed(errors)
    status = task_result.get("status")
    if status not in TASK_RESULT_STATUSES:
        raise InvalidInput(f"Invalid task status: {status}. Must be one of {', '.join(TASK_RESULT_STATUSES)}")
    output = task_result.get("outputData")
    if output is not None and not isinstance(output, dict):
        raise InvalidInput("outputData must be a JSON object")

    def run() -> tuple[TaskState | None, TaskState | None]:
        # no savepoint of its own inside a fused batch (groupcommit): the batch is one unit
        with transaction.atomic(savepoint=not store.fusing()):
            task = update()
            return task, (claim_after_update(task, task_result) if claim_next else None)

    def update() -> TaskState | None:
        wf = store.lock_workflow(workflow_id)
        if wf is None:
            raise NotFound(f"No such workflow found by id: {workflow_id}")
        task = task_by_id(wf.tasks, task_id)
        if task is None:
            owner = TaskExecution.objects.filter(pk=task_id).values_list("workflow_id", flat=True).first()
            if owner is None:
                raise NotFound(f"No such task found by id: {task_id}")
            # never change a task on behalf of another workflow's id
            raise InvalidInput(f"Task {task_id} does not belong to workflow {workflow_id}",
                               validation_errors=[{"path": "updateTask.arg0.workflowInstanceId",
                                                   "message": "The task belongs to another workflow",
                                                   "invalidValue": str(workflow_id)}])
        loaded = store.Loaded(wf)
        now = now_ms()
        given = (secrets.values_for_task_input(task.input_data, store.workflow_task_of(task, wf.definition))
                 if secrets.references(task.input_data) else {})
        logs = task_result.get("logs") or []
        if logs:
            TaskExecLog.objects.bulk_create([
                TaskExecLog(task_id=task_id, log=secrets.mask(str(entry.get("log", "")), given),
                            created_time=_normalise_log_time(entry.get("createdTime"), now))
                for entry in logs[:MAX_LOGS_PER_UPDATE] if isinstance(entry, dict)])
        if task.status in TERMINAL_TASK or wf.terminal:
            return task  # late or duplicate update: ignored, as Conductor does
        if task_result.get("extendLease"):
            task.update_time = now
            store.save(loaded, DeciderOutcome(), workflow_changed=False, extra_task_ids={task_id})
            return task
        _apply_result(task, secrets.mask_result(task_result, given) if given else task_result, now)
        # a worker's update keeps an earlier deadline already stored (Decider.set_next_decide_at)
        decider = new_decider(loaded.wf, now, keep_earlier_deadline=True)
        decider.run()
        decide_and_save(loaded, now, decider, touched={task_id})
        return task

    with log_context(workflowId=str(task_result.get("workflowInstanceId") or "") or None,
                     taskId=str(task_result.get("taskId") or "") or None,
                     workerId=str(task_result.get("workerId") or "") or None):
        return with_retries(run)


def claim_after_update(task: TaskState | None, task_result: dict) -> TaskState | None:
    """update-v2's second half, in the update's transaction: when the updated ``task`` is
    terminal and a worker task, claim the next task of its queue (``[domain:]type``) for
    the TaskResult's ``workerId`` (else the task's), IN_PROGRESS; None when there is none.
    Source: TaskResource.updateTaskV2."""
    return claim_after_updates([(task, task_result)])[0]


def claim_after_updates(updates: list[tuple[TaskState | None, dict]]) -> list[TaskState | None]:
    """``claim_after_update`` of several ``(task, task_result)`` at once (a fused batch of
    update-v2 calls): one claim per queue for all the workers waiting on it
    (``queue.claim_for``); the next tasks in the order of ``updates``."""
    out: list[TaskState | None] = [None] * len(updates)
    by_queue: dict[str, list[int]] = {}
    for i, (task, _result) in enumerate(updates):
        if task is not None and task.terminal and task.queue_name:
            by_queue.setdefault(task.queue_name, []).append(i)
    for queue_name, indexes in by_queue.items():
        workers = [updates[i][1].get("workerId") or updates[i][0].worker_id for i in indexes]
        for i, nxt in zip(indexes, queue.claim_for(queue_name, workers)):
            out[i] = nxt
    return out


MAX_REASON_CHARS = 500


def _apply_result(task: TaskState, result: dict, now: int) -> None:
    """Copy a TaskResult onto a task as Conductor's updateTask does: ``outputData`` and
    ``reasonForIncompletion`` are replaced (absent = empty), the reason is cut to 500
    characters, and an output over the TASK_OUTPUT max threshold
    (``payloads.max_payload_bytes``, ``MAX_TASK_OUTPUT_PAYLOAD_KB``) is not stored: the task
    becomes FAILED_WITH_TERMINAL_ERROR with Conductor's reason (ExternalPayloadStorageUtils
    .failTask; no retries)."""
    status = result["status"]
    output = result.get("outputData") or {}
    reason = result.get("reasonForIncompletion")
    task.reason_for_incompletion = reason[:MAX_REASON_CHARS] if isinstance(reason, str) else None
    if result.get("workerId"):
        task.worker_id = result["workerId"]
    if result.get("subWorkflowId"):
        task.sub_workflow_id = result["subWorkflowId"]
    callback = int(result.get("callbackAfterSeconds") or 0)
    task.callback_after_seconds = callback
    task.update_time = now
    size = payloads.json_size(output) if output else 0
    limit = payloads.max_payload_bytes("TASK_OUTPUT")
    if size > limit:
        task.output_data = {}
        task.status = "FAILED_WITH_TERMINAL_ERROR"
        task.reason_for_incompletion = payloads.too_large_reason(size, task.task_id, task.workflow_id, limit)
        task.end_time = now
        return
    task.output_data = output
    if status == "IN_PROGRESS":
        if get_type(task.task_type).is_worker:
            # "check back later": the same task goes back to its queue after the callback
            task.status = "SCHEDULED"
            task.visible_at = now + callback * 1000
        else:
            task.status = "IN_PROGRESS"
        return
    task.status = status
    task.end_time = now


def task_update_by_ref(*, workflow_id: str, task_ref_name: str, status: str, output: dict,
                       worker_id: str | None = None) -> str | None:
    """Update the pending task with this reference (or its ``ref__N`` loop iteration);
    return its id, or None when no non-terminal task has that reference.
    Source: ``POST /tasks/{workflowId}/{taskRefName}/{status}``."""
    wf = store.load_workflow(workflow_id)
    if wf is None:
        raise NotFound(f"No such workflow found by id: {workflow_id}")
    candidates = [t for t in wf.tasks if not t.terminal and
                  (t.reference_task_name == task_ref_name or t.reference_task_name.startswith(task_ref_name + "__"))]
    if not candidates:
        return None
    task = candidates[-1]
    with history.acting(action="update_task_by_ref", workflow_id=workflow_id,
                        params={"taskReferenceName": task.reference_task_name, "status": status}):
        task_update(task_result={"workflowInstanceId": workflow_id, "taskId": task.task_id, "status": status,
                                 "outputData": output, "workerId": worker_id})
    return task.task_id


def task_log_add(*, task_id: str, log_line: str) -> None:
    """Append one line to a task's execution log (``POST /tasks/{taskId}/log``), the
    values of the secrets the task was given masked (``secrets.mask``)."""
    row = TaskExecution.objects.filter(pk=task_id).values(*store.TASK_FIELDS).first()
    task = store.TaskState(**row) if row is not None else None
    if task is not None and secrets.references(task.input_data):
        log_line = secrets.mask(log_line, secrets.values_for_task_input(task.input_data, store.workflow_task_of(task)))
    TaskExecLog.objects.create(task_id=task_id, log=log_line, created_time=now_ms())


def tasks_for_worker(tasks: list[TaskState]) -> list[TaskState]:
    """The tasks a poll (or update-v2) hands out, as the worker receives them: each
    ``${workflow.secrets.NAME}`` that the task's WorkflowTask writes replaced by the
    secret's value in a copy of its inputData (the stored task keeps the expression;
    Conductor's ExecutionService.poll, ``substituteSecrets``; one that reached the input
    from data stays as written: ``secrets.template_names``). The tasks are already claimed
    (IN_PROGRESS), so one that cannot be given its secrets is FAILED with the reason
    (``Secret 'NAME' referenced by the task does not exist``, a value no key decrypts,
    another error named by its type; its TaskDef's retries apply) and the others are still
    handed out. Conductor instead hands a task with a missing secret out with null there.
    Tasks without references pass through, without a query."""
    out = []
    for task in tasks:
        if not secrets.references(task.input_data):
            out.append(task)
            continue
        try:
            workflow_task = store.workflow_task_of(task)
            resolved, _values = secrets.resolve(task.input_data, allowed=secrets.template_names(workflow_task),
                                                template=workflow_task.get("inputParameters"))
        except (secrets.MissingSecret, secrets.SecretUnreadable) as exc:
            reason = str(exc)
        except Exception as exc:  # noqa: BLE001 - the rest of the batch is still handed out
            log.exception("could not resolve the secrets of task %s", task.task_id)
            reason = f"The task's secrets could not be resolved ({type(exc).__name__}; see the server log)"
        else:
            given = dataclasses.replace(task)
            given.input_data = resolved
            out.append(given)
            continue
        try:
            task_update(task_result={"workflowInstanceId": task.workflow_id, "taskId": task.task_id,
                                     "status": "FAILED", "reasonForIncompletion": reason,
                                     "workerId": task.worker_id})
        except Exception:  # noqa: BLE001 - left IN_PROGRESS: its response timeout retries it
            log.exception("could not fail task %s whose secrets could not be resolved", task.task_id)
    return out


# --- lifecycle ----------------------------------------------------------------------------

def workflow_pause(*, workflow_id: str) -> None:
    """RUNNING -> PAUSED; no new tasks are scheduled, dispatched ones may still finish.
    Errors: NotFound; Conflict ``Workflow %s has ended, status cannot be updated.``"""
    def run() -> None:
        with transaction.atomic():
            loaded = locked(workflow_id)
            wf = loaded.wf
            if wf.terminal:
                raise Conflict(f"Workflow {wf.workflow_name}.{wf.workflow_version}/{wf.workflow_id} has ended, status cannot be updated.")
            if wf.status == "PAUSED":
                return
            loaded.note("pause")
            wf.status = "PAUSED"
            wf.update_time = now_ms()
            store.save(loaded, DeciderOutcome(), workflow_changed=True)
            transaction.on_commit(lambda: notify.workflow_changed(workflow_id), robust=True)
    with_retries(run)


def workflow_resume(*, workflow_id: str) -> None:
    """PAUSED -> RUNNING and decide. Errors: NotFound; IllegalState (409)
    ``The workflow <id> is not PAUSED so cannot resume. Current status is <STATUS>``."""
    def run() -> None:
        with transaction.atomic():
            loaded = locked(workflow_id)
            wf = loaded.wf
            if wf.status != "PAUSED":
                raise IllegalState(f"The workflow {workflow_id} is not PAUSED so cannot resume. Current status is {wf.status}")
            now = now_ms()
            loaded.note("resume")
            wf.status = "RUNNING"
            wf.last_retried_time = now
            wf.update_time = now
            decide_and_save(loaded, now, workflow_changed=True)
    with_retries(run)


def workflow_terminate(*, workflow_id: str, reason: str | None = None,
                       trigger_failure_workflow: bool = False) -> None:
    """End a workflow as TERMINATED, cancelling its pending tasks (and sub-workflows).
    A TERMINATED workflow is left alone; FAILED/TIMED_OUT ones become TERMINATED.
    The failureWorkflow starts only when ``trigger_failure_workflow`` is set.
    Errors: NotFound; Conflict ``Cannot terminate a COMPLETED workflow.``"""
    def run() -> None:
        with transaction.atomic():
            loaded = locked(workflow_id)
            wf = loaded.wf
            if wf.status == "COMPLETED":
                raise Conflict("Cannot terminate a COMPLETED workflow.")
            if wf.status == "TERMINATED":
                return
            loaded.note("terminate", reason=reason, triggerFailureWorkflow=trigger_failure_workflow or None)
            now = now_ms()
            decider = new_decider(wf, now, domains=False)
            if wf.terminal:  # FAILED / TIMED_OUT: flip to TERMINATED
                wf.status = "TERMINATED"
                wf.reason_for_incompletion = reason or wf.reason_for_incompletion
                wf.update_time = now
                decider.touch_workflow()
            else:
                decider.end_workflow("TERMINATED", reason, trigger_failure_workflow=trigger_failure_workflow)
            decider.set_next_decide_at()
            outcome = decide(wf, now, decider)
            store.save(loaded, outcome, workflow_changed=True)
            after_commit(wf, outcome)
    with_retries(run)


def workflow_remove(*, workflow_id: str, archive: bool = True) -> None:
    """Delete a workflow execution and its tasks (``DELETE /workflow/{id}/remove``).
    Errors: NotFound; InvalidInput ``Cannot archive workflow: %s with status: %s`` when
    archiving a workflow that is not terminal."""
    with transaction.atomic():
        row = WorkflowExecution.objects.filter(pk=workflow_id).values("status").first()
        if row is None:
            raise NotFound(f"No such workflow found by id: {workflow_id}")
        if archive and row["status"] not in TERMINAL_WORKFLOW:
            raise InvalidInput(f"Cannot archive workflow: {workflow_id} with status: {row['status']}")
        retention.delete_executions([workflow_id])


# --- async system tasks (run by the cluster) ------------------------------------------------

def system_task_claim(task_id: str) -> bool:
    """Mark an async system task IN_PROGRESS before the cluster runs it (compare-and-set
    from SCHEDULED, with a ``task.polled`` history event by this server's instance id in
    the same transaction; an IN_PROGRESS task is re-run after a crash). True if it may run."""
    now = now_ms()
    with transaction.atomic(), store.sql_cursor() as cursor:
        cursor.execute("UPDATE engine_task_execution SET status = 'IN_PROGRESS', start_time = %s, update_time = %s, "
                       "poll_count = 1 WHERE task_id = %s AND status = 'SCHEDULED' "
                       "RETURNING workflow_id, reference_task_name", [now, now, task_id])
        row = cursor.fetchone()
        if row is not None:
            history.record_polls(cursor, [TaskState(task_id=task_id, workflow_id=row[0], task_type="",
                                                    task_def_name="", reference_task_name=row[1],
                                                    status="IN_PROGRESS", poll_count=1, start_time=now,
                                                    worker_id=settings.CONDUCTOR.get("INSTANCE_ID"))], now)
            return True
    return TaskExecution.objects.filter(pk=task_id, status="IN_PROGRESS").exists()


def workflow_variables_update(*, workflow_id: str, variables: dict, append_array: bool = False) -> dict:
    """Merge ``variables`` into a workflow's variables (top-level keys overwrite; with
    ``append_array`` a key whose current value is a list gets the new value(s) appended)
    and decide the workflow; return the new variables.

    Locks the workflow row, saves and decides in one transaction (a terminal workflow is
    saved without deciding). Errors: InvalidInput when ``variables`` is not an object or
    the result is over 256 KB (``The variables payload size: %d of workflow: %s is greater
    than the permissible limit: %d kilobytes``); NotFound ``No such workflow found by id: %s``.
    Source: the ``update_workflow_variables`` event action (Conductor's Action.Type).
    Side effects: updates the workflow row; on commit the usual decide follow-ups.
    """
    if not isinstance(variables, dict):
        raise InvalidInput("variables must be a JSON object")

    def run() -> dict:
        with transaction.atomic():
            wf = store.lock_workflow(workflow_id)
            if wf is None:
                raise NotFound(f"No such workflow found by id: {workflow_id}")
            loaded = store.Loaded(wf)
            merged = dict(wf.variables or {})
            for key, value in variables.items():
                if append_array and isinstance(merged.get(key), list):
                    merged[key] = merged[key] + (value if isinstance(value, list) else [value])
                else:
                    merged[key] = value
            size = len(json.dumps(merged).encode())
            if size > set_variable.MAX_VARIABLES_BYTES:
                raise InvalidInput(f"The variables payload size: {size} of workflow: {workflow_id} is greater than "
                                   f"the permissible limit: {set_variable.MAX_VARIABLES_BYTES // 1024} kilobytes")
            now = now_ms()
            wf.variables = merged
            wf.update_time = now
            if wf.terminal:
                store.save(loaded, DeciderOutcome(), workflow_changed=True)
                transaction.on_commit(lambda: notify.workflow_changed(workflow_id), robust=True)
            else:
                decide_and_save(loaded, now, workflow_changed=True)
            return merged

    return with_retries(run)


# What inline effects may call (``outcome.Services``): handed to ``effects.apply_inline``
# and from there to ``TaskType.apply_inline``, so neither imports this module.
SERVICES = Services(workflow_start=workflow_start, workflow_terminate=workflow_terminate,
                    workflow_summary=store.workflow_summary, event_message_insert=event_queue.event_message_insert,
                    env=WorkflowEnvironment(snapshot=False), workflow_messages_pop=wmq_queue.pop,
                    wmq_max_batch_size=lambda: int(wmq_queue.limits()["MAX_BATCH_SIZE"]))
