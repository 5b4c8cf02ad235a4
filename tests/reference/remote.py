"""The case harness and the spec driver pointed at a live server over HTTP (any Conductor:
ours or Conductor OSS), for the reference run (``make test-reference``, tests/reference/run.py).

In-process, tests/cases/harness.py and tests/specs/conftest.py freeze the engine clock and
run the cluster's jobs themselves, so a step's effect is complete when the step returns. A
live server runs its system tasks, sweeper and timers on its own, in real time, so here:

* time passes for real (``tick`` sleeps);
* every check and the final expectations may take up to ``SETTLE_SECONDS`` to come true
  (a ``check`` of ``withinSeconds`` 0 in-process means "once the jobs in hand have run");
* the spec driver's ``drain`` (the moment in-process jobs run) waits until the workflows
  the test started stop changing, at most ``SETTLE_SECONDS``.
"""
from __future__ import annotations

import copy
import json
import time
from typing import Any

import httpx

from tests.cases.harness import CaseRunner
from tests.factories import Api
from tests.specs.conftest import SpecDriver

# How long a live server gets to finish what a step set going (system tasks, decides).
SETTLE_SECONDS = 8.0
# The pause between two reads while waiting for a workflow to settle.
SETTLE_POLL_SECONDS = 0.2
HTTP_TIMEOUT_SECONDS = 30.0


class HttpResponse:
    """The parts of a ``django.test`` response the harness reads: ``status_code``,
    ``content`` (bytes), ``json()`` and headers by ``resp["Content-Type"]``."""

    def __init__(self, resp: httpx.Response):
        self.status_code = resp.status_code
        self.content = resp.content
        self.headers = resp.headers

    def json(self) -> Any:
        return json.loads(self.content)

    def __getitem__(self, name: str) -> str:
        return self.headers[name]


class HttpClient:
    """Stands in for ``django.test.Client`` in ``tests.factories.Api`` and the harness:
    the same ``get(path, content_type=)`` / ``post(path, data=, content_type=)`` calls, sent
    over HTTP to ``origin`` (``http://127.0.0.1:PORT``, no ``/api``: the callers add it)."""

    def __init__(self, origin: str, headers: dict | None = None):
        self.origin = origin.rstrip("/")
        self.headers = dict(headers or {})
        self.http = httpx.Client(timeout=HTTP_TIMEOUT_SECONDS, headers=self.headers)

    def _send(self, method: str, path: str, data: str | None, content_type: str) -> HttpResponse:
        headers = {"Content-Type": content_type, "Accept": "application/json, text/plain, */*"}
        return HttpResponse(self.http.request(method, self.origin + path, content=data, headers=headers))

    def get(self, path: str, content_type: str = "application/json") -> HttpResponse:
        return self._send("GET", path, None, content_type)

    def post(self, path: str, data: str | None = None, content_type: str = "application/json") -> HttpResponse:
        return self._send("POST", path, data, content_type)

    def put(self, path: str, data: str | None = None, content_type: str = "application/json") -> HttpResponse:
        return self._send("PUT", path, data, content_type)

    def delete(self, path: str, data: str | None = None, content_type: str = "application/json") -> HttpResponse:
        return self._send("DELETE", path, data, content_type)

    def fresh(self) -> "HttpClient":
        """Another client to the same server (one per thread)."""
        return HttpClient(self.origin, self.headers)

    def close(self) -> None:
        self.http.close()


def origin_of(api_url: str) -> str:
    """``http://127.0.0.1:PORT`` of an API base URL ``http://127.0.0.1:PORT/api``."""
    url = api_url.rstrip("/")
    return url[: -len("/api")] if url.endswith("/api") else url


def comparable_task_defs(case: dict) -> dict:
    """The case with each TaskDef's ``responseTimeoutSeconds: 0`` replaced by the longest
    one Conductor accepts for it (``timeoutSeconds`` if set, else its default 3600 s).

    The fixtures write 0 for "no response timeout", which we accept and Conductor OSS
    refuses (``@Min(1)`` on TaskDef.responseTimeoutSeconds: a 400 at registration, see
    docs/differences.md); no case runs anywhere near that long, so on both servers the
    response timeout then never fires, as 0 means on ours."""
    out = copy.deepcopy(case)
    for task_def in out.get("taskDefs") or []:
        if task_def.get("responseTimeoutSeconds") == 0:
            task_def["responseTimeoutSeconds"] = task_def.get("timeoutSeconds") or 3600
    return out


class RemoteCaseRunner(CaseRunner):
    """``CaseRunner`` on a live server: real time, and expectations given time to settle."""

    def __init__(self, case: dict, api_url: str):
        super().__init__(comparable_task_defs(case), Api(HttpClient(origin_of(api_url))), clock=None, jobs=[])
        self.mock_url = self.mock.base_url if self.mock is not None else None

    def thread_api(self) -> Api:
        return Api(self.api.client.fresh())

    def tick(self, seconds: float = 0.25) -> None:
        time.sleep(seconds)

    def drain_jobs(self) -> None:  # the live server runs its own jobs
        return None

    def step_check(self, step: dict) -> None:
        within = max(float(step.get("withinSeconds", 0)), SETTLE_SECONDS)
        super().step_check({**step, "withinSeconds": within})

    def verify(self, spec: dict, where: str) -> None:
        if where != "expect":  # checks wait in step_check
            return super().verify(spec, where)
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            try:
                return super().verify(spec, where)
            except AssertionError:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(SETTLE_POLL_SECONDS)


class RemoteSpecDriver(SpecDriver):
    """``SpecDriver`` on a live server. It remembers the workflows it starts, lets them
    settle where the in-process driver runs its jobs, and terminates the ones still running
    at the end of the test (a live server keeps its queues between tests)."""

    def __init__(self, api_url: str):
        super().__init__(Api(HttpClient(origin_of(api_url))), clock=None, jobs=[])
        self.started: list[str] = []

    def _state(self) -> list:
        out = []
        for wid in self.started:
            resp = self.api.get(f"/workflow/{wid}", {"includeTasks": True})
            if resp.status_code != 200:
                out.append((wid, resp.status_code))
                continue
            wf = resp.json()
            out.append((wid, wf["status"], [(t["taskId"], t["status"], t.get("subWorkflowId")) for t in wf["tasks"]]))
        return out

    def drain(self) -> None:
        """Wait until the started workflows look the same twice in a row (at most
        ``SETTLE_SECONDS``)."""
        deadline = time.monotonic() + SETTLE_SECONDS
        time.sleep(SETTLE_POLL_SECONDS)
        before = self._state()
        while time.monotonic() < deadline:
            time.sleep(SETTLE_POLL_SECONDS * 2)
            now = self._state()
            if now == before:
                return
            before = now

    def tick(self, seconds: float = 0.25) -> None:
        time.sleep(seconds)
        self.drain()

    def start(self, name: str, input: dict | None = None, version: int | None = None, **request) -> str:
        wid = super().start(name, input, version, **request)
        self.started.append(wid)
        self.drain()  # again, now watching the new run too
        return wid

    def cleanup(self) -> None:
        for wid in self.started:
            self.api.delete(f"/workflow/{wid}", params={"reason": "reference run: end of test"})
        self.api.client.close()
