"""Runs a Conductor semantics case (tests/cases/fixtures/NN-*.json, see the README there) against
the server in-process, through the REST API, the way a worker and an operator would.

Time is virtual: the engine clock (``apps.core.clock``) is frozen and only moves when a
step waits (``sleep``, a poll that finds nothing, ``poll_empty``); each tick runs the
sweeper and the jobs the engine handed to the cluster, so timers, timeouts and retry
delays behave as on a live server without the suite waiting for them.

Step vocabulary: start, start_request, remember_workflow_id, worker, worker_any, poll_only,
poll_empty, update_by_remembered_id, parallel_updates, external_update, api, sleep, check,
mock_http (a loopback HTTP stub whose address replaces ``{{mockBaseUrl}}`` in the
definitions). Runs are named by selectors (main, a label, child, child:<ref>[/<ref>...],
grandchild, failureWorkflow).
Expect/check keys: see WORKFLOW_KEYS and TASK_KEYS (the README of the fixtures explains
each). Keys that are notes for people (variant_*, notAsserted, note, ...) are ignored; any
other key fails the case, so a new case never passes by being misunderstood.
"""
from __future__ import annotations

import copy
import importlib
import json
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.db import connection

from tests.factories import Api, FakeClock
from tests.support.http_stub import HttpStub, Reply, StubRequest

CASES_DIR = Path(__file__).resolve().parent / "fixtures"

TICK_SECONDS = 0.25
DEFAULT_POLL_TIMEOUT_SECONDS = 10
WORKER_ID = "case-worker"

NOTE_KEYS = {"notAsserted", "note", "referenceBehaviour", "harness", "serverConfig", "timing"}
TASK_KEYS = {"ref", "status", "retryCount", "inputData", "outputData", "inputContains", "outputDataContains",
             "outputDataOneOf", "inputMatchesOutputOf", "reasonForIncompletionContains",
             "reasonForIncompletionNonEmpty", "startDelayInSeconds", "seq", "iteration", "callbackAfterSeconds",
             "retried", "reasonForIncompletion", "inputEqualsOwnTaskId", "retriedTaskIdIsPreviousAttempt", "domain"}
WORKFLOW_KEYS = {"workflowStatus", "status", "reasonForIncompletion", "reasonForIncompletionContains", "output",
                 "tasks", "taskCountByRef", "taskCountByDefName", "absentRefs", "noTaskStatus",
                 "childWorkflowStatus", "childWorkflow", "grandchildWorkflow", "failureWorkflow",
                 "ref", "name", "sameWorkflowIdAsBeforeRetry", "action", "taskCount", "runs", "outputExact",
                 "input", "variables", "failedReferenceTaskNames", "failedTaskNames", "workflowVersion",
                 "lastRetriedTime", "lastRetriedTimeNonZero", "outputHasKey", "noFailureWorkflow",
                 "sameWorkflowIdAs", "differentWorkflowIdFrom", "reasonForIncompletionContainsTaskIdOf",
                 "correlationId", "idFromOutputKey", "inputTaskIdOf", "inputHasKey"}
_LOOP_SUFFIX = re.compile(r"(__\d+)+$")


def case_path(number: int) -> Path:
    found = sorted(CASES_DIR.glob(f"{number:02d}-*.json"))
    if not found:
        raise FileNotFoundError(f"no case {number:02d} in {CASES_DIR}")
    return found[0]


def load_case(number: int) -> dict:
    return json.loads(case_path(number).read_text())


def case_id(number: int) -> str:
    return case_path(number).stem


# --- matching --------------------------------------------------------------------------------------

def _same_scalar(expected: Any, actual: Any) -> bool:
    """Equal value and JSON type (5 is not "5", 1 is not true; 5 and 5.0 are one number)."""
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return expected == actual
    return type(expected) is type(actual) and expected == actual


def subset_mismatches(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where ``actual`` does not contain ``expected``: maps are matched key by key (extra
    actual keys allowed, an expected null needs the key present with null), lists element
    by element with equal length, scalars by type and value."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path or '.'}: expected an object, got {actual!r}"]
        out = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing (expected {value!r})")
            else:
                out += subset_mismatches(value, actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path or '.'}: expected {expected!r}, got {actual!r}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out += subset_mismatches(e, a, f"{path}[{i}]")
        return out
    if not _same_scalar(expected, actual):
        return [f"{path or '.'}: expected {expected!r}, got {actual!r}"]
    return []


def contains_mismatches(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Like ``subset_mismatches``, but an expected string only has to occur inside the
    actual string (the ``...Contains`` expectations)."""
    if isinstance(expected, str):
        if not isinstance(actual, str) or expected not in actual:
            return [f"{path or '.'}: expected text containing {expected!r}, got {actual!r}"]
        return []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path or '.'}: expected an object, got {actual!r}"]
        out = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing (expected {value!r})")
            else:
                out += contains_mismatches(value, actual[key], f"{path}.{key}")
        return out
    return subset_mismatches(expected, actual, path)


def _generate(value: Any) -> Any:
    """Expand ``{"$generate": "string", "sizeKB": n}`` placeholders in step payloads."""
    if isinstance(value, dict):
        if value.get("$generate") == "string":
            return "x" * int(value.get("sizeKB", 1) * 1024)
        return {k: _generate(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_generate(v) for v in value]
    return value


# --- the loopback HTTP stub ---------------------------------------------------------------------------

class MockHttp:
    """A programmable HTTP server on 127.0.0.1 (``mock_http`` steps; a loopback
    ``HttpStub``): each (method, path) answers the programmed status and JSON body;
    anything else is 404. Requests are kept (``requests``)."""

    def __init__(self):
        self.routes: dict[tuple[str, str], tuple[int, Any]] = {}
        self.stub = HttpStub(self._answer)
        self.base_url = self.stub.url

    @property
    def requests(self) -> list[tuple[str, str, bytes]]:
        """``(method, path with query, body)`` of each request, in arrival order."""
        return [(r.method, r.path, r.body) for r in self.stub.requests]

    def _answer(self, request: StubRequest) -> Reply:
        status, body = self.routes.get((request.method, request.path.split("?")[0]), (404, {"error": "no route"}))
        return Reply(status, None if status == 204 else body)

    def stop(self) -> None:
        self.stub.close()


# --- the runner --------------------------------------------------------------------------------------

class CaseRunner:
    def __init__(self, case: dict, api: Api, clock: FakeClock, jobs: list | None = None):
        self.mock: MockHttp | None = None
        if any(step["action"] == "mock_http" for step in case["steps"]):
            self.mock = MockHttp()
            case = json.loads(json.dumps(case).replace("{{mockBaseUrl}}", self.mock.base_url))
        self.case = case
        self.api = api
        self.clock = clock
        self.jobs = jobs if jobs is not None else []
        self.workflow_id: str | None = None
        self.runs: dict[str, str] = {}  # label (start ``as``, remember_workflow_id) -> workflow id
        self.remembered: dict[str, dict] = {}
        self.first_sub_ids: dict[str, str] = {}
        self.type_of_ref: dict[str, str] = {}
        for definition in [case["workflowDef"], *case.get("extraWorkflowDefs", [])]:
            self._index_refs(definition.get("tasks") or [])

    def _index_refs(self, tasks: list) -> None:
        for t in tasks:
            if not isinstance(t, dict):
                continue
            if t.get("taskReferenceName") and t.get("name"):
                self.type_of_ref.setdefault(t["taskReferenceName"], t["name"])
            for branch in (t.get("decisionCases") or {}).values():
                self._index_refs(branch)
            self._index_refs(t.get("defaultCase") or [])
            for branch in t.get("forkTasks") or []:
                self._index_refs(branch)
            self._index_refs(t.get("loopOver") or [])

    # --- plumbing -------------------------------------------------------------------------------
    def close(self) -> None:
        if self.mock is not None:
            self.mock.stop()
            self.mock = None

    def run(self) -> None:
        try:
            self._run()
        finally:
            self.close()

    def _run(self) -> None:
        self.register()
        for index, step in enumerate(self.case["steps"]):
            self.drain_jobs()
            handler = getattr(self, "step_" + step["action"], None)
            assert handler is not None, f"step {index}: unknown action {step['action']!r}"
            try:
                handler(step)
            except AssertionError as exc:
                raise AssertionError(f"step {index} ({step['action']}): {exc}") from exc
            self.remember_sub_workflows()
        self.drain_jobs()
        self.verify(self.case["expect"], "expect")

    def register(self) -> None:
        if self.case.get("taskDefs"):
            self.api.ok(self.api.post("/metadata/taskdefs", self.case["taskDefs"]))
        for definition in [*self.case.get("extraWorkflowDefs", []), self.case["workflowDef"]]:
            self.api.ok(self.api.post("/metadata/workflow", definition, params={"overwrite": True}))

    def drain_jobs(self) -> None:
        """Run the jobs the engine handed to the cluster (system tasks...), in order."""
        while self.jobs:
            func, args, kwargs = self.jobs.pop(0)
            func(*args, **kwargs)

    def thread_api(self) -> Api:
        """An ``Api`` for another thread (``parallel_updates``): a client of its own."""
        return Api()

    def tick(self, seconds: float = TICK_SECONDS) -> None:
        """Let virtual time pass: move the clock, run the sweeper and the pending jobs."""
        from apps.engine import sweeper

        self.clock.advance(seconds)
        self.drain_jobs()
        sweeper.sweep_once()
        self.drain_jobs()

    def workflow(self, workflow_id: str) -> dict:
        return self.api.ok(self.api.get(f"/workflow/{workflow_id}", {"includeTasks": True})).json()

    def main(self) -> dict:
        assert self.workflow_id, "no workflow started yet"
        return self.workflow(self.workflow_id)

    @staticmethod
    def latest_task(wf: dict, ref: str) -> dict | None:
        found = [t for t in wf["tasks"] if t["referenceTaskName"] == ref]
        return found[-1] if found else None

    def sub_workflow_id(self, wf: dict, ref: str | None = None) -> str | None:
        """The sub-workflow started by the task ``ref`` (or by the last SUB_WORKFLOW task)."""
        if ref is not None:
            task = self.latest_task(wf, ref)
        else:
            subs = [t for t in wf["tasks"] if t["taskType"] == "SUB_WORKFLOW"]
            task = subs[-1] if subs else None
        if task is None:
            return None
        return task.get("subWorkflowId") or (task.get("outputData") or {}).get("subWorkflowId")

    def resolve_workflow(self, which: str | None) -> str | None:
        """Id of the run a selector names: ``None``/``main``, a label, ``child``,
        ``grandchild``, ``failureWorkflow`` or ``child:<ref>[/<ref>...]`` (resolved now, from
        the latest attempt of each SUB_WORKFLOW task); None if it is not there (yet)."""
        if which in (None, "main"):
            return self.workflow_id
        if which in self.runs:
            return self.runs[which]
        if which.startswith("child:"):
            current = self.workflow_id
            for ref in which[len("child:"):].split("/"):
                if current is None:
                    return None
                current = self.sub_workflow_id(self.workflow(current), ref)
            return current
        main = self.main()
        if which == "failureWorkflow":
            return self.failure_workflow_id(main)
        child = self.sub_workflow_id(main)
        if which == "child":
            return child
        if which == "grandchild":
            return self.sub_workflow_id(self.workflow(child)) if child else None
        raise AssertionError(f"unknown workflow selector {which!r}")

    def must_resolve(self, which: str | None) -> str:
        found = self.resolve_workflow(which)
        assert found, f"no workflow {which!r} (yet)"
        return found

    @staticmethod
    def failure_workflow_id(wf: dict, key: str = "conductor.failure_workflow") -> str | None:
        value = (wf.get("output") or {}).get(key)
        return value if value and not str(value).startswith("Error") else None

    def tree_ids(self, root: str | None) -> set[str]:
        """A workflow and every sub-workflow below it."""
        out: set[str] = set()
        todo = [root] if root else []
        while todo:
            wf_id = todo.pop()
            if wf_id in out:
                continue
            resp = self.api.get(f"/workflow/{wf_id}", {"includeTasks": True})
            if resp.status_code == 404:  # a removed run
                continue
            out.add(wf_id)
            for task in self.api.ok(resp).json()["tasks"]:
                sub = task.get("subWorkflowId")
                if task["taskType"] == "SUB_WORKFLOW" and sub:
                    todo.append(sub)
        return out

    def remember_sub_workflows(self) -> None:
        if not self.workflow_id:
            return
        for task in self.main()["tasks"]:
            sub = task.get("subWorkflowId")
            if task["taskType"] == "SUB_WORKFLOW" and sub:
                self.first_sub_ids.setdefault(task["referenceTaskName"], sub)

    def task_type_for(self, ref: str) -> str:
        base = _LOOP_SUFFIX.sub("", ref)
        assert base in self.type_of_ref, f"no task {ref!r} in the case's definitions"
        return self.type_of_ref[base]

    def post_result(self, task_id: str, workflow_id: str, status: str, output: dict | None = None,
                    reason: str | None = None, worker_id: str = WORKER_ID, callback: int | None = None) -> Any:
        body = {"workflowInstanceId": workflow_id, "taskId": task_id, "status": status,
                "outputData": _generate(output or {}), "workerId": worker_id, "extendLease": False}
        if reason is not None:
            body["reasonForIncompletion"] = reason
        if callback is not None:
            body["callbackAfterSeconds"] = callback
        return self.api.post("/tasks", body)

    def poll_until(self, task_type: str, timeout_s: float, accept=None, domain: str | None = None) -> dict:
        """Poll ``task_type`` (one at a time, in ``domain`` if given) until a task comes,
        letting virtual time pass between empty polls. ``accept(task)`` may reject a
        delivered task (assertion)."""
        waited = 0.0
        while True:
            tasks = self.api.poll(task_type, count=1, worker_id=WORKER_ID, domain=domain)
            if tasks:
                task = tasks[0]
                if accept is not None:
                    accept(task)
                return task
            assert waited < timeout_s, f"no {task_type!r} task within {timeout_s} s"
            self.tick()
            waited += TICK_SECONDS

    def snapshot(self, workflow_id: str) -> Any:
        wf = self.workflow(workflow_id)
        return (wf["status"], wf.get("reasonForIncompletion"), wf.get("output"),
                [(t["taskId"], t["status"], t.get("outputData"), t.get("reasonForIncompletion"), t.get("retryCount"))
                 for t in wf["tasks"]])

    # --- steps ------------------------------------------------------------------------------------
    def _set_run(self, label: str | None, workflow_id: str) -> None:
        """The first run started without a label is the main one; a label names another."""
        if label:
            self.runs[label] = workflow_id
        else:
            assert self.workflow_id is None, "a second unlabelled start"
            self.workflow_id = workflow_id

    def step_start(self, step: dict) -> None:
        definition = self.case["workflowDef"]
        body = {"name": step.get("name", definition["name"]),
                "version": step.get("version", definition.get("version", 1) if "name" not in step else None),
                "input": step.get("input", {})}
        if step.get("correlationId"):
            body["correlationId"] = step["correlationId"]
        resp = self.api.ok(self.api.post("/workflow", {k: v for k, v in body.items() if v is not None}))
        workflow_id = resp.content.decode()
        assert workflow_id, "start answered no id"
        self._set_run(step.get("as"), workflow_id)

    def step_start_request(self, step: dict) -> None:
        path = self._placeholders(step.get("path", "/api/workflow"))
        resp = self._call("post", path, self._placeholders(step["body"]))
        expected = step.get("expectStatus")
        if expected is not None:
            assert resp.status_code == expected, (resp.status_code, resp.content)
            if not 200 <= expected < 300:
                return
        else:
            assert resp.status_code == 200, (resp.status_code, resp.content)
        text = resp.content.decode()
        try:
            answer = json.loads(text)
        except ValueError:
            answer = text
        workflow_id = answer.get("workflowId") if isinstance(answer, dict) else answer
        assert isinstance(workflow_id, str) and workflow_id, f"no workflow id in {text!r}"
        self._set_run(step.get("as"), workflow_id)
        if "expectBody" in step:
            self._check_body(step["expectBody"], answer)

    def step_remember_workflow_id(self, step: dict) -> None:
        self.runs[step["as"]] = self.must_resolve(step["selector"])

    def _accept(self, step: dict, ref: str | None):
        """A check that a polled task is the one the step means (ref, run)."""
        def accept(task: dict) -> None:
            if ref is not None:
                assert task["referenceTaskName"] == ref, \
                    f"polled {task['taskDefName']!r} expecting {ref!r}, got {task['referenceTaskName']!r}"
            if step.get("workflow"):
                allowed = {self.must_resolve(step["workflow"])}
            else:  # some cases omit ``workflow`` for tasks of a sub-workflow: the run's tree
                allowed = set().union(*(self.tree_ids(w) for w in [self.workflow_id, *self.runs.values()]))
            assert task["workflowInstanceId"] in allowed, \
                f"task {task['referenceTaskName']!r} came from workflow {task['workflowInstanceId']}, " \
                f"expected one of {allowed}"
        return accept

    def step_worker(self, step: dict) -> None:
        ref = step["taskRef"]
        if step.get("expectIgnored"):
            # the task was taken earlier (poll_only) and has ended since: post the late result
            target = self.must_resolve(step.get("workflow"))
            task = self.latest_task(self.workflow(target), ref)
            assert task is not None, f"no task {ref!r} in {step.get('workflow')} workflow"
            self._ignored_update(target, task["taskId"], step)
            return
        task_type = self.task_type_for(ref)
        timeout = step.get("pollTimeoutSeconds", DEFAULT_POLL_TIMEOUT_SECONDS)
        task = self.poll_until(task_type, timeout, self._accept(step, ref), step.get("domain"))
        resp = self.post_result(task["taskId"], task["workflowInstanceId"], step["status"], step.get("outputData"),
                                step.get("reason"))
        assert resp.status_code == 200, (resp.status_code, resp.content)

    def step_worker_any(self, step: dict) -> None:
        for _ in range(step["times"]):
            task = self.poll_until(step["taskType"], step.get("pollTimeoutSeconds", DEFAULT_POLL_TIMEOUT_SECONDS),
                                   domain=step.get("domain"))
            resp = self.post_result(task["taskId"], task["workflowInstanceId"], step.get("status", "COMPLETED"),
                                    step.get("outputData"), step.get("reason"))
            assert resp.status_code == 200, (resp.status_code, resp.content)

    def step_poll_only(self, step: dict) -> None:
        task = self.poll_until(step["taskType"], step.get("pollTimeoutSeconds", DEFAULT_POLL_TIMEOUT_SECONDS),
                               self._accept(step, step.get("expectRef")), step.get("domain"))
        if step.get("remember"):
            self.remembered[step["remember"]] = task

    def step_poll_empty(self, step: dict) -> None:
        waited = 0.0
        while True:
            tasks = self.api.poll(step["taskType"], count=1, worker_id=WORKER_ID, domain=step.get("domain"))
            assert tasks == [], f"expected no {step['taskType']!r} task after {waited} s, got {tasks}"
            if waited >= step["withinSeconds"]:
                return
            self.tick()
            waited += TICK_SECONDS

    def _ignored_update(self, workflow_id: str, task_id: str, step: dict) -> None:
        before = self.snapshot(workflow_id)
        resp = self.post_result(task_id, workflow_id, step["status"], step.get("outputData"), step.get("reason"),
                                callback=step.get("callbackAfterSeconds"))
        assert resp.status_code == 200, f"an ignored update must answer 200, got {resp.status_code} {resp.content!r}"
        self.drain_jobs()
        after = self.snapshot(workflow_id)
        assert after == before, f"an ignored update changed the workflow:\n{before}\n->\n{after}"

    def step_update_by_remembered_id(self, step: dict) -> None:
        task = self.remembered[step["remembered"]]
        if step.get("expectIgnored"):
            self._ignored_update(task["workflowInstanceId"], task["taskId"], step)
            return
        resp = self.post_result(task["taskId"], task["workflowInstanceId"], step["status"], step.get("outputData"),
                                step.get("reason"), callback=step.get("callbackAfterSeconds"))
        assert resp.status_code == 200, (resp.status_code, resp.content)

    def step_parallel_updates(self, step: dict) -> None:
        task = self.remembered[step["remembered"]]
        barrier = threading.Barrier(len(step["updates"]))
        statuses: list[Any] = [None] * len(step["updates"])

        def send(i: int, update: dict) -> None:
            try:
                barrier.wait(timeout=30)
                resp = self.thread_api().post("/tasks", {
                    "workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"],
                    "status": update["status"], "outputData": _generate(update.get("outputData") or {}),
                    "workerId": update.get("workerId", WORKER_ID),
                    **({"reasonForIncompletion": update["reason"]} if "reason" in update else {})})
                statuses[i] = resp.status_code
            except Exception as exc:  # noqa: BLE001 - reported below
                statuses[i] = repr(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=send, args=(i, u), daemon=True) for i, u in enumerate(step["updates"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert statuses == [200] * len(threads), f"parallel updates answered {statuses}"

    def step_external_update(self, step: dict) -> None:
        target = self.must_resolve(step.get("workflow"))
        task = self.latest_task(self.workflow(target), step["taskRef"])
        assert task is not None and task["status"] in ("SCHEDULED", "IN_PROGRESS"), \
            f"no pending task {step['taskRef']!r}: {task and task['status']}"
        resp = self.post_result(task["taskId"], target, step["status"], step.get("outputData"), step.get("reason"))
        assert resp.status_code == 200, (resp.status_code, resp.content)

    def _placeholders(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._placeholders(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._placeholders(v) for v in value]
        if not isinstance(value, str) or "{" not in value:
            return value

        def repl(m: re.Match) -> str:
            kind, arg = m.group(1), m.group(2)
            if kind == "defName":
                return arg  # definitions are registered under their own names
            if kind == "workflowId":
                return self.must_resolve(arg)
            if kind == "subWorkflowId":
                sub = self.sub_workflow_id(self.main(), arg)
                assert sub, f"no sub-workflow for {arg!r}"
                return sub
            if kind == "taskId":
                ref, _, which = arg.partition("@")
                task = self.latest_task(self.workflow(self.must_resolve(which or None)), ref)
                assert task, f"no task {arg!r}"
                return task["taskId"]
            if kind == "taskOutput":
                ref, _, key = arg.partition(".")
                task = self.latest_task(self.main(), ref)
                assert task, f"no task {ref!r}"
                return str((task.get("outputData") or {}).get(key))
            raise AssertionError(f"unknown placeholder {m.group(0)}")

        return re.sub(r"\{(workflowId|subWorkflowId|taskId|taskOutput|defName)(?::([^}]+))?\}", repl, value)

    def _call(self, method: str, path: str, body: Any = None):
        assert path.startswith("/api/"), path
        path, _, query = path.partition("?")
        url = "/api" + quote(path[len("/api"):]) + (f"?{query}" if query else "")
        method = method.lower()
        if method == "get":
            return self.api.client.get(url, content_type="application/json")
        return getattr(self.api.client, method)(url, data=json.dumps(body if body is not None else {}),
                                                content_type="application/json")

    def _check_body(self, expected: Any, answer: Any) -> None:
        expected = self._placeholders(expected)
        if isinstance(expected, str):
            assert answer == expected, f"answer {answer!r}, expected {expected!r}"
            return
        problems = subset_mismatches(expected, answer)
        assert not problems, "answer body: " + "; ".join(problems)

    def step_api(self, step: dict) -> None:
        path = self._placeholders(step["path"])
        resp = self._call(step["method"], path, self._placeholders(step.get("body", {})))
        expected = step.get("expectStatus")
        if expected is not None:
            assert resp.status_code == expected, (resp.status_code, resp.content)
        else:
            assert 200 <= resp.status_code < 300, (step["method"], path, resp.status_code, resp.content)
        if "expectBody" in step:
            text = resp.content.decode()
            try:
                answer = json.loads(text)
            except ValueError:
                answer = text
            self._check_body(step["expectBody"], answer)

    def step_mock_http(self, step: dict) -> None:
        assert self.mock is not None
        self.mock.routes[(step["method"].upper(), step["path"])] = (step["status"], step.get("body"))

    def step_sleep(self, step: dict) -> None:
        remaining = float(step["seconds"])
        while remaining > 0:
            self.tick(min(TICK_SECONDS, remaining))
            remaining -= TICK_SECONDS

    def step_check(self, step: dict) -> None:
        """``withinSeconds``: the check may become true while virtual time passes."""
        spec = {k: v for k, v in step.items() if k not in ("action", "withinSeconds")}
        waited = 0.0
        while True:
            try:
                self.verify(spec, "check")
                return
            except AssertionError:
                if waited >= float(step.get("withinSeconds", 0)):
                    raise
            self.tick()
            waited += TICK_SECONDS

    # --- expectations ----------------------------------------------------------------------------
    def verify(self, spec: dict, where: str) -> None:
        problems = self.workflow_problems(self.main(), spec, where)
        assert not problems, f"{where} failed:\n  " + "\n  ".join(problems)

    def workflow_problems(self, wf: dict, spec: dict, where: str) -> list[str]:
        out: list[str] = []
        for key in spec:
            if key not in WORKFLOW_KEYS and key not in NOTE_KEYS and not key.startswith("variant_"):
                out.append(f"{where}: unknown expectation {key!r} (teach the harness)")
        status = spec.get("workflowStatus", spec.get("status"))
        if status is not None and wf["status"] != status:
            out.append(f"{where}: workflow status {wf['status']}, expected {status}"
                       f" (reason: {wf.get('reasonForIncompletion')!r})")
        if "reasonForIncompletion" in spec and wf.get("reasonForIncompletion") != spec["reasonForIncompletion"]:
            out.append(f"{where}: reasonForIncompletion {wf.get('reasonForIncompletion')!r}, "
                       f"expected {spec['reasonForIncompletion']!r}")
        if "reasonForIncompletionContains" in spec and \
                spec["reasonForIncompletionContains"] not in (wf.get("reasonForIncompletion") or ""):
            out.append(f"{where}: reasonForIncompletion {wf.get('reasonForIncompletion')!r} does not contain "
                       f"{spec['reasonForIncompletionContains']!r}")
        if "output" in spec:
            out += [f"{where}: output{m}" for m in subset_mismatches(spec["output"], wf.get("output") or {})]
        for entry in spec.get("tasks", []):
            out += self.task_problems(wf, entry, where)
        for ref, count in (spec.get("taskCountByRef") or {}).items():
            actual = sum(1 for t in wf["tasks"] if t["referenceTaskName"] == ref)
            if actual != count:
                out.append(f"{where}: {actual} task(s) with ref {ref!r}, expected {count}")
        for name, count in (spec.get("taskCountByDefName") or {}).items():
            actual = sum(1 for t in wf["tasks"] if t.get("taskDefName") == name)
            if actual != count:
                out.append(f"{where}: {actual} task(s) of {name!r}, expected {count}")
        for ref in spec.get("absentRefs", []):
            present = [t["referenceTaskName"] for t in wf["tasks"] if _LOOP_SUFFIX.sub("", t["referenceTaskName"]) == ref]
            if present:
                out.append(f"{where}: {ref!r} must never be scheduled, found {present}")
        for status_name in spec.get("noTaskStatus", []):
            bad = [t["referenceTaskName"] for t in wf["tasks"] if t["status"] == status_name]
            if bad:
                out.append(f"{where}: tasks {bad} have status {status_name}")
        for ref, child_status in (spec.get("childWorkflowStatus") or {}).items():
            sub = self.sub_workflow_id(wf, ref)
            if not sub:
                out.append(f"{where}: no sub-workflow for {ref!r}")
            elif self.workflow(sub)["status"] != child_status:
                out.append(f"{where}: child {ref!r} is {self.workflow(sub)['status']}, expected {child_status}")
        if "childWorkflow" in spec:
            out += self.child_problems(wf, spec["childWorkflow"], f"{where}.childWorkflow")
        if "grandchildWorkflow" in spec:
            child_ref = (spec.get("childWorkflow") or {}).get("ref")
            child = self.sub_workflow_id(wf, child_ref)
            grandchild = self.sub_workflow_id(self.workflow(child)) if child else None
            if not grandchild:
                out.append(f"{where}: no grandchild workflow")
            else:
                out += self.workflow_problems(self.workflow(grandchild), spec["grandchildWorkflow"],
                                              f"{where}.grandchildWorkflow")
        if "failureWorkflow" in spec:
            fw_spec = spec["failureWorkflow"]
            fw_id = self.failure_workflow_id(wf, fw_spec.get("idFromOutputKey", "conductor.failure_workflow"))
            if not fw_id:
                out.append(f"{where}: no failure workflow started (output: {wf.get('output')!r})")
            else:
                fw = self.workflow(fw_id)
                if fw_spec.get("name") and fw["workflowName"] != fw_spec["name"]:
                    out.append(f"{where}: failure workflow is {fw['workflowName']!r}, expected {fw_spec['name']!r}")
                for key, ref in (fw_spec.get("inputTaskIdOf") or {}).items():
                    task = self.latest_task(wf, ref)
                    if task is None or (fw.get("input") or {}).get(key) != task["taskId"]:
                        out.append(f"{where}.failureWorkflow: input {key} is {(fw.get('input') or {}).get(key)!r}, "
                                   f"expected the taskId of {ref!r}")
                if "inputHasKey" in fw_spec and fw_spec["inputHasKey"] not in (fw.get("input") or {}):
                    out.append(f"{where}.failureWorkflow: input has no key {fw_spec['inputHasKey']!r}")
                out += self.workflow_problems(fw, {k: v for k, v in fw_spec.items()
                                                   if k not in ("inputTaskIdOf", "inputHasKey", "idFromOutputKey")},
                                              f"{where}.failureWorkflow")
        if spec.get("noFailureWorkflow") and self.failure_workflow_id(wf):
            out.append(f"{where}: a failure workflow was started: {self.failure_workflow_id(wf)}")
        if "taskCount" in spec and len(wf["tasks"]) != spec["taskCount"]:
            out.append(f"{where}: {len(wf['tasks'])} task(s), expected {spec['taskCount']}: "
                       f"{[(t['referenceTaskName'], t['status']) for t in wf['tasks']]}")
        if "outputExact" in spec and (wf.get("output") or {}) != spec["outputExact"]:
            out.append(f"{where}: output {wf.get('output')!r}, expected exactly {spec['outputExact']!r}")
        if "outputHasKey" in spec and spec["outputHasKey"] not in (wf.get("output") or {}):
            out.append(f"{where}: output has no key {spec['outputHasKey']!r}: {wf.get('output')!r}")
        if "input" in spec:
            out += [f"{where}: input{m}" for m in subset_mismatches(spec["input"], wf.get("input") or {})]
        if "variables" in spec:
            actual = wf.get("variables") or {}
            if spec["variables"] == {} and actual:
                out.append(f"{where}: variables {actual!r}, expected none")
            out += [f"{where}: variables{m}" for m in subset_mismatches(spec["variables"], actual)]
        for key in ("failedReferenceTaskNames", "failedTaskNames"):
            if key in spec and set(wf.get(key) or []) != set(spec[key]):
                out.append(f"{where}: {key} {sorted(wf.get(key) or [])}, expected {sorted(spec[key])}")
        for key, field in (("workflowVersion", "version"), ("correlationId", "correlationId"),
                           ("lastRetriedTime", "lastRetriedTime")):
            if key in spec and wf.get(field) != spec[key]:
                out.append(f"{where}: {field} {wf.get(field)!r}, expected {spec[key]!r}")
        if spec.get("lastRetriedTimeNonZero") and not wf.get("lastRetriedTime"):
            out.append(f"{where}: lastRetriedTime is {wf.get('lastRetriedTime')!r}, expected non-zero")
        if "sameWorkflowIdAs" in spec and wf["workflowId"] != self.runs.get(spec["sameWorkflowIdAs"]):
            out.append(f"{where}: run {wf['workflowId']} is not {spec['sameWorkflowIdAs']!r} "
                       f"({self.runs.get(spec['sameWorkflowIdAs'])})")
        if "differentWorkflowIdFrom" in spec and wf["workflowId"] == self.runs.get(spec["differentWorkflowIdFrom"]):
            out.append(f"{where}: run {wf['workflowId']} is still {spec['differentWorkflowIdFrom']!r}")
        if "reasonForIncompletionContainsTaskIdOf" in spec:
            task = self.latest_task(wf, spec["reasonForIncompletionContainsTaskIdOf"])
            if task is None or task["taskId"] not in (wf.get("reasonForIncompletion") or ""):
                out.append(f"{where}: reasonForIncompletion {wf.get('reasonForIncompletion')!r} does not name the "
                           f"taskId of {spec['reasonForIncompletionContainsTaskIdOf']!r}")
        for selector, run_spec in (spec.get("runs") or {}).items():
            run_id = self.resolve_workflow(selector)
            if not run_id:
                out.append(f"{where}: no run {selector!r}")
            else:
                out += self.workflow_problems(self.workflow(run_id), run_spec, f"{where}.runs.{selector}")
        return out

    def child_problems(self, wf: dict, spec: dict, where: str) -> list[str]:
        sub = self.sub_workflow_id(wf, spec.get("ref"))
        if not sub:
            return [f"{where}: no sub-workflow for {spec.get('ref')!r}"]
        out = []
        if spec.get("sameWorkflowIdAsBeforeRetry"):
            first = self.first_sub_ids.get(spec["ref"])
            if first != sub:
                out.append(f"{where}: sub-workflow id changed from {first} to {sub}")
        return out + self.workflow_problems(self.workflow(sub), spec, where)

    def task_problems(self, wf: dict, entry: dict, where: str) -> list[str]:
        ref = entry["ref"]
        label = f"{where}: task {ref!r}" + (f" (retryCount {entry['retryCount']})" if "retryCount" in entry else "")
        unknown = set(entry) - TASK_KEYS
        if unknown:
            return [f"{label}: unknown expectation(s) {sorted(unknown)} (teach the harness)"]
        candidates = [t for t in wf["tasks"] if t["referenceTaskName"] == ref]
        if "retryCount" in entry:
            candidates = [t for t in candidates if t["retryCount"] == entry["retryCount"]]
        if not candidates:
            present = [(t["referenceTaskName"], t["retryCount"], t["status"]) for t in wf["tasks"]]
            return [f"{label}: not found among {present}"]
        task = candidates[-1]
        out = []
        if "status" in entry and task["status"] != entry["status"]:
            out.append(f"{label}: status {task['status']}, expected {entry['status']}"
                       f" (reason: {task.get('reasonForIncompletion')!r})")
        for key, field, match in (("inputData", "inputData", subset_mismatches),
                                  ("inputContains", "inputData", contains_mismatches),
                                  ("outputData", "outputData", subset_mismatches),
                                  ("outputDataContains", "outputData", contains_mismatches)):
            if key in entry:
                out += [f"{label}: {field}{m}" for m in match(entry[key], task.get(field) or {})]
        if "outputDataOneOf" in entry and not any(
                not subset_mismatches(option, task.get("outputData") or {}) for option in entry["outputDataOneOf"]):
            out.append(f"{label}: outputData {task.get('outputData')!r} is none of {entry['outputDataOneOf']!r}")
        if "inputMatchesOutputOf" in entry:
            other = self.latest_task(wf, entry["inputMatchesOutputOf"])
            if other is None or (task.get("inputData") or {}) != (other.get("outputData") or {}):
                out.append(f"{label}: inputData {task.get('inputData')!r} != outputData of "
                           f"{entry['inputMatchesOutputOf']!r} {other and other.get('outputData')!r}")
        if "reasonForIncompletionContains" in entry and \
                entry["reasonForIncompletionContains"] not in (task.get("reasonForIncompletion") or ""):
            out.append(f"{label}: reason {task.get('reasonForIncompletion')!r} does not contain "
                       f"{entry['reasonForIncompletionContains']!r}")
        if entry.get("reasonForIncompletionNonEmpty") and not task.get("reasonForIncompletion"):
            out.append(f"{label}: reasonForIncompletion is empty")
        for key in ("startDelayInSeconds", "seq", "iteration", "callbackAfterSeconds", "retried",
                    "reasonForIncompletion", "domain"):
            if key in entry and not _same_scalar(entry[key], task.get(key)):
                out.append(f"{label}: {key} {task.get(key)!r}, expected {entry[key]!r}")
        if "inputEqualsOwnTaskId" in entry and \
                (task.get("inputData") or {}).get(entry["inputEqualsOwnTaskId"]) != task["taskId"]:
            out.append(f"{label}: input {entry['inputEqualsOwnTaskId']} is not the task's own id {task['taskId']}")
        if entry.get("retriedTaskIdIsPreviousAttempt"):
            attempts = [t for t in wf["tasks"] if t["referenceTaskName"] == ref]
            index = next(i for i, t in enumerate(attempts) if t["taskId"] == task["taskId"])
            previous = attempts[index - 1]["taskId"] if index > 0 else None
            if previous is None or task.get("retriedTaskId") != previous:
                out.append(f"{label}: retriedTaskId {task.get('retriedTaskId')!r}, expected the previous attempt "
                           f"{previous!r}")
        return out


def install_job_capture(monkeypatch, jobs: list) -> None:
    """Make the engine's cluster jobs (django-q2 ``async_task``) land in ``jobs`` so the
    harness runs them on its own ticks; the sweeper loop job is not needed (the harness
    sweeps itself)."""
    from apps.engine import jobqueue

    def capture(func: str, *args, **kwargs) -> None:
        kwargs = {k: v for k, v in kwargs.items() if k not in ("task_name", "hook", "group", "q_options")}
        if func.rsplit(".", 1)[-1] in ("sweep_loop_job", "ensure_sweeper_job"):
            return
        module, name = func.rsplit(".", 1)
        jobs.append((getattr(importlib.import_module(module), name), args, kwargs))

    monkeypatch.setattr(jobqueue, "enqueue", capture)


def tampered(case: dict, mutate) -> dict:
    """A deep copy of a case changed by ``mutate(copy)`` (for the harness's own tests)."""
    out = copy.deepcopy(case)
    mutate(out)
    return out
