"""Conductor's own integration-spec scenarios (conductor-oss/conductor
``test-harness/src/test/groovy/com/netflix/conductor/test/integration/``), ported in our
own words with Conductor's names and values, driven through our REST API.

``conductor`` is a ``SpecDriver``: the Django test client as the API, a frozen engine clock
that only moves when the test says so (``tick``), and the jobs the engine hands to the
cluster (system tasks, sub-workflow starts, event messages) run by the driver at each step,
as the spec's ``asyncSystemTaskExecutor.execute`` / ``sweep`` calls do in Conductor."""
from __future__ import annotations

import os

import pytest

from tests.cases.harness import install_job_capture
from tests.factories import Api, FakeClock
from tests.specs.definitions import LINEAR_WORKFLOW_T1_T2, SUB_WORKFLOW, WORKFLOW_WITH_SUBWORKFLOW

# Conductor's test task definitions (WorkflowTestUtil.registerTaskDefinitions):
# integration_task_0..20 with retryCount 1, timeoutSeconds 120, responseTimeoutSeconds 120.
# Conductor's TaskDef default retryDelaySeconds is 60; the specs re-poll a retried task at
# once because their queue ignores the delay, so the ports register 0.
INTEGRATION_TASK = {"retryCount": 1, "timeoutSeconds": 120, "responseTimeoutSeconds": 120,
                    "retryDelaySeconds": 0, "retryLogic": "FIXED", "timeoutPolicy": "TIME_OUT_WF",
                    "ownerEmail": "test@harness.com"}


class SpecDriver:
    def __init__(self, api: Api, clock: FakeClock, jobs: list):
        self.api = api
        self.clock = clock
        self.jobs = jobs

    # --- setup ----------------------------------------------------------------------
    def task_defs(self, *names: str, **overrides) -> None:
        self.api.register_task_defs(*({"name": n, **INTEGRATION_TASK, **overrides} for n in names))

    def workflow_defs(self, *definitions: dict) -> None:
        for d in definitions:
            self.api.register_workflow({"schemaVersion": 2, "ownerEmail": "test@harness.com", "version": 1, **d})

    # --- time and jobs ----------------------------------------------------------------
    def drain(self) -> None:
        while self.jobs:
            func, args, kwargs = self.jobs.pop(0)
            func(*args, **kwargs)

    def tick(self, seconds: float = 0.25) -> None:
        from apps.engine import sweeper

        self.clock.advance(seconds)
        self.drain()
        sweeper.sweep_once()
        self.drain()

    def decide(self, workflow_id: str) -> None:
        """Conductor's ``sweep(workflowId)``."""
        self.api.ok(self.api.put(f"/workflow/decide/{workflow_id}"))
        self.drain()

    # --- runs -------------------------------------------------------------------------
    def start(self, name: str, input: dict | None = None, version: int | None = None, **request) -> str:
        body = {"name": name, "input": input or {}, **request}
        if version is not None:
            body["version"] = version
        wid = self.api.ok(self.api.post("/workflow", body)).content.decode()
        self.drain()
        return wid

    def wf(self, workflow_id: str) -> dict:
        return self.api.workflow(workflow_id, include_tasks=True)

    def statuses(self, workflow_id: str) -> list[tuple[str, str]]:
        """``[(taskType, status), ...]`` in task order."""
        return [(t["taskType"], t["status"]) for t in self.wf(workflow_id)["tasks"]]

    def task(self, workflow_id: str, ref: str) -> dict:
        found = [t for t in self.wf(workflow_id)["tasks"] if t["referenceTaskName"] == ref]
        assert found, f"no task {ref!r} in {self.statuses(workflow_id)}"
        return found[-1]

    def child(self, workflow_id: str, ref: str) -> str:
        sub = self.task(workflow_id, ref).get("subWorkflowId")
        assert sub, f"task {ref!r} has no sub-workflow"
        return sub

    def call(self, method: str, path: str, body=None, params=None, status: int | None = None):
        """A REST call; ``status`` None accepts any 2xx."""
        resp = getattr(self.api, method)(path, body, params) if method != "get" else self.api.get(path, params)
        ok = 200 <= resp.status_code < 300 if status is None else resp.status_code == status
        assert ok, (resp.status_code, resp.content[:2000])
        self.drain()
        return resp

    # --- workers ----------------------------------------------------------------------
    def poll(self, task_type: str, worker: str = "spec.worker") -> dict:
        tasks = self.api.poll(task_type, count=1, worker_id=worker)
        assert tasks, f"no {task_type!r} task to poll"
        return tasks[0]

    def no_task(self, task_type: str) -> None:
        assert self.api.poll(task_type, count=1) == [], f"a {task_type!r} task was handed out"

    def result(self, task: dict, status: str, output: dict | None = None, reason: str | None = None) -> None:
        extra = {"reasonForIncompletion": reason} if reason else {}
        self.api.ok(self.api.update(task, status, output or {}, **extra))
        self.drain()

    def complete(self, task_type: str, output: dict | None = None) -> dict:
        task = self.poll(task_type)
        self.result(task, "COMPLETED", output)
        return task

    def fail(self, task_type: str, reason: str = "failed", terminal: bool = False, output: dict | None = None) -> dict:
        task = self.poll(task_type)
        self.result(task, "FAILED_WITH_TERMINAL_ERROR" if terminal else "FAILED", output, reason)
        return task


# The reference run (tests/reference/run.py) points the specs at a live server, ours or
# Conductor OSS, by this variable (its API base URL, http://127.0.0.1:PORT/api).
REFERENCE_URL_VARIABLE = "CONDUCTOR_REFERENCE_URL"


@pytest.fixture
def conductor(request, transactional_db, monkeypatch) -> SpecDriver:
    remote_url = os.environ.get(REFERENCE_URL_VARIABLE)
    if remote_url:
        from tests.reference.remote import RemoteSpecDriver

        driver = RemoteSpecDriver(remote_url)
        request.addfinalizer(driver.cleanup)
        return driver
    clock = FakeClock().install(monkeypatch)
    jobs: list = []
    install_job_capture(monkeypatch, jobs)
    return SpecDriver(Api(), clock, jobs)


@pytest.fixture
def tree(conductor):
    """The 3-level tree of SubWorkflowRetry/Restart/RerunSpec ``setup``: root ->
    mid-level -> leaf, all FAILED because integration_task_2 (retryCount 0) failed in the
    leaf. ``(root, mid, leaf)`` ids."""
    conductor.task_defs("integration_task_1")
    conductor.task_defs("integration_task_2", retryCount=0)
    conductor.workflow_defs(SUB_WORKFLOW, LINEAR_WORKFLOW_T1_T2, WORKFLOW_WITH_SUBWORKFLOW)
    root = conductor.start("integration_test_wf_with_sub_wf",
                           {"param1": "p1 value", "param2": "p2 value", "subwf": "integration_test_wf_with_sub_wf",
                            "nextSubwf": "integration_test_wf"}, correlationId="retry_on_root_in_3level_wf")
    assert conductor.statuses(root) == [("integration_task_1", "SCHEDULED")]
    conductor.complete("integration_task_1", {"op": "task1.done"})
    assert conductor.statuses(root) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "IN_PROGRESS")]
    mid = conductor.child(root, "t2")
    assert conductor.statuses(mid) == [("integration_task_1", "SCHEDULED")]
    conductor.complete("integration_task_1", {"op": "task1.done"})
    leaf = conductor.child(mid, "t2")
    assert conductor.wf(leaf)["workflowName"] == "integration_test_wf"
    assert conductor.statuses(leaf) == [("integration_task_1", "SCHEDULED")]
    conductor.complete("integration_task_1", {"op": "task1.done"})
    conductor.fail("integration_task_2", "failed")
    assert conductor.wf(leaf)["status"] == "FAILED"
    assert conductor.statuses(leaf) == [("integration_task_1", "COMPLETED"), ("integration_task_2", "FAILED")]
    for wid in (mid, root):
        conductor.decide(wid)
        assert conductor.wf(wid)["status"] == "FAILED"
        assert conductor.statuses(wid) == [("integration_task_1", "COMPLETED"), ("SUB_WORKFLOW", "FAILED")]
    return root, mid, leaf
