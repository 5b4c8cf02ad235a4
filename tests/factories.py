"""Builders shared by the unit, API, concurrency and case tests.

* Definitions as Conductor's camelCase JSON: ``task_def``, ``simple_task``, ``workflow_def``.
* Plain engine state for the pure decider: ``workflow_state`` (a ``WorkflowState`` whose
  WorkflowTasks carry ``taskDefinition``, as a started execution does), ``finish``.
* ``Api``: a Django test client that talks like the conductor-python SDK
  (``Content-Type: application/json`` on every request, ``{}`` body on bodiless writes,
  booleans ``True``/``False`` in write query strings).
* ``FakeClock``: freezes ``apps.core.clock.now_ms`` (the engine's only clock) and moves it
  on demand.
"""
from __future__ import annotations

import copy
import itertools
import json
import time as _time
import uuid
from typing import Any
from urllib.parse import urlencode

T0 = 1_700_000_000_000  # a fixed epoch ms for pure tests

# Conductor's TaskDef defaults (common/metadata/tasks/TaskDef.java).
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
}

_counter = itertools.count(1)


def unique(prefix: str) -> str:
    """A name no other test uses (poll data and queues are keyed by name)."""
    return f"{prefix}_{next(_counter)}_{uuid.uuid4().hex[:6]}"


# --- definitions ------------------------------------------------------------------------

def task_def(name: str, **overrides: Any) -> dict:
    """A TaskDef as a client registers it: no retries, no timeouts unless given."""
    out = {"name": name, "retryCount": 0, "retryLogic": "FIXED", "retryDelaySeconds": 0,
           "timeoutSeconds": 0, "responseTimeoutSeconds": 0, "timeoutPolicy": "TIME_OUT_WF",
           "ownerEmail": "test@example.com"}
    out.update(overrides)
    return out


def full_task_def(name: str, **overrides: Any) -> dict:
    """A TaskDef with every Conductor default filled in (what a started execution holds)."""
    out = copy.deepcopy(TASK_DEF_DEFAULTS)
    out["name"] = name
    out.update(overrides)
    return out


def simple_task(name: str, ref: str | None = None, input_parameters: dict | None = None,
                *, task_definition: dict | None = None, **extra: Any) -> dict:
    """A SIMPLE WorkflowTask. ``task_definition`` embeds a TaskDef (as populated at start)."""
    out = {"name": name, "taskReferenceName": ref or name, "type": "SIMPLE",
           "inputParameters": input_parameters or {}}
    if task_definition is not None:
        out["taskDefinition"] = task_definition
    out.update(extra)
    return out


def workflow_def(name: str, tasks: list[dict], *, version: int = 1, **extra: Any) -> dict:
    out = {"name": name, "version": version, "schemaVersion": 2, "ownerEmail": "test@example.com",
           "tasks": tasks}
    out.update(extra)
    return out


# --- plain state for the decider ----------------------------------------------------------

def workflow_state(tasks: list[dict], *, input: dict | None = None, status: str = "RUNNING",
                   create_time: int = T0, workflow_id: str = "wf-1", name: str = "wf",
                   correlation_id: str | None = None, **definition_extra: Any):
    """A fresh execution (no tasks yet) of a definition made of ``tasks``; every WorkflowTask
    without ``taskDefinition`` gets Conductor's default TaskDef for its name."""
    from apps.engine.state import WorkflowState

    tasks = copy.deepcopy(tasks)
    for t in tasks:
        if "taskDefinition" not in t and (t.get("type") or "SIMPLE") == "SIMPLE":
            t["taskDefinition"] = full_task_def(t["name"])
    definition = {"name": name, "version": 1, "schemaVersion": 2, "tasks": tasks,
                  "outputParameters": {}, "timeoutSeconds": 0, "timeoutPolicy": "ALERT_ONLY"}
    definition.update(definition_extra)
    return WorkflowState(workflow_id=workflow_id, workflow_name=name, workflow_version=1, status=status,
                         definition=definition, input=input or {}, correlation_id=correlation_id,
                         create_time=create_time, update_time=create_time)


def task_state(ref: str, *, status: str = "COMPLETED", output: dict | None = None, retry_count: int = 0,
               iteration: int = 0, seq: int = 0, task_id: str | None = None, name: str | None = None,
               input: dict | None = None, workflow_id: str = "wf-1"):
    """A task execution for parameter-resolution tests."""
    from apps.engine.state import TaskState

    return TaskState(task_id=task_id or f"task-{ref}-{retry_count}-{seq}", workflow_id=workflow_id,
                     task_type="SIMPLE", task_def_name=name or ref.split("__")[0], reference_task_name=ref,
                     seq=seq, status=status, retry_count=retry_count, iteration=iteration,
                     input_data=input or {}, output_data=output or {})


def start_task(task, now: int, worker_id: str = "worker-1") -> None:
    """What a poll does to a task: IN_PROGRESS, startTime, pollCount+1."""
    task.status = "IN_PROGRESS"
    task.start_time = task.start_time or now
    task.update_time = now
    task.poll_count += 1
    task.worker_id = worker_id


def finish(task, status: str, now: int, output: dict | None = None, reason: str | None = None) -> None:
    """What a worker's terminal TaskResult does to a task (executor.task_update)."""
    task.status = status
    task.output_data = output or {}
    task.reason_for_incompletion = reason
    task.end_time = now
    task.update_time = now
    if not task.start_time:
        task.start_time = now


def latest(wf, ref: str):
    """The last attempt with this reference."""
    found = [t for t in wf.tasks if t.reference_task_name == ref]
    assert found, f"no task {ref!r} in {[t.reference_task_name for t in wf.tasks]}"
    return found[-1]


# --- HTTP, the way the SDK talks --------------------------------------------------------------

def _query(params: dict | None, *, write: bool) -> str:
    if not params:
        return ""
    items = []
    for key, value in params.items():
        if value is None:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, bool):
                v = ("True" if v else "False") if write else ("true" if v else "false")
            items.append((key, v))
    return ("?" + urlencode(items)) if items else ""


class Api:
    """Conductor REST calls through ``django.test.Client`` (paths relative to /api)."""

    def __init__(self, client=None):
        from django.test import Client

        self.client = client or Client()

    # raw verbs ------------------------------------------------------------------------
    def get(self, path: str, params: dict | None = None):
        return self.client.get("/api" + path + _query(params, write=False), content_type="application/json")

    def _write(self, method: str, path: str, body: Any, params: dict | None, raw: str | None):
        data = raw if raw is not None else json.dumps({} if body is None else body)
        fn = getattr(self.client, method)
        return fn("/api" + path + _query(params, write=True), data=data, content_type="application/json")

    def post(self, path: str, body: Any = None, params: dict | None = None, raw: str | None = None):
        return self._write("post", path, body, params, raw)

    def put(self, path: str, body: Any = None, params: dict | None = None, raw: str | None = None):
        return self._write("put", path, body, params, raw)

    def delete(self, path: str, body: Any = None, params: dict | None = None, raw: str | None = None):
        return self._write("delete", path, body, params, raw)

    # helpers ----------------------------------------------------------------------------
    @staticmethod
    def ok(resp, status: int = 200):
        assert resp.status_code == status, (resp.status_code, resp.content[:2000])
        return resp

    @staticmethod
    def refused(resp, status: int = 400) -> dict:
        """The Conductor error body of a refused call (``status`` and ``message`` set)."""
        assert resp.status_code == status, (resp.status_code, resp.content[:500])
        body = resp.json()
        assert body["status"] == status and body["message"], body
        return body

    def register_task_defs(self, *defs: dict) -> None:
        self.ok(self.post("/metadata/taskdefs", list(defs)))

    def register_workflow(self, definition: dict, overwrite: bool = True) -> None:
        self.ok(self.post("/metadata/workflow", definition, params={"overwrite": overwrite}))

    def start(self, name: str, input: dict | None = None, **request: Any) -> str:
        body = {"name": name, "input": input or {}}
        body.update(request)
        resp = self.ok(self.post("/workflow", body))
        assert resp["Content-Type"].startswith("text/plain"), resp["Content-Type"]
        return resp.content.decode()

    def workflow(self, workflow_id: str, include_tasks: bool | None = None) -> dict:
        params = None if include_tasks is None else {"includeTasks": include_tasks}
        return self.ok(self.get(f"/workflow/{workflow_id}", params)).json()

    def task(self, task_id: str) -> dict:
        return self.ok(self.get(f"/tasks/{task_id}")).json()

    def poll(self, task_type: str, count: int = 1, worker_id: str = "worker-1", domain: str | None = None,
             timeout: int = 0) -> list[dict]:
        resp = self.ok(self.get(f"/tasks/poll/batch/{task_type}",
                                {"workerid": worker_id, "count": count, "timeout": timeout, "domain": domain}))
        return resp.json()

    def poll_one(self, task_type: str, **kw: Any) -> dict:
        tasks = self.poll(task_type, **kw)
        assert len(tasks) == 1, tasks
        return tasks[0]

    def update(self, task: dict, status: str = "COMPLETED", output: dict | None = None, **extra: Any):
        body = {"workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"], "status": status,
                "outputData": output or {}, "workerId": task.get("workerId") or "worker-1", "extendLease": False}
        body.update(extra)
        return self.post("/tasks", body)

    def complete(self, task: dict, output: dict | None = None, **extra: Any) -> None:
        resp = self.ok(self.update(task, "COMPLETED", output, **extra))
        assert resp.content.decode() == task["taskId"]


# --- time --------------------------------------------------------------------------------------

class FakeClock:
    """Replaces the time source of ``apps.core.clock.now_ms`` (every engine module reads
    time through it). Starts at the real time, frozen; ``advance`` moves it."""

    def __init__(self, start_ms: int | None = None):
        self.ms = start_ms if start_ms is not None else _time.time_ns() // 1_000_000

    def time_ns(self) -> int:
        return self.ms * 1_000_000

    def advance(self, seconds: float = 0, ms: int = 0) -> int:
        self.ms += int(seconds * 1000) + ms
        return self.ms

    def __getattr__(self, name: str):  # anything else of the time module stays real
        return getattr(_time, name)

    def install(self, monkeypatch) -> "FakeClock":
        from apps.core import clock

        monkeypatch.setattr(clock, "time", self)
        return self
