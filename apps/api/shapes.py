"""JSON-type checks of the request objects the worker protocol and starts send.

Conductor deserializes ``TaskResult`` and ``StartWorkflowRequest`` with Jackson into typed
fields, so a list where a string belongs, or a number too large for a Java long, is a 400
before any service runs. These checks give the same answer (Conductor's bean-validation
body, ``validationErrors[].path`` naming the field) before the engine reads the fields.
"""
from __future__ import annotations

from typing import Any

from apps.core.errors import validation_failed

MAX_INT = 2**31 - 1
# callbackAfterSeconds becomes a visibility time in epoch ms: bounded so it stays a date.
MAX_CALLBACK_SECONDS = 10 * 365 * 24 * 3600
IDEMPOTENCY_STRATEGIES = ("FAIL", "RETURN_EXISTING", "FAIL_ON_RUNNING")


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _as_int(value: Any) -> int | None:
    """An integer as Jackson reads one into a long: a JSON integer or a numeric string."""
    if _is_int(value):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


class _Checker:
    def __init__(self, data: dict, prefix: str):
        self.data, self.prefix, self.errors = data, prefix, []

    def add(self, field: str, message: str, value: Any = None) -> None:
        entry = {"path": f"{self.prefix}.{field}", "message": f"{field} {message}"}
        if isinstance(value, (str, int, float, bool)) and not isinstance(value, bool):
            entry["invalidValue"] = str(value)
        self.errors.append(entry)

    def string(self, *fields: str) -> None:
        for f in fields:
            v = self.data.get(f)
            if v is not None and not isinstance(v, str):
                self.add(f, f"must be a string, not {_kind(v)}")

    def obj(self, *fields: str) -> None:
        for f in fields:
            v = self.data.get(f)
            if v is not None and not isinstance(v, dict):
                self.add(f, f"must be a JSON object, not {_kind(v)}")

    def integer(self, field: str, low: int, high: int) -> None:
        v = self.data.get(field)
        if v is None:
            return
        n = _as_int(v)
        if n is None:
            self.add(field, f"must be an integer, not {_kind(v)}", v)
        elif not low <= n <= high:
            self.add(field, f"must be between {low} and {high}", v)

    def done(self) -> None:
        if self.errors:
            raise validation_failed(self.errors)


def check_task_result(result: dict) -> None:
    """TaskResult field types: ids, status, workerId and reason strings; ``outputData`` an
    object; ``callbackAfterSeconds`` an integer 0..``MAX_CALLBACK_SECONDS`` (seconds);
    ``logs`` a list of objects; ``extendLease`` a boolean. InvalidInput (400) naming each
    field otherwise."""
    c = _Checker(result, "updateTask.arg0")
    c.string("workflowInstanceId", "taskId", "status", "workerId", "reasonForIncompletion", "subWorkflowId",
             "externalOutputPayloadStoragePath")
    c.obj("outputData")
    c.integer("callbackAfterSeconds", 0, MAX_CALLBACK_SECONDS)
    logs = result.get("logs")
    if logs is not None and not (isinstance(logs, list) and all(isinstance(entry, dict) for entry in logs)):
        c.add("logs", "must be a list of TaskExecLog objects")
    lease = result.get("extendLease")
    if lease is not None and not isinstance(lease, bool):
        c.add("extendLease", f"must be a boolean, not {_kind(lease)}")
    c.done()


def check_start_request(req: dict) -> None:
    """StartWorkflowRequest field types: ``name``/``correlationId``/``idempotencyKey``/
    ``createdBy`` strings; ``version`` an integer; ``priority`` an integer (its 0..99 range
    is the engine's bean validation); ``input``/``workflowDef`` objects; ``taskToDomain``
    an object of strings; ``idempotencyStrategy`` one of FAIL, RETURN_EXISTING,
    FAIL_ON_RUNNING. InvalidInput (400) naming each field otherwise."""
    c = _Checker(req, "startWorkflow.arg0")
    c.string("name", "correlationId", "idempotencyKey", "createdBy", "externalInputPayloadStoragePath")
    c.obj("input", "workflowDef")
    c.integer("version", 0, MAX_INT)
    priority = req.get("priority")
    if priority is not None and not _is_int(priority):
        c.add("priority", f"must be an integer, not {_kind(priority)}", priority)
    domains = req.get("taskToDomain")
    if domains is not None and not (isinstance(domains, dict) and all(isinstance(v, str) for v in domains.values())):
        c.add("taskToDomain", "must be a JSON object of task name to domain (strings)")
    strategy = req.get("idempotencyStrategy")
    if strategy is not None and strategy not in IDEMPOTENCY_STRATEGIES:
        c.add("idempotencyStrategy", f"must be one of {', '.join(IDEMPOTENCY_STRATEGIES)}",
              strategy if isinstance(strategy, str) else None)
    c.done()
