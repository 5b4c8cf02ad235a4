"""Pure validation and normalisation of WorkflowDef and TaskDef JSON (camelCase dicts).

No ORM here. ``validate_*`` return a list of Conductor ``validationErrors`` entries
(``{"path": ..., "message": ...}``); an empty list means valid. Messages are
Conductor's bean-validation templates (``WorkflowDef``/``TaskDef``/``WorkflowTask``
constraints and ``WorkflowTaskTypeConstraint``), so clients see the same text.
"""
from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from apps.core.clock import parse_duration_seconds, parse_until_ms
from apps.core.fields import length_errors, name_errors
from apps.engine.task_types.event import external_event_error

TASK_TIMEOUT_POLICIES = ("RETRY", "TIME_OUT_WF", "ALERT_ONLY")
WORKFLOW_TIMEOUT_POLICIES = ("TIME_OUT_WF", "ALERT_ONLY")
RETRY_LOGICS = ("FIXED", "EXPONENTIAL_BACKOFF", "LINEAR_BACKOFF")

# Operators and system tasks known to the engine; any other type is a worker task whose
# queue is named after the type (Conductor's USER_DEFINED).
SYSTEM_TASK_TYPES = frozenset(
    {
        "DECISION", "SWITCH", "FORK_JOIN", "FORK", "JOIN", "FORK_JOIN_DYNAMIC", "EXCLUSIVE_JOIN",
        "DO_WHILE", "SUB_WORKFLOW", "START_WORKFLOW", "DYNAMIC", "SET_VARIABLE", "TERMINATE",
        "INLINE", "LAMBDA", "JSON_JQ_TRANSFORM", "HTTP", "WAIT", "HUMAN", "NOOP", "EVENT",
        "KAFKA_PUBLISH", "PULL_WORKFLOW_MESSAGES",
        # A2A tasks (apps.a2a), run by the cluster like HTTP
        "AGENT", "GET_AGENT_CARD", "CANCEL_AGENT",
        # AI and agent tasks (apps.ai), run by the cluster like HTTP
        "LLM_CHAT_COMPLETE", "LLM_TEXT_COMPLETE", "LLM_GENERATE_EMBEDDINGS", "LLM_INDEX_TEXT",
        "LLM_STORE_EMBEDDINGS", "LLM_SEARCH_INDEX", "LLM_SEARCH_EMBEDDINGS", "LLM_GET_EMBEDDINGS",
        "LIST_MCP_TOOLS", "CALL_MCP_TOOL",
    }
)

# AI tasks Conductor schedules through its AIModelTaskMapper, which gives a TaskDef with
# retryCount < 1 (an explicit 0 included) three LINEAR_BACKOFF retries 2 s apart.
AI_RETRY_TASK_TYPES = frozenset({"LLM_CHAT_COMPLETE", "LLM_TEXT_COMPLETE", "LLM_GENERATE_EMBEDDINGS",
                                 "LLM_INDEX_TEXT", "LLM_STORE_EMBEDDINGS", "LLM_SEARCH_INDEX",
                                 "LLM_GET_EMBEDDINGS", "LIST_MCP_TOOLS", "CALL_MCP_TOOL"})

TASK_DEF_DEFAULTS: dict[str, Any] = {
    "retryCount": 3,
    "timeoutSeconds": 0,
    "inputKeys": [],
    "outputKeys": [],
    "timeoutPolicy": "TIME_OUT_WF",
    "retryLogic": "FIXED",
    "retryDelaySeconds": 60,
    "responseTimeoutSeconds": 3600,
    "inputTemplate": {},
    "rateLimitPerFrequency": 0,
    "rateLimitFrequencyInSeconds": 1,
    "backoffScaleFactor": 1,
    "maxRetryDelaySeconds": 0,
    "backoffJitterMs": 0,
    "totalTimeoutSeconds": 0,
    "enforceSchema": False,
}

WORKFLOW_DEF_DEFAULTS: dict[str, Any] = {
    "version": 1,
    "inputParameters": [],
    "outputParameters": {},
    "schemaVersion": 2,
    "restartable": True,
    "workflowStatusListenerEnabled": False,
    "timeoutPolicy": "ALERT_ONLY",
    "timeoutSeconds": 0,
    "variables": {},
    "inputTemplate": {},
    "enforceSchema": True,
    "metadata": {},
    "maskedFields": [],
}

# Conductor's int fields are Java ints: larger values are refused (they would not fit the
# database columns either, and seconds become milliseconds in the engine).
MAX_INT = 2**31 - 1

# WorkflowTask fields that are strings in Conductor's model (WorkflowTask.java).
_TASK_STRING_FIELDS = ("name", "taskReferenceName", "type", "description", "evaluatorType", "expression",
                       "caseValueParam", "caseExpression", "scriptExpression", "loopCondition",
                       "dynamicTaskNameParam", "dynamicForkTasksParam", "dynamicForkTasksInputParamName",
                       "dynamicForkJoinTasksParam", "sink")


# WorkflowTask fields each task execution stores in a column (apps.engine's TaskExecution)
_TASK_COLUMNS = (("name", "engine.TaskExecution.task_def_name"),
                 ("taskReferenceName", "engine.TaskExecution.reference_task_name"),
                 ("type", "engine.TaskExecution.task_type"))


def _err(path: str, message: str, invalid: Any = None) -> dict:
    entry = {"path": path, "message": message}
    if isinstance(invalid, (str, int, float, bool)):
        entry["invalidValue"] = invalid
    return entry


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def structure_errors(tasks: Any, path: str) -> list[dict]:
    """JSON-type errors of a WorkflowTask list and everything nested in it: each task an
    object, string fields strings, ``decisionCases`` an object of task lists,
    ``defaultCase``/``loopOver`` task lists, ``forkTasks`` a list of task lists,
    ``inputParameters``/``taskDefinition``/``subWorkflowParam`` objects. Conductor answers
    these with 400 at deserialization; checked before anything else reads the tasks."""
    if not isinstance(tasks, list):
        return [_err(path, f"must be a list of WorkflowTask objects, not {_type_name(tasks)}")]
    errors: list[dict] = []
    for i, task in enumerate(tasks):
        tpath = f"{path}[{i}]"
        if not isinstance(task, dict):
            errors.append(_err(tpath, f"WorkflowTask must be a JSON object, not {_type_name(task)}", task))
            continue
        for key in _TASK_STRING_FIELDS:
            value = task.get(key)
            if value is not None and not isinstance(value, str):
                errors.append(_err(f"{tpath}.{key}", f"{key} must be a string, not {_type_name(value)}", value))
        for key in ("inputParameters", "taskDefinition", "subWorkflowParam"):
            value = task.get(key)
            if value is not None and not isinstance(value, dict):
                errors.append(_err(f"{tpath}.{key}", f"{key} must be a JSON object, not {_type_name(value)}", value))
        cases = task.get("decisionCases")
        if cases is not None:
            if not isinstance(cases, dict):
                errors.append(_err(f"{tpath}.decisionCases",
                                   f"decisionCases must be a JSON object of task lists, not {_type_name(cases)}"))
            else:
                for case, branch in cases.items():
                    errors += structure_errors(branch, f"{tpath}.decisionCases.{case}")
        for key in ("defaultCase", "loopOver"):
            if task.get(key) is not None:
                errors += structure_errors(task[key], f"{tpath}.{key}")
        forks = task.get("forkTasks")
        if forks is not None:
            if not isinstance(forks, list):
                errors.append(_err(f"{tpath}.forkTasks", f"forkTasks must be a list of task lists, not {_type_name(forks)}"))
            else:
                for j, branch in enumerate(forks):
                    errors += structure_errors(branch, f"{tpath}.forkTasks[{j}]")
        join_on = task.get("joinOn")
        if join_on is not None and not (isinstance(join_on, list) and all(isinstance(r, str) for r in join_on)):
            errors.append(_err(f"{tpath}.joinOn", "joinOn must be a list of taskReferenceNames"))
        sub = task.get("subWorkflowParam")
        if isinstance(sub, dict):
            if sub.get("name") is not None and not isinstance(sub["name"], str):
                errors.append(_err(f"{tpath}.subWorkflowParam.name", "subWorkflowParam name must be a string"))
            version = sub.get("version")
            if version is not None and (_int_or_none(version) is None or not 0 <= int(version) <= MAX_INT):
                errors.append(_err(f"{tpath}.subWorkflowParam.version",
                                   f"subWorkflowParam version must be an integer between 0 and {MAX_INT}", version))
            for key in ("taskToDomain",):
                if sub.get(key) is not None and not isinstance(sub[key], dict):
                    errors.append(_err(f"{tpath}.subWorkflowParam.{key}", f"{key} must be a JSON object"))
    return errors


def _int_or_none(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# TaskDef fields that are Java ints in Conductor's TaskDef (seconds, counts, milliseconds).
TASK_DEF_INT_FIELDS = ("retryCount", "timeoutSeconds", "retryDelaySeconds", "responseTimeoutSeconds",
                       "pollTimeoutSeconds", "maxRetryDelaySeconds", "backoffJitterMs", "totalTimeoutSeconds",
                       "concurrentExecLimit", "rateLimitPerFrequency", "rateLimitFrequencyInSeconds",
                       "backoffScaleFactor")


def normalize_task_def(task_def: dict) -> dict:
    """Return a copy of a (validated) TaskDef dict with Conductor's defaults filled in for
    absent keys and its integer fields stored as integers: ``"3"`` becomes 3 and ``2.7``
    becomes 2, as Jackson coerces them into Conductor's int fields."""
    out = copy.deepcopy(task_def)
    for key, default in TASK_DEF_DEFAULTS.items():
        if out.get(key) is None:
            out[key] = copy.deepcopy(default)
    for key in TASK_DEF_INT_FIELDS:
        value = _int_or_none(out.get(key))
        if value is not None:
            out[key] = value
    return out


def adhoc_task_def(workflow_task: dict) -> dict:
    """The TaskDef Conductor makes up for a WorkflowTask with none registered
    (``new TaskDef(name)``): SIMPLE tasks get the defaults (3 retries, 60 s FIXED,
    responseTimeout 3600 s); system tasks 0 retries and no response timeout."""
    task_def = copy.deepcopy(TASK_DEF_DEFAULTS)
    task_def["name"] = workflow_task.get("name")
    if (workflow_task.get("type") or "SIMPLE") in SYSTEM_TASK_TYPES:
        task_def["retryCount"] = 0
        task_def["responseTimeoutSeconds"] = 0
    return ai_task_def(workflow_task, task_def)


def ai_task_def(workflow_task: dict, task_def: dict) -> dict:
    """Conductor's AIModelTaskMapper default for AI tasks: a TaskDef whose retryCount is
    below 1 gets ``retryCount: 3, retryDelaySeconds: 2, retryLogic: LINEAR_BACKOFF``
    (a copy; other types are returned unchanged)."""
    if workflow_task.get("type") in AI_RETRY_TASK_TYPES and int(task_def.get("retryCount") or 0) < 1:
        return {**task_def, "retryCount": 3, "retryDelaySeconds": 2, "retryLogic": "LINEAR_BACKOFF"}
    return task_def


def with_task_definitions(definition: dict, registered: dict[str, dict]) -> dict:
    """Copy of a WorkflowDef whose every WorkflowTask has a ``taskDefinition``: its inline
    one (defaults filled in), the registered TaskDef of its name (``registered``), or
    ``adhoc_task_def``. Pure."""
    definition = copy.deepcopy(definition)
    for task in iter_workflow_tasks(definition.get("tasks") or []):
        inline = task.get("taskDefinition")
        if inline:
            merged = copy.deepcopy(TASK_DEF_DEFAULTS)
            merged.update({k: v for k, v in inline.items() if v is not None})
            merged.setdefault("name", task.get("name"))
            task["taskDefinition"] = ai_task_def(task, merged)
        elif task.get("name") in registered:
            task["taskDefinition"] = ai_task_def(task, registered[task["name"]])
        else:
            task["taskDefinition"] = adhoc_task_def(task)
    return definition


def validate_task_def(task_def: Any, path: str = "taskDef") -> list[dict]:
    """Validate one TaskDef dict. Source: Conductor ``TaskDef`` bean constraints and
    ``TaskTimeoutConstraint``. ``timeoutSeconds`` 0 means no timeout and
    ``responseTimeoutSeconds`` 0 disables the response timeout (both accepted)."""
    if not isinstance(task_def, dict):
        return [_err(path, "TaskDef must be a JSON object")]
    errors: list[dict] = []
    name = task_def.get("name")
    if not isinstance(name, str) or not name.strip():
        errors.append(_err(f"{path}.name", "TaskDef name cannot be null or empty"))
    errors += name_errors(name, "metadata.TaskDef.name", f"{path}.name")
    name = name if isinstance(name, str) else ""
    for key in TASK_DEF_INT_FIELDS:
        value = task_def.get(key)
        if value is None:
            continue
        if _int_or_none(value) is None:
            errors.append(_err(f"{path}.{key}", f"TaskDef {key} must be an integer", value))
        elif int(value) < 0:
            errors.append(_err(f"{path}.{key}", f"TaskDef {key}: {value} must be >= 0", value))
        elif int(value) > MAX_INT:
            errors.append(_err(f"{path}.{key}", f"TaskDef {key}: {value} must be <= {MAX_INT}", value))
    scale = task_def.get("backoffScaleFactor")
    if scale is not None and (_int_or_none(scale) is None or not 1 <= int(scale) <= MAX_INT):
        errors.append(_err(f"{path}.backoffScaleFactor",
                           f"TaskDef backoffScaleFactor: {scale} should be minimum 1", scale))
    for key in ("inputKeys", "outputKeys"):
        keys = task_def.get(key)
        if keys is not None and not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
            errors.append(_err(f"{path}.{key}", f"TaskDef {key} must be a list of strings"))
    if task_def.get("inputTemplate") is not None and not isinstance(task_def["inputTemplate"], dict):
        errors.append(_err(f"{path}.inputTemplate", "TaskDef inputTemplate must be a JSON object"))
    policy = task_def.get("timeoutPolicy")
    if policy is not None and policy not in TASK_TIMEOUT_POLICIES:
        errors.append(_err(f"{path}.timeoutPolicy", f"TaskDef timeoutPolicy: {policy} is not one of {list(TASK_TIMEOUT_POLICIES)}", policy))
    logic = task_def.get("retryLogic")
    if logic is not None and logic not in RETRY_LOGICS:
        errors.append(_err(f"{path}.retryLogic", f"TaskDef retryLogic: {logic} is not one of {list(RETRY_LOGICS)}", logic))
    timeout = _int_or_none(task_def.get("timeoutSeconds")) or 0
    response_timeout = _int_or_none(task_def.get("responseTimeoutSeconds"))
    if response_timeout is None and "responseTimeoutSeconds" not in task_def:
        response_timeout = TASK_DEF_DEFAULTS["responseTimeoutSeconds"]
    total = _int_or_none(task_def.get("totalTimeoutSeconds")) or 0
    if timeout > 0 and response_timeout and response_timeout > timeout:
        errors.append(_err(f"{path}.responseTimeoutSeconds",
                           f"TaskDef: {name} responseTimeoutSeconds: {response_timeout} must be less than timeoutSeconds: {timeout}"))
    if timeout > 0 and total > 0 and timeout > total:
        errors.append(_err(f"{path}.timeoutSeconds",
                           f"TaskDef: {name} timeoutSeconds: {timeout} must be less than or equal to totalTimeoutSeconds: {total}"))
    return errors


def normalize_workflow_def(workflow_def: dict) -> dict:
    """Return a copy of a WorkflowDef dict with Conductor's defaults for absent keys.

    ``failureWorkflow: ""`` (what the SDK sends) is kept; the engine reads it as "none".
    Each WorkflowTask gets ``type`` SIMPLE and empty ``inputParameters`` when absent.
    """
    out = copy.deepcopy(workflow_def)
    for key, default in WORKFLOW_DEF_DEFAULTS.items():
        if out.get(key) is None:
            out[key] = copy.deepcopy(default)
    for task in iter_workflow_tasks(out.get("tasks") or []):
        if not task.get("type"):
            task["type"] = "SIMPLE"
        if task.get("inputParameters") is None:
            task["inputParameters"] = {}
    return out


def iter_workflow_tasks(tasks: list) -> Iterator[dict]:
    """Yield every WorkflowTask of a task list, depth first, nested ones included
    (SWITCH/DECISION cases, fork branches, DO_WHILE ``loopOver``); parts of the wrong JSON
    type are passed over (``structure_errors`` reports them)."""
    if not isinstance(tasks, list):
        return
    for task in tasks:
        if not isinstance(task, dict):
            continue
        yield task
        cases = task.get("decisionCases")
        for branch in (cases.values() if isinstance(cases, dict) else ()):
            yield from iter_workflow_tasks(branch)
        yield from iter_workflow_tasks(task.get("defaultCase"))
        forks = task.get("forkTasks")
        for branch in (forks if isinstance(forks, list) else ()):
            yield from iter_workflow_tasks(branch)
        yield from iter_workflow_tasks(task.get("loopOver"))


def _required(task: dict, path: str, field: str, present: bool) -> list[dict]:
    if present:
        return []
    return [_err(path, f"{field} field is required for taskType: {task.get('type')} taskName: {task.get('name')}")]


def _validate_task_type(task: dict, path: str) -> list[dict]:
    """Per-type checks. Source: ``WorkflowTaskTypeConstraint``."""
    ttype = task.get("type") or "SIMPLE"
    params = task.get("inputParameters") or {}
    errors: list[dict] = []
    if ttype == "SWITCH":
        errors += _required(task, path, "evaluatorType", bool(task.get("evaluatorType")))
        errors += _required(task, path, "expression", bool(task.get("expression")))
        errors += _required(task, path, "decisionCases", isinstance(task.get("decisionCases"), dict) or bool(task.get("defaultCase")))
    elif ttype == "DECISION":
        errors += _required(task, path, "caseValueParam or caseExpression",
                            bool(task.get("caseValueParam") or task.get("caseExpression")))
        errors += _required(task, path, "decisionCases", isinstance(task.get("decisionCases"), dict))
    elif ttype == "DO_WHILE":
        errors += _required(task, path, "loopCondition", bool(task.get("loopCondition")) or bool(task.get("items") or params.get("items")))
        errors += _required(task, path, "loopOver", bool(task.get("loopOver")))
    elif ttype == "DYNAMIC":
        errors += _required(task, path, "dynamicTaskNameParam", bool(task.get("dynamicTaskNameParam")))
    elif ttype == "FORK_JOIN_DYNAMIC":
        if not params.get("forkTaskInputs") and not params.get("forkTaskName") and not task.get("dynamicForkJoinTasksParam"):
            errors += _required(task, path, "dynamicForkTasksParam", bool(task.get("dynamicForkTasksParam")))
            errors += _required(task, path, "dynamicForkTasksInputParamName", bool(task.get("dynamicForkTasksInputParamName")))
    elif ttype == "FORK_JOIN":
        if not task.get("forkTasks"):
            errors.append(_err(path, f"forkTasks should have atleast one task for taskType: FORK_JOIN taskName: {task.get('name')}"))
    elif ttype == "HTTP":
        errors += _required(task, path, "inputParameters.http_request or inputParameters.uri",
                            any(k in params for k in ("http_request", "uri", "method")))
    elif ttype == "EVENT":
        errors += _required(task, path, "sink", bool(task.get("sink") or params.get("sink")))
        sink = task.get("sink") or params.get("sink")
        problem = external_event_error(sink) if isinstance(sink, str) and "${" not in sink else None
        if problem:  # a literal broker sink (amqp:, nats:, kafka: ...) that cannot be used
            errors.append(_err(path, f"Invalid sink {sink}: {problem}, taskName: {task.get('name')}", sink))
    elif ttype == "SUB_WORKFLOW":
        errors += _required(task, path, "subWorkflowParam", isinstance(task.get("subWorkflowParam"), dict))
    elif ttype == "JSON_JQ_TRANSFORM":
        errors += _required(task, path, "inputParameters.queryExpression", "queryExpression" in params)
    elif ttype == "KAFKA_PUBLISH":
        errors += _required(task, path, "inputParameters.kafka_request", "kafka_request" in params)
    elif ttype == "TERMINATE":
        if task.get("optional"):
            errors.append(_err(path, f"terminate task cannot be optional, taskName: {task.get('name')}"))
        status = params.get("terminationStatus")
        if status not in ("COMPLETED", "FAILED", "TERMINATED"):
            errors.append(_err(path, "terminate task must have an terminationStatus parameter and must be set to "
                                     f"COMPLETED or FAILED, taskName: {task.get('name')}"))
    elif ttype == "WAIT":
        if params.get("duration") and (params.get("until") or params.get("wait_until")):
            errors.append(_err(path, "Both 'duration' and 'until' specified. Please provide only one input"))
        errors += _wait_constant_errors(params, path)
    return errors


def _wait_constant_errors(params: dict, path: str) -> list[dict]:
    """A WAIT's ``duration`` (``"1h 30m"``, ``"10s"``, ``"2 days"``) or ``until`` (or its
    alias ``wait_until``, which the WAIT task also reads; ``yyyy-MM-dd HH:mm[ z]``,
    ``yyyy-MM-dd``) given as a constant must parse, as it would
    fail the task at every run otherwise (Conductor's messages). Values with ``${...}``
    are known only at run time and are not checked."""
    errors = []
    for key, parse, message in (
            ("duration", parse_duration_seconds, "Unable to parse the duration {}"),
            ("until", parse_until_ms, "Invalid/Unsupported Wait Until format.  Provided: {}"),
            ("wait_until", parse_until_ms, "Invalid/Unsupported Wait Until format.  Provided: {}")):
        value = params.get(key)
        if value is None or value == "" or (isinstance(value, str) and "${" in value):
            continue
        if isinstance(value, (dict, list, bool)):
            errors.append(_err(f"{path}.inputParameters.{key}", f"{key} must be a string"))
            continue
        try:
            parse(value)
        except ValueError:
            errors.append(_err(f"{path}.inputParameters.{key}", message.format(value), str(value)))
    return errors


def validate_workflow_def(workflow_def: Any, path: str = "workflowDef") -> list[dict]:
    """Validate one WorkflowDef dict (the camelCase JSON a client sends).

    Checks: name, non-empty tasks, schemaVersion 2, timeout policy, every WorkflowTask's
    name/taskReferenceName, unique references across nesting levels, per-type fields,
    (References to unknown task refs are allowed: they resolve to null at run time,
    as conductor-oss does; see case 26.)
    Source: ``WorkflowDef``/``WorkflowTask`` constraints and ``WorkflowTaskValidConstraint``.
    """
    if not isinstance(workflow_def, dict):
        return [_err(path, "WorkflowDef must be a JSON object")]
    errors: list[dict] = []
    name = workflow_def.get("name")
    if not isinstance(name, str) or not name.strip():
        errors.append(_err(f"{path}.name", "WorkflowDef name cannot be null or empty"))
    errors += name_errors(name, "metadata.WorkflowDef.name", f"{path}.name")
    tasks = workflow_def.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        errors.append(_err(f"{path}.tasks", "WorkflowTask list cannot be empty"))
        tasks = []
    schema = workflow_def.get("schemaVersion")
    if schema is not None and schema != 2:
        errors.append(_err(f"{path}.schemaVersion", "workflowDef schemaVersion: 2 is only supported", schema))
    version = workflow_def.get("version")
    if version is not None and (_int_or_none(version) is None or not 0 <= int(version) <= MAX_INT):
        errors.append(_err(f"{path}.version", f"WorkflowDef version must be an integer between 0 and {MAX_INT}", version))
    policy = workflow_def.get("timeoutPolicy")
    if policy is not None and policy not in WORKFLOW_TIMEOUT_POLICIES:
        errors.append(_err(f"{path}.timeoutPolicy", f"WorkflowDef timeoutPolicy: {policy} is not one of {list(WORKFLOW_TIMEOUT_POLICIES)}", policy))
    timeout = workflow_def.get("timeoutSeconds")
    if timeout is not None and (_int_or_none(timeout) is None or not 0 <= int(timeout) <= MAX_INT):
        errors.append(_err(f"{path}.timeoutSeconds", "WorkflowDef timeoutSeconds must be an integer >= 0", timeout))
    if workflow_def.get("outputParameters") is not None and not isinstance(workflow_def.get("outputParameters"), dict):
        errors.append(_err(f"{path}.outputParameters", "outputParameters must be a JSON object"))
    for key in ("inputTemplate", "variables", "inputSchema", "outputSchema", "metadata"):
        if workflow_def.get(key) is not None and not isinstance(workflow_def[key], dict):
            errors.append(_err(f"{path}.{key}", f"{key} must be a JSON object"))
    for key in ("inputSchema", "outputSchema"):
        if isinstance(workflow_def.get(key), dict):
            errors += json_schema_errors(workflow_def[key].get("data"), f"{path}.{key}.data")
    for key in ("inputParameters", "maskedFields"):
        value = workflow_def.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            errors.append(_err(f"{path}.{key}", f"{key} must be a list of strings"))
    for key in ("failureWorkflow", "description", "ownerEmail"):
        if workflow_def.get(key) is not None and not isinstance(workflow_def[key], str):
            errors.append(_err(f"{path}.{key}", f"{key} must be a string"))
    shape = structure_errors(tasks, f"{path}.tasks")
    if shape:
        return errors + shape

    seen: set[str] = set()
    for index, task in enumerate(iter_workflow_tasks(tasks)):
        tpath = f"{path}.tasks[{index}]"
        if not task.get("name"):
            errors.append(_err(f"{tpath}.name", "WorkflowTask name cannot be empty or null"))
        # stored in the columns of every task execution: too long here would fail each start
        for key, column in _TASK_COLUMNS:
            errors += length_errors(task.get(key), column, f"{tpath}.{key}")
        ref = task.get("taskReferenceName")
        if not ref:
            errors.append(_err(f"{tpath}.taskReferenceName", "WorkflowTask taskReferenceName name cannot be empty or null"))
        elif ref in seen:
            errors.append(_err(f"{path}.tasks", f"taskReferenceName: {ref} should be unique across tasks for a given workflowDefinition: {name}"))
        else:
            seen.add(ref)
        if task.get("inputParameters") is not None and not isinstance(task.get("inputParameters"), dict):
            errors.append(_err(f"{tpath}.inputParameters", "inputParameters must be a JSON object"))
            continue
        errors += _validate_task_type(task, tpath)
        task_def = task.get("taskDefinition")
        if isinstance(task_def, dict):
            errors += [e for e in validate_task_def({"name": task.get("name"), **task_def}, f"{tpath}.taskDefinition")]

    return errors



def _remote_refs(schema) -> list[str]:
    """Every ``$ref`` in a JSON Schema that does not point inside the schema itself."""
    found, stack = [], [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                found.append(ref)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def json_schema_errors(schema, path: str) -> list[dict]:
    """Validation errors (``{path, message, invalidValue?}``) of the JSON Schema ``schema``
    (``inputSchema.data`` / ``outputSchema.data``; None = no schema): it must be an object
    that is a valid schema of its own draft (jsonschema's ``check_schema``), and its
    ``$ref`` may only point inside the schema (``#...``): the server never fetches a URL
    or reads a file named by a definition."""
    if schema is None:
        return []
    if not isinstance(schema, dict):
        return [_err(path, "A JSON Schema must be a JSON object")]
    import jsonschema

    remote = _remote_refs(schema)
    if remote:
        return [_err(path, "Only local $ref values (starting with '#') are allowed in a JSON Schema", remote[0])]
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return [_err(path, f"Invalid JSON Schema: {exc.message}")]
    return []
