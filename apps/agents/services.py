"""The Agents API's operations over the engine (Conductor's ``AgentService``).

Every change goes through the engine's services (``apps.engine.executor``) or the
metadata services, each in its own transaction: ``deploy`` and an inline ``start``
validate and compile first and register the WorkflowDef and its TaskDefs together (all or
nothing); ``stop`` and ``signal`` set a workflow variable under the workflow's lock
(``executor.workflow_variables_update``), ``respond`` completes the pending HUMAN task as
a task update. Nothing here calls an LLM or a worker: the compiled workflow's LLM tasks
run on the engine's async system-task path, its tools in the SDK's workers.

Shapes are Conductor's (``org.conductoross.conductor.common.metadata.agent``):
``AgentStartResponse`` ``{executionId?, agentName, requiredWorkers}``,
``CompileResponse`` ``{workflowDef, requiredWorkers}``, ``AgentStatusResponse``
``{executionId, status, isComplete, isRunning, isWaiting, output, reasonForIncompletion,
pendingTool, startTime, endTime}``, ``AgentRun`` ``{executionId, agentName, status,
input, output, tasks: [{taskType, referenceTaskName, status, subWorkflowId,
outputData}], tokenUsage}``.
"""
from __future__ import annotations

import hashlib
import json

from django.db import transaction

from apps.agents import plans
from apps.agents.compiler import Compiled, compile_agent
from apps.core.errors import Conflict, IllegalState, InvalidInput, NotFound
from apps.core.clock import now_ms
from apps.engine import executor, retention, search, selectors
from apps.engine.representation import task_json
from apps.engine.status import TASK_STATUSES, TERMINAL_TASK, TERMINAL_WORKFLOW
from apps.metadata import services as metadata
from apps.metadata.secrets import references

WAITING_TYPES = ("HUMAN", "PULL_WORKFLOW_MESSAGES")


def _config_of(request: dict) -> dict:
    if not isinstance(request, dict):
        raise InvalidInput("The request body must be an AgentStartRequest object")
    if request.get("framework") or request.get("rawConfig") is not None:
        raise InvalidInput(f"framework {request.get('framework')!r}: only native agent configurations "
                           "(agentConfig) are supported by this server")
    config = request.get("agentConfig")
    if config is None:
        raise InvalidInput("agentConfig is required")
    return config


def compile_request(request: dict) -> dict:
    """``POST /agent/compile``: the CompileResponse of ``request.agentConfig``; nothing is
    stored. Errors: InvalidInput naming the field."""
    compiled = compile_agent(_config_of(request))
    return {"workflowDef": compiled.workflow_def, "requiredWorkers": compiled.required_workers}


def inspect_plan(request: dict) -> dict:
    """``POST /agent/inspect-plan`` ``{agentConfig, plan}``: what a run of the
    ``plan_execute`` harness would compile ``plan`` to, run nothing and store nothing:
    ``{workflowDef, error, warnings, stats}`` (``apps.agents.plans.compile_plan``; a plan
    that does not compile is an ``error`` in a 200, as Conductor's). Errors: InvalidInput
    naming the field (no config, no plan, a config that is not a valid plan_execute
    harness)."""
    config = _config_of(request)
    if config.get("strategy") != "plan_execute":
        raise InvalidInput(f"inspectPlan: agentConfig.strategy must be 'plan_execute', got '{config.get('strategy')}'",
                           validation_errors=[{"path": "agentConfig.strategy", "message": "must be plan_execute",
                                               "invalidValue": str(config.get("strategy"))}])
    if request.get("plan") is None:
        raise InvalidInput("inspectPlan: plan is required",
                           validation_errors=[{"path": "plan", "message": "plan is required"}])
    compile_agent(config)  # the harness itself must compile (400 naming the field)
    return plans.compile_plan(config, request["plan"])


def _register(compiled: Compiled) -> None:
    """The WorkflowDef (an upsert of version 1, as Conductor's deploy) and the TaskDefs of
    its workers that do not exist yet (an existing TaskDef is left as its owner wrote it),
    in one transaction: a failure leaves nothing registered. Errors: Conflict when a
    workflow of that name exists that is not a compiled agent (never replaced)."""
    name = compiled.workflow_def["name"]
    with transaction.atomic():
        existing = metadata.workflow_def_row(name=name)
        if existing is not None and not (existing.definition.get("metadata") or {}).get("agentDef"):
            raise Conflict(f"A workflow named {name} exists and is not an agent: choose another agent name")
        known = metadata.task_defs_by_name({d["name"] for d in compiled.task_defs})
        missing = [d for d in compiled.task_defs if d["name"] not in known]
        if missing:
            metadata.task_defs_register(task_defs=missing)
        metadata.workflow_defs_update(workflow_defs=[compiled.workflow_def])


def deploy(request: dict) -> dict:
    """``POST /agent/deploy``: compile and register; AgentStartResponse without an
    execution. Errors: InvalidInput naming the field (nothing registered)."""
    compiled = compile_agent(_config_of(request))
    _register(compiled)
    return {"agentName": compiled.workflow_def["name"], "requiredWorkers": compiled.required_workers}


def _start_input(request: dict) -> dict:
    prompt = request.get("prompt")
    if prompt is None or (isinstance(prompt, str) and not prompt.strip()):
        raise InvalidInput("prompt is required")
    context = request.get("context")
    if context is not None and not isinstance(context, dict):
        raise InvalidInput("context must be a JSON object")
    static_plan = request.get("static_plan")  # the SDK's runtime.run(harness, plan=...): a plan_execute's plan
    return {"prompt": prompt, "media": request.get("media") or [], "session_id": request.get("sessionId") or "",
            "context": context or {}, **({"static_plan": static_plan} if static_plan is not None else {})}


def start(request: dict, *, may_use_secrets: bool) -> dict:
    """``POST /agent/start``: an inline ``agentConfig`` is compiled, registered and started;
    ``name`` (+ ``version``) starts a deployed agent. ``may_use_secrets``: whether the
    caller may start a definition naming ``${workflow.secrets.X}`` (admin only, as an
    inline workflowDef). Returns ``{executionId, agentName, requiredWorkers}``.
    Errors: InvalidInput (field named), NotFound (no such deployed agent)."""
    wf_input = _start_input(request)
    timeout = request.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 0):
        raise InvalidInput("timeoutSeconds must be a non-negative integer")
    if request.get("agentConfig") is None and request.get("name"):
        definition = _deployed(str(request["name"]), request.get("version"))
        compiled = compile_agent(definition["metadata"]["agentDef"])
    else:
        compiled = compile_agent(_config_of(request))
        if references(compiled.workflow_def) and not may_use_secrets:
            raise InvalidInput("agentConfig names ${workflow.secrets...}: only an admin may start it")
        _register(compiled)
        definition = compiled.workflow_def
    if timeout:  # this run's own timeout: the definition inline
        return _started({**definition, "timeoutSeconds": timeout}, None, wf_input, request, compiled)
    return _started(None, (definition["name"], definition["version"]), wf_input, request, compiled)


def _started(workflow_def, name_version, wf_input: dict, request: dict, compiled: Compiled) -> dict:
    name, version = name_version or (workflow_def["name"], None)
    execution_id = executor.workflow_start(
        name=name, version=version, input=wf_input, workflow_def=workflow_def,
        correlation_id=request.get("sessionId") or None,
        idempotency_key=request.get("idempotencyKey") or None,
        idempotency_strategy="RETURN_EXISTING" if request.get("idempotencyKey") else None)
    return {"executionId": execution_id, "agentName": name, "requiredWorkers": compiled.required_workers}


def pending_task(wf):
    """The execution's IN_PROGRESS HUMAN (or PULL_WORKFLOW_MESSAGES) task, or None."""
    for t in sorted(wf.tasks, key=lambda t: t.seq):
        if t.task_type in WAITING_TYPES and t.status == "IN_PROGRESS":
            return t
    return None


def pending_tool(task) -> dict:
    """Conductor's ``pendingTool`` of a waiting task: ``{taskRefName, tool_name,
    parameters}``, plus the task's ``response_schema`` / ``response_ui_schema`` when it
    has them (a manual team's agent pick), as Conductor's ``getStatus``."""
    data = task.input_data or {}
    params = {k: v for k, v in data.items() if k not in ("method", "_createdBy")}
    return {"taskRefName": task.reference_task_name, "tool_name": data.get("tool_name") or data.get("method")
            or task.task_def_name, "parameters": data.get("parameters") or params,
            **{k: data[k] for k in ("response_schema", "response_ui_schema") if data.get(k) is not None}}


def status(execution_id: str) -> dict:
    """``GET /agent/{id}/status``: AgentStatusResponse. Errors: NotFound."""
    wf = selectors.workflow_get(workflow_id=execution_id, include_tasks=True)
    complete = wf.terminal
    waiting = pending_task(wf)
    return {"executionId": execution_id, "status": wf.status, "isComplete": complete,
            "isRunning": wf.status == "RUNNING", "isWaiting": waiting is not None,
            "output": wf.output if complete else None, "reasonForIncompletion": wf.reason_for_incompletion,
            "pendingTool": pending_tool(waiting) if waiting else None, "startTime": wf.create_time,
            "endTime": wf.end_time or None}


def token_usage(wf) -> dict | None:
    """Sum of the LLM tasks' ``promptTokens``/``completionTokens``/``tokenUsed`` of one
    execution (None when it ran none)."""
    totals, seen = {"promptTokens": 0, "completionTokens": 0, "totalTokens": 0}, False
    for t in wf.tasks:
        if t.task_type == "LLM_CHAT_COMPLETE" and isinstance(t.output_data, dict) and t.output_data:
            seen = True
            for key, src in (("promptTokens", "promptTokens"), ("completionTokens", "completionTokens"),
                             ("totalTokens", "tokenUsed")):
                value = t.output_data.get(src)
                totals[key] += value if isinstance(value, int) and not isinstance(value, bool) else 0
    return totals if seen else None


def execution(execution_id: str) -> dict:
    """``GET /agent/execution/{id}``: AgentRun with its task list (the SDK sums tokens over
    it, following ``subWorkflowId`` into sub-agents). Errors: NotFound."""
    wf = selectors.workflow_get(workflow_id=execution_id, include_tasks=True)
    # a worker task's taskType is its name, as in Conductor's Task (SimpleTaskMapper)
    tasks = [{"taskType": t.task_def_name if t.task_type == "SIMPLE" else t.task_type, "referenceTaskName": t.reference_task_name, "status": t.status,
              "subWorkflowId": t.sub_workflow_id, "outputData": t.output_data or {}}
             for t in sorted(wf.tasks, key=lambda t: t.seq)]
    return {"executionId": execution_id, "agentName": wf.workflow_name, "version": wf.workflow_version,
            "status": wf.status, "input": wf.input, "output": wf.output,
            "reasonForIncompletion": wf.reason_for_incompletion, "startTime": wf.create_time,
            "endTime": wf.end_time or None, "tasks": tasks, "tokenUsage": token_usage(wf)}


def respond(execution_id: str, output: dict) -> None:
    """``POST /agent/{id}/respond``: complete the pending HUMAN task with ``output`` merged
    over its output. Errors: NotFound; IllegalState (409) ``No pending HUMAN task found in
    execution %s``; InvalidInput for a body that is not an object."""
    if not isinstance(output, dict):
        raise InvalidInput("The response must be a JSON object")
    wf = selectors.workflow_get(workflow_id=execution_id, include_tasks=True)
    task = next((t for t in sorted(wf.tasks, key=lambda t: t.seq)
                 if t.task_type == "HUMAN" and t.status == "IN_PROGRESS"), None)
    if task is None or wf.terminal:
        raise IllegalState(f"No pending HUMAN task found in execution {execution_id}")
    executor.task_update(task_result={"workflowInstanceId": execution_id, "taskId": task.task_id,
                                      "status": "COMPLETED", "workerId": "agent-respond",
                                      "outputData": {**(task.output_data or {}), **output}})


def stop(execution_id: str) -> None:
    """``POST /agent/{id}/stop``: set ``_stop_requested``; the agent loop ends after its
    current turn and the execution COMPLETES with the last answer. Errors: NotFound."""
    executor.workflow_variables_update(workflow_id=execution_id, variables={"_stop_requested": True})


def signal(execution_id: str, message) -> None:
    """``POST /agent/{id}/signal``: set ``_signal_injection`` (read by the next turn's
    context as ``[SIGNALS]...[/SIGNALS]``; "" clears it). Errors: NotFound, InvalidInput."""
    if message is not None and not isinstance(message, str):
        raise InvalidInput("message must be a string")
    executor.workflow_variables_update(workflow_id=execution_id, variables={"_signal_injection": message or ""})


def _deployed(name: str, version) -> dict:
    """The WorkflowDef of a deployed agent (its ``metadata.agentDef`` set); version None:
    the latest. Errors: NotFound ``No agent found by name: %s`` (also for a workflow that
    is not an agent)."""
    try:
        definition = metadata.workflow_def_get(name=name, version=version)
    except NotFound:
        raise NotFound(f"No agent found by name: {name}") from None
    if not (definition.get("metadata") or {}).get("agentDef"):
        raise NotFound(f"No agent found by name: {name}")
    return definition


def agent_def(name: str, version: int | None) -> dict:
    """``GET /agent/{name}``: the deployed agent's configuration and compiled definition.
    Errors: NotFound ``No agent found by name: %s``."""
    definition = _deployed(name, version)
    return {"name": definition["name"], "version": definition["version"],
            "agentDef": definition["metadata"]["agentDef"], "workflowDef": definition}


def executions(*, start: int = 0, size: int = 20, sort: str = "startTime:DESC", free_text: str | None = None,
               status: str | None = None, agent_name: str | None = None, session_id: str | None = None,
               classifier: str | None = None) -> dict:
    """``GET /agent/executions``: ``{totalHits, results: [AgentExecutionSummary]}``, the
    executions of compiled agents (``classifier`` ``agent`` unless given), newest first;
    ``agentName``, ``status`` and ``sessionId`` (searched as free text, as Conductor does)
    narrow it. Errors: InvalidInput for bad paging or sort."""
    filters = {}
    if agent_name:
        filters["workflowType"] = [agent_name]
    if status:
        filters["status"] = status
    total, rows = search.workflow_search(free_text=session_id or free_text or "*", sort=sort, start=start,
                                         size=size, classifier=classifier or "agent", **filters)
    return {"totalHits": total, "results": [
        {"executionId": w.workflow_id, "agentName": w.workflow_name, "version": w.workflow_version,
         "status": w.status, "startTime": w.create_time, "endTime": w.end_time or None,
         "updateTime": w.update_time, "executionTime": (w.end_time - w.create_time) if w.end_time else 0,
         "input": w.input, "output": w.output, "createdBy": w.created_by} for w in rows]}


def update_task(execution_id: str, ref: str, status: str, output: dict | None) -> None:
    """``POST /agent/tasks/{executionId}/{refTaskName}/{status}``: update the pending task
    of that reference (its latest loop iteration), as ``POST /tasks/{wf}/{ref}/{status}``.
    Errors: NotFound (execution, or no pending task of that reference), InvalidInput."""
    if output is not None and not isinstance(output, dict):
        raise InvalidInput("The body must be a JSON object")
    if status not in ("IN_PROGRESS", "COMPLETED", "FAILED", "FAILED_WITH_TERMINAL_ERROR"):
        raise InvalidInput(f"Invalid task status: {status}")
    if executor.task_update_by_ref(workflow_id=execution_id, task_ref_name=ref, status=status,
                                   output=output or {}, worker_id="agent-ui") is None:
        raise NotFound(f"No pending task {ref} found in execution {execution_id}")


# --- the read-only and lifecycle operations (Conductor's AgentService, issue #28) ---------

_SUMMARY_DEF_FIELDS = ("schemaVersion", "restartable", "workflowStatusListenerEnabled", "ownerEmail",
                       "inputParameters", "outputParameters", "timeoutPolicy", "timeoutSeconds", "failureWorkflow")


def agents_list() -> list[dict]:
    """``GET /agent/list``: Conductor's ``AgentSummary`` of the latest version of every
    deployed agent (a WorkflowDef carrying ``metadata.agentDef``), ordered by name:
    ``{name, version, type (metadata.agent_sdk), tags (metadata.agent_capabilities),
    createTime, updateTime (epoch ms), description, checksum (SHA-256 hex of the
    definition), schemaVersion, restartable, ...}``; absent fields are left out, as
    Conductor's ``NON_NULL``. Reads the metadata store only."""
    out = []
    for d in sorted(metadata.workflow_def_latest_list(), key=lambda d: d["name"]):
        meta = d.get("metadata") or {}
        if not meta.get("agentDef"):
            continue
        caps = meta.get("agent_capabilities")
        summary = {"name": d["name"], "version": d.get("version", 1), "type": meta.get("agent_sdk"),
                   "tags": caps if isinstance(caps, list) else None, "createTime": d.get("createTime"),
                   "updateTime": d.get("updateTime"), "description": d.get("description"),
                   "checksum": hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest(),
                   **{k: d.get(k) for k in _SUMMARY_DEF_FIELDS}}
        out.append({k: v for k, v in summary.items() if v is not None})
    return out


def agent_definition(name: str, version: int | None) -> dict:
    """``GET /agent/definitions/{name}?version``: the deployed agent's compiled WorkflowDef
    (latest version when None). Errors: NotFound ``No agent found by name: %s`` (also for a
    workflow that is not an agent)."""
    return _deployed(name, version)


def agent_delete(name: str, version: int | None) -> None:
    """``DELETE /agent/{name}?version``: remove one version of a deployed agent's WorkflowDef
    (the latest when None), as Conductor's ``deleteAgent``; its TaskDefs and executions stay.
    Errors: NotFound ``No agent found by name: %s`` (never deletes a workflow that is not an
    agent)."""
    with transaction.atomic():
        definition = _deployed(name, version)
        metadata.workflow_def_delete(name=name, version=definition["version"])


def execution_detail(execution_id: str) -> dict:
    """``GET /agent/executions/{id}``: Conductor's ``AgentExecutionDetail`` ``{executionId,
    agentName, version, status, input, output, currentTask?: {taskRefName, taskType, status,
    inputData, outputData}}``; ``currentTask`` is the last task (by seq) not yet terminal.
    Errors: NotFound ``No such workflow found by id: %s``."""
    wf = selectors.workflow_get(workflow_id=execution_id, include_tasks=True)
    current = next((t for t in sorted(wf.tasks, key=lambda t: t.seq, reverse=True)
                    if t.status not in TERMINAL_TASK), None)
    out = {"executionId": execution_id, "agentName": wf.workflow_name, "version": wf.workflow_version,
           "status": wf.status, "input": wf.input, "output": wf.output}
    if current is not None:
        out["currentTask"] = {"taskRefName": current.reference_task_name,
                              "taskType": current.task_def_name if current.task_type == "SIMPLE" else current.task_type,
                              "status": current.status, "inputData": current.input_data or {},
                              "outputData": current.output_data or {}}
    return out


def execution_tasks(execution_id: str, *, status: str | None, count: int, start: int) -> dict:
    """``GET /agent/executions/{id}/tasks?status&count&start``: Conductor's
    ``TaskListResponse`` ``{results: [Task], totalHits, summary: {STATUS: n}}``: the tasks
    in seq order (only those of ``status`` when given), ``count`` of them from ``start``;
    ``summary`` counts every task of the execution by status. Errors: NotFound;
    InvalidInput naming ``status``, ``count`` or ``start``."""
    if status is not None and status not in TASK_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(TASK_STATUSES)}: {status}",
                           validation_errors=[{"path": "status", "message": "unknown task status",
                                               "invalidValue": status}])
    for field, value in (("count", count), ("start", start)):
        if value < 0:
            raise InvalidInput(f"{field} must not be negative: {value}",
                               validation_errors=[{"path": field, "message": "must not be negative",
                                                   "invalidValue": value}])
    wf = selectors.workflow_get(workflow_id=execution_id, include_tasks=True)
    tasks = sorted(wf.tasks, key=lambda t: t.seq)
    summary: dict[str, int] = {}
    for t in tasks:
        summary[t.status] = summary.get(t.status, 0) + 1
    chosen = [t for t in tasks if status is None or t.status == status]
    return {"results": [task_json(t, wf) for t in chosen[start:start + count]], "totalHits": len(chosen),
            "summary": summary}


def cancel(execution_id: str, reason: str | None) -> None:
    """``DELETE /agent/{id}/cancel?reason`` (and ``DELETE /agent/executions/{id}``): terminate
    the execution, reason ``Cancelled by user`` when none is given, as Conductor's
    ``cancelAgent``. Errors: NotFound; Conflict for a COMPLETED execution."""
    executor.workflow_terminate(workflow_id=execution_id, reason=reason or "Cancelled by user")


DAY_MS = 86_400_000


def prune(older_than_days: int) -> int:
    """``POST /agent/executions/prune?olderThanDays=30``: remove the agent executions
    (classifier ``agent``, sub-agents' included) that ended (COMPLETED, FAILED, TERMINATED,
    TIMED_OUT) ``older_than_days`` days ago or earlier, with their tasks, logs and history,
    100 a transaction; returns how many were removed (Conductor's ``{"deleted": n}``).
    Running and paused executions are never touched. Errors: InvalidInput naming
    ``olderThanDays`` when negative."""
    if older_than_days < 0:
        raise InvalidInput(f"olderThanDays must not be negative: {older_than_days}",
                           validation_errors=[{"path": "olderThanDays", "message": "must not be negative",
                                               "invalidValue": older_than_days}])
    cutoff = now_ms() - older_than_days * DAY_MS
    ids = list(search.workflow_queryset(classifier="agent")
               .filter(status__in=TERMINAL_WORKFLOW, end_time__gt=0, end_time__lte=cutoff)
               .values_list("workflow_id", flat=True))
    deleted = 0
    for i in range(0, len(ids), 100):
        with transaction.atomic():
            deleted += retention.delete_executions(ids[i:i + 100])
    return deleted
