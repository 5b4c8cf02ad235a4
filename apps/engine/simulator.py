"""``POST /api/workflow/test``: run a workflow definition through the real decider in
memory, with mocked outcomes for the tasks that would need a worker or the outside world
(SIMPLE and other worker tasks, HTTP, HUMAN, WAIT without a timer, SUB_WORKFLOW).
Nothing is stored.

Request (WorkflowTestRequest, camelCase): a StartWorkflowRequest plus
``taskRefToMockOutput: {ref: [TaskMock]}`` (TaskMock: ``status`` default COMPLETED,
``output``, ``executionTime`` and ``queueWaitTime`` in ms) consumed in order per
reference (loop iterations ``ref__N`` may be mocked by their runtime or their plain
reference; a list serves successive retries and iterations) and
``subWorkflowTestRequest: {subWorkflowRef: WorkflowTestRequest}`` to simulate a child.
Timers (WAIT durations, retry delays) advance a simulated clock. The answer is the
Workflow JSON as ``GET /api/workflow/{id}`` would show it.
Source: Conductor's WorkflowTestRequest / TaskMock (docs/conductor-notes.md §2.6).
"""
from __future__ import annotations

import copy
import random

from django.conf import settings

from apps.core.clock import now_ms
from apps.core.errors import InvalidInput, NotFound, validation_failed
from apps.core.ids import new_id
from apps.engine import params
from apps.engine.blueprint import Blueprint
from apps.engine.decider import decide
from apps.engine.evaluation import decide_in_memory
from apps.engine.representation import workflow_json
from apps.engine.status import TASK_RESULT_STATUSES
from apps.metadata.validation import MAX_INT
from apps.engine.state import WorkflowState
from apps.engine.status import ACTIVE_WORKFLOW
from apps.engine.task_types import get_type
from apps.engine.task_types.agent import A2A_TASK_TYPES
from apps.engine.task_types.ai import AI_TASK_TYPES
from apps.metadata.environment import WorkflowEnvironment

MAX_STEPS = 10_000
EXTERNAL_TYPES = ("HTTP", "HUMAN", "SUB_WORKFLOW", "WAIT", "EVENT", "PULL_WORKFLOW_MESSAGES", *AI_TASK_TYPES,
                  *A2A_TASK_TYPES)


def _definition(req: dict) -> dict:
    from apps.engine.executor import populate_task_definitions
    from apps.metadata.services import workflow_def_row, workflow_def_validate

    if isinstance(req.get("workflowDef"), dict):
        return populate_task_definitions(workflow_def_validate(workflow_def=req["workflowDef"]))
    row = workflow_def_row(name=req.get("name"), version=req.get("version"))
    if row is None:
        raise NotFound(f"No such workflow defined. name={req.get('name')}, version={req.get('version')}")
    return populate_task_definitions(row.definition)


def _needs_outside(task) -> bool:
    if task.terminal:
        return False
    ttype = get_type(task.task_type)
    if ttype.is_worker:
        return task.status == "SCHEDULED"
    if task.task_type == "WAIT":
        return task.timer_at is None
    return task.task_type in EXTERNAL_TYPES


def _hidden_until(task) -> int:
    """Epoch ms before which nothing happens to ``task``: a worker task's poll
    visibility, a system task's timer (0 when it has none)."""
    if get_type(task.task_type).is_worker:
        return task.visible_at
    return task.timer_at or 0


def _check_mock(mock: dict, path: str) -> None:
    """A TaskMock ``{status?, output?, queueWaitTime?, executionTime?}``: ``status`` one
    of TaskResult's statuses (Conductor's ``TaskResult.Status``), ``output`` an object,
    the times (ms) integers from 0 to 2^31-1. Errors: InvalidInput naming the field."""
    errors = []
    status = mock.get("status")
    if status is not None and status not in TASK_RESULT_STATUSES:
        errors.append({"path": f"{path}.status", "message": f"must be one of {', '.join(TASK_RESULT_STATUSES)}",
                       **({"invalidValue": status} if isinstance(status, str) else {})})
    if mock.get("output") is not None and not isinstance(mock["output"], dict):
        errors.append({"path": f"{path}.output", "message": "must be a JSON object"})
    for key in ("queueWaitTime", "executionTime"):
        value = mock.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT):
            errors.append({"path": f"{path}.{key}", "message": f"must be an integer from 0 to {MAX_INT} (ms)"})
    if errors:
        raise validation_failed(errors)


def _check_mocked_refs(definition: dict, mocks: dict) -> None:
    """Every mocked reference names a task of ``definition`` (``ref`` or a loop
    iteration's ``ref__N``): a mock for a reference that is not there would never be used
    and the simulation would silently run without it. A definition with a
    FORK_JOIN_DYNAMIC makes its branch references at run time: its mocks are not checked.
    Errors: InvalidInput (400) naming each unknown reference."""
    blueprint = Blueprint(definition)
    if any(t.get("type") == "FORK_JOIN_DYNAMIC" for t in blueprint.by_ref.values()):
        return
    unknown = sorted(ref for ref in mocks
                     if blueprint.get(ref) is None and blueprint.get(params.strip_iteration(ref)) is None)
    if unknown:
        raise validation_failed([{"path": f"taskRefToMockOutput.{ref}", "invalidValue": ref,
                                  "message": "is not a taskReferenceName of the workflow definition"}
                                 for ref in unknown])


def workflow_test(req: dict) -> dict:
    """Simulate one execution of the requested workflow; return its Workflow JSON.
    Errors: InvalidInput for a malformed request, NotFound for an unknown definition."""
    if not isinstance(req, dict):
        raise InvalidInput("WorkflowTestRequest must be a JSON object")
    raw_mocks = req.get("taskRefToMockOutput")
    raw_mocks = {} if raw_mocks is None else raw_mocks  # [] is not a map of mocks
    if not isinstance(raw_mocks, dict):
        raise InvalidInput("taskRefToMockOutput must be a JSON object of taskReferenceName to TaskMock list")
    mocks = {ref: list(items) if isinstance(items, list) else [items] for ref, items in raw_mocks.items()}
    for ref, items in mocks.items():
        if not all(isinstance(m, dict) for m in items):
            raise InvalidInput(f"taskRefToMockOutput.{ref} must be a list of TaskMock objects")
        for i, mock in enumerate(items):
            _check_mock(mock, f"taskRefToMockOutput.{ref}[{i}]")
    for key in ("input", "subWorkflowTestRequest"):
        if req.get(key) is not None and not isinstance(req[key], dict):
            raise InvalidInput(f"{key} must be a JSON object")
    sub_requests = req.get("subWorkflowTestRequest") or {}
    definition = _definition(req)
    _check_mocked_refs(definition, mocks)
    now = now_ms()
    wf = WorkflowState(workflow_id=new_id(), workflow_name=definition["name"],
                       workflow_version=int(definition.get("version") or 1), status="RUNNING", definition=definition,
                       input={**(definition.get("inputTemplate") or {}), **(req.get("input") or {})},
                       variables=copy.deepcopy(definition.get("variables") or {}),
                       correlation_id=req.get("correlationId"), priority=req.get("priority") or 0,
                       create_time=now, update_time=now)
    _decide(wf, now)
    for _ in range(MAX_STEPS):
        if wf.terminal:
            break
        pending = [t for t in wf.tasks if _needs_outside(t)]
        acted = False
        for task in pending:
            queue = mocks.get(task.reference_task_name) or mocks.get(params.definition_ref(task))
            if task.status == "SCHEDULED" and _hidden_until(task) > now:
                continue
            if queue:
                mock = queue.pop(0) or {}
                wait = int(mock.get("queueWaitTime") or 0)
                run = int(mock.get("executionTime") or 0)
                task.start_time = task.start_time or now + wait
                now = max(now, task.start_time + run)
                task.status = mock.get("status") or "COMPLETED"
                task.output_data = mock.get("output") or {}
                task.reason_for_incompletion = mock.get("reasonForIncompletion") or (
                    None if task.status == "COMPLETED" else f"mocked {task.status}")
            elif task.task_type == "SUB_WORKFLOW" and params.definition_ref(task) in sub_requests:
                child_req = dict(sub_requests[params.definition_ref(task)])
                param = (task.workflow_task or {}).get("subWorkflowParam") or \
                    (definition_task(wf, task).get("subWorkflowParam") or {})
                child_req.setdefault("name", param.get("name"))
                child_req.setdefault("version", param.get("version"))
                if isinstance(param.get("workflowDefinition"), dict):
                    child_req.setdefault("workflowDef", param["workflowDefinition"])
                child_req.setdefault("input", task.input_data)
                child = workflow_test(child_req)
                task.sub_workflow_id = child["workflowId"]
                status = child["status"]
                if status in ACTIVE_WORKFLOW:
                    continue
                task.status = {"TERMINATED": "CANCELED"}.get(status, status)
                task.output_data = {**child.get("output", {}), "subWorkflowId": child["workflowId"]}
                if status != "COMPLETED":
                    task.reason_for_incompletion = child.get("reasonForIncompletion")
            else:
                continue
            task.end_time = now if task.status != "IN_PROGRESS" else 0
            task.update_time = now
            acted = True
            break
        if not acted:
            # only timers move the clock: WAIT due times and retry delays
            due = [_hidden_until(t) for t in wf.tasks if not t.terminal and _hidden_until(t) > now]
            if not due:
                break
            now = min(due)
        _decide(wf, now)
    return workflow_json(wf)


def _decide(wf: WorkflowState, now: int) -> None:
    """Decide ``wf`` at ``now`` (epoch ms), running the scripts and jq programs it asks
    for with their limits and deciding again with the results (nothing here holds a
    lock: the simulation is in memory)."""
    from apps.engine.executor import task_def_lookup

    decide_in_memory(lambda evaluated: decide(wf, now_ms=now, new_id=new_id, rng=random.Random(),
                                              task_def_lookup=task_def_lookup, env=WorkflowEnvironment(),
                                              config=settings.CONDUCTOR, evaluated=evaluated))


def definition_task(wf: WorkflowState, task) -> dict:
    return Blueprint(wf.definition).get(params.definition_ref(task)) or {}
