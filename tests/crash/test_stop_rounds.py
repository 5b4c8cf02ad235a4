"""The server always stops (#27): ``make run``'s processes (``scripts/run.sh``: the ASGI
server and ``manage.py qcluster``) and a deployed server and cluster (``deploy/server.sh``,
``deploy/cluster.sh``) are stopped in the middle of every kind of work, round after
round, on a fresh database (SQLite, or PostgreSQL under ``scripts/with_postgres.sh``),
API auth on.

Each round starts the processes, puts in flight: HTTP tasks whose call a loopback stub
holds for ``STUB_DELAY_SECONDS``; workflows whose JSON_JQ_TRANSFORM and INLINE tasks are
evaluated by the cluster's sweeper right at the stop (a 1 s WAIT before them); a long
poll; a ``POST /workflow/execute`` waiting ``EXECUTE_WAIT_SECONDS``; a schedule firing
every second; status-listener deliveries that the receiver holds for a moment. Then:

* ``make-run``: SIGTERM to ``scripts/run.sh`` (what Ctrl-C or a service manager does);
* ``deployed``: SIGTERM to the main process of the server and of the cluster
  (systemd's ``KillMode=mixed``);
* ``tree``: SIGTERM to every process of the server and the cluster at once
  (``kill -- -PGID``, ``pkill``, a process-tree kill): django-q2's own qcluster stayed
  up for good after this one (its main process blocked in ``multiprocessing.Event.set``
  for a Sentinel that had died; see ``apps.engine.cluster``).

Every process started (and every process of their sessions: workers, jq helpers, the
ASGI server's children) must be gone within ``STOP_LIMIT_SECONDS`` (the cluster's grace,
``CONDUCTOR_CLUSTER_STOP_GRACE_SECONDS``, plus the ASGI server's own bound), and the
execute and long-poll clients must have an answer or a closed connection by then.
After the last round the processes are started once more and nothing was lost or
doubled: every workflow COMPLETED with its expected output and one COMPLETED task per
reference; each schedule slot started one workflow; every listener-enabled workflow's
completion was delivered (at least once: a POST cut by the stop is made again, with the
same notification id); an HTTP call was made once per task after an orderly stop
(``make-run``, ``deployed``), at least once after ``tree`` (its SIGTERM kills workers
mid-call; the task lease re-runs the call).

Rounds per mode: ``CONDUCTOR_STOP_ROUNDS`` (default 2, for CI; by hand, e.g. 20).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import psutil
import pytest

from apps.engine.cluster import alive
from tests.crash.conftest import _servers
from tests.e2e.conftest import REPO_ROOT, ConductorServer, PostgresDatabase, ServerStartError, _is_postgres, free_port
from tests.support.http_stub import HttpStub, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

ROUNDS = int(os.environ.get("CONDUCTOR_STOP_ROUNDS") or 2)
GRACE_SECONDS = 20               # the cluster's stop grace for the processes started here
STOP_LIMIT_SECONDS = GRACE_SECONDS + 10
STUB_DELAY_SECONDS = 2.0         # an HTTP call in flight at the stop
LISTENER_DELAY_SECONDS = 0.5     # a listener delivery in flight at the stop
EXECUTE_WAIT_SECONDS = 30
IN_FLIGHT_LIMIT_SECONDS = 60
COMPLETION_LIMIT_SECONDS = 240
HTTP_WORKFLOWS, EVAL_WORKFLOWS = 3, 4
MODES = ("make-run", "deployed", "tree")


# --- processes -------------------------------------------------------------------------

def _tree(roots: list[int]) -> set[int]:
    """Live processes descending from ``roots`` (roots included), plus every live
    process in one of their sessions (an orphan re-parented away stays in its session)."""
    def sid(pid: int):
        try:  # the process may end between any two of these calls
            return os.getsid(pid) if alive(psutil.Process(pid)) else None
        except (ProcessLookupError, psutil.NoSuchProcess):
            return None

    found = set()
    for pid in roots:
        try:
            root = psutil.Process(pid)
            found |= {p.pid for p in [root, *root.children(recursive=True)] if alive(p)}
        except psutil.NoSuchProcess:
            continue
    sessions = {s for s in map(sid, found) if s and s > 1}
    return found | {p.pid for p in psutil.process_iter() if sid(p.pid) in sessions}


class StopServer(ConductorServer):
    """The processes of one mode (see the module doc), restartable on one port and one
    database; ``sessions`` accumulates the session ids seen (checked after each stop)."""

    def __init__(self, workdir: Path, database_url: str, mode: str, env: dict):
        super().__init__(workdir, database_url)
        self.mode = mode
        self.env.update(env)
        self.env.update({"CONDUCTOR_CLUSTER_STOP_GRACE_SECONDS": str(GRACE_SECONDS),
                         "STOP_TIMEOUT": "120",  # scripts/run.sh's own SIGKILL fallback: not before our limit
                         "VENV": str(Path(sys.executable).parent.parent)})

    def start(self) -> None:
        self._run_manage("migrate", "--noinput")
        self._run_manage("install_schedules")
        self._create_key()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/api"
        self.boot()

    def boot(self) -> None:
        if self.mode == "make-run":
            self._spawn("run", [str(REPO_ROOT / "scripts/run.sh"), "127.0.0.1", str(self.port)])
        else:
            self.env["PORT"], self.env["BIND"] = str(self.port), "127.0.0.1"
            self._spawn("server", [str(REPO_ROOT / "deploy/server.sh")])
            self._spawn("cluster", [str(REPO_ROOT / "deploy/cluster.sh")])
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200 and self._cluster_up():
                    return
            except httpx.TransportError:
                pass
            self.assert_alive()
            time.sleep(0.2)
        raise ServerStartError(f"not up at {self.url}:\n{self.diagnostics()}")

    def _cluster_up(self) -> bool:
        """The cluster's workers run (their processes are in the tree)."""
        return sum("qcluster" in _cmdline(p) for p in _tree([p.pid for p in self.processes.values()])) >= 4

    def diagnostics(self) -> str:
        return "\n".join(f"--- {n}\n" + "\n".join(self.log_path(n).read_text(errors="replace").splitlines()[-40:])
                         for n in ("run", "server", "cluster") if self.log_path(n).exists())

    def stop_now(self) -> tuple[float, set[int]]:
        """Stop as the mode says; (seconds until every process of the tree is gone, or
        ``inf``; the processes still alive at ``STOP_LIMIT_SECONDS``)."""
        procs = list(self.processes.values())
        tree = _tree([p.pid for p in procs])
        started = time.monotonic()
        if self.mode == "tree":
            targets = sorted(tree)
        else:
            targets = [p.pid for p in procs]
        for pid in targets:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        while time.monotonic() - started < STOP_LIMIT_SECONDS:
            for p in procs:
                p.poll()
            left = _tree(list(tree))
            if not left and all(p.returncode is not None for p in procs):
                self.processes.clear()
                return time.monotonic() - started, set()
            time.sleep(0.1)
        return float("inf"), _tree(list(tree))

    def kill_everything(self, pids: set[int]) -> None:
        for pid in pids | {p.pid for p in self.processes.values()}:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.processes.values():
            p.wait(10)
        self.processes.clear()

    def kill_all(self) -> None:  # the crash fixture's cleanup contract
        self.kill_everything(_tree([p.pid for p in self.processes.values()]))


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# --- the work --------------------------------------------------------------------------

class Stubs:
    """The HTTP tasks' target (holds each call ``STUB_DELAY_SECONDS``; counts calls per
    workflow) and the status-listener receiver (holds each POST a moment)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.http_hits: Counter = Counter()
        self.http_open = 0
        self.notifications: list[dict] = []
        self.http = HttpStub(self._http)
        self.listener = HttpStub(self._listener)

    def _http(self, request) -> Reply:
        wf = request.path.rsplit("/", 1)[-1]
        with self.lock:
            self.http_hits[wf] += 1
            self.http_open += 1
        try:
            time.sleep(STUB_DELAY_SECONDS)
        finally:
            with self.lock:
                self.http_open -= 1
        return Reply(200, {"echo": wf})

    def _listener(self, request) -> Reply:
        time.sleep(LISTENER_DELAY_SECONDS)
        with self.lock:
            self.notifications.append({"path": request.path, "body": request.json() or {},
                                       "id": request.headers.get("x-conductor-notification-id")})
        return Reply(200, {})

    def close(self) -> None:
        self.http.close()
        self.listener.close()


def definitions(stub_url: str) -> list[dict]:
    owner = {"version": 1, "schemaVersion": 2, "ownerEmail": "stop@example.com", "timeoutSeconds": 0}
    return [
        {**owner, "name": "stop_http", "workflowStatusListenerEnabled": True, "tasks": [
            {"name": "call", "taskReferenceName": "call", "type": "HTTP", "inputParameters": {"http_request": {
                "uri": f"{stub_url}/call/${{workflow.workflowId}}", "method": "POST", "body": {"n": "${workflow.input.n}"},
                "connectionTimeOut": 10_000, "readTimeOut": 30_000}}},
            {"name": "double", "taskReferenceName": "double", "type": "INLINE", "inputParameters": {
                "evaluatorType": "javascript", "n": "${workflow.input.n}", "expression": "$.n * 2"}}],
         "outputParameters": {"echo": "${call.output.response.body.echo}", "double": "${double.output.result}"}},
        {**owner, "name": "stop_eval", "workflowStatusListenerEnabled": True, "tasks": [
            {"name": "pause", "taskReferenceName": "pause", "type": "WAIT", "inputParameters": {"duration": "1s"}},
            {"name": "jq", "taskReferenceName": "jq", "type": "JSON_JQ_TRANSFORM", "inputParameters": {
                "n": "${workflow.input.n}", "queryExpression": "{tripled: (.n * 3)}"}},
            {"name": "js", "taskReferenceName": "js", "type": "INLINE", "inputParameters": {
                "evaluatorType": "javascript", "t": "${jq.output.result.tripled}", "expression": "$.t + 1"}}],
         "outputParameters": {"tripled": "${jq.output.result.tripled}", "plus": "${js.output.result}"}},
        {**owner, "name": "stop_exec", "tasks": [
            {"name": "stop_simple", "taskReferenceName": "simple", "type": "SIMPLE"}]},
        {**owner, "name": "stop_sched", "tasks": [
            {"name": "tick", "taskReferenceName": "tick", "type": "INLINE", "inputParameters": {
                "evaluatorType": "javascript", "expression": "1"}}]},
    ]


def _call(outcomes: dict, key: str, fn) -> None:
    try:
        outcomes[key] = ("answer", fn().status_code)
    except httpx.TimeoutException as exc:
        outcomes[key] = ("client-timeout", type(exc).__name__)
    except httpx.TransportError as exc:
        outcomes[key] = ("closed", type(exc).__name__)


def one_round(server: StopServer, stubs: Stubs, api: httpx.Client, n0: int, started: dict) -> dict:
    """Put every kind of work in flight, stop, and return what the stop did."""
    headers = server.auth_headers()
    for i in range(HTTP_WORKFLOWS):
        n = n0 + i
        started[api.post("/workflow/stop_http", json={"n": n}).raise_for_status().text.strip('"')] = \
            ("stop_http", n)
    outcomes: dict = {}
    slow = [httpx.Client(base_url=server.url, headers=headers, timeout=EXECUTE_WAIT_SECONDS + 60) for _ in range(2)]
    cid = f"exec-{uuid.uuid4().hex[:8]}"
    execute = threading.Thread(target=_call, daemon=True, args=(outcomes, "execute", lambda: slow[0].post(
        "/workflow/execute/stop_exec/1", params={"waitForSeconds": EXECUTE_WAIT_SECONDS},
        json={"name": "stop_exec", "version": 1, "correlationId": cid, "input": {}})))
    worker_id = f"poller-{uuid.uuid4().hex[:8]}"
    poll = threading.Thread(target=_call, daemon=True, args=(outcomes, "poll", lambda: slow[1].get(
        "/tasks/poll/batch/stop_idle", params={"workerid": worker_id, "count": 1, "timeout": 5000})))
    execute.start()
    until = time.monotonic() + IN_FLIGHT_LIMIT_SECONDS
    while stubs.http_open == 0:  # an HTTP call held by the stub
        assert time.monotonic() < until, "no HTTP task call reached the stub"
        time.sleep(0.05)
    for i in range(EVAL_WORKFLOWS):
        n = n0 + 100 + i
        started[api.post("/workflow/stop_eval", json={"n": n}).raise_for_status().text.strip('"')] = \
            ("stop_eval", n)
    poll.start()
    while True:  # the execute wait and the long poll are on the server
        assert time.monotonic() < until, f"the execute call and the long poll never reached the server: {outcomes}"
        running = api.get(f"/workflow/stop_exec/correlated/{cid}", params={"includeClosed": "true"}).json()
        polls = api.get("/tasks/queue/polldata", params={"taskType": "stop_idle"}).json()
        if running and any(p.get("workerId") == worker_id for p in polls):
            break
        time.sleep(0.1)
    started[running[0]["workflowId"]] = ("stop_exec", None)
    time.sleep(0.8)  # the WAITs end: the sweeper evaluates jq and INLINE right now
    in_flight = stubs.http_open
    seconds, left = server.stop_now()
    execute.join(10)
    poll.join(10)
    for c in slow:
        c.close()
    return {"seconds": seconds, "left": left, "outcomes": outcomes, "http_in_flight": in_flight}


def _finish_exec_tasks(api: httpx.Client) -> int:
    """Act as the stop_simple worker: complete whatever is queued."""
    done = 0
    while True:
        tasks = api.get("/tasks/poll/batch/stop_simple", params={"workerid": "finisher", "count": 10,
                                                                 "timeout": 100}).json()
        if not tasks:
            return done
        for t in tasks:
            api.post("/tasks", json={"workflowInstanceId": t["workflowInstanceId"], "taskId": t["taskId"],
                                     "status": "COMPLETED", "outputData": {"ok": True}}).raise_for_status()
            done += 1


@pytest.fixture
def stubs():
    s = Stubs()
    yield s
    s.close()


@pytest.mark.parametrize("mode", MODES)
def test_every_process_stops_within_the_grace_and_nothing_is_lost(mode, stubs, tmp_path):
    session_url = os.environ.get("DATABASE_URL", "")
    pg = PostgresDatabase(session_url) if _is_postgres(session_url) else None
    database_url = pg.url if pg else f"sqlite:///{tmp_path / 'stop.sqlite3'}"
    listener_env = {"CONDUCTOR_WORKFLOW_STATUS_LISTENER": "workflow_publisher",
                    "CONDUCTOR_STATUS_NOTIFIER_URL": stubs.listener.url,
                    "CONDUCTOR_STATUS_NOTIFIER_ENDPOINT_WORKFLOW": "workflow",
                    "CONDUCTOR_STATUS_NOTIFIER_SUBSCRIBED_WORKFLOW_STATUSES": "COMPLETED"}
    server = StopServer(tmp_path, database_url, mode, listener_env)
    _servers.append(server)
    try:
        server.start()
        api = httpx.Client(base_url=server.url, headers=server.auth_headers(), timeout=30)
        api.post("/metadata/taskdefs", json=[
            {"name": n, "retryCount": 0, "responseTimeoutSeconds": 600, "timeoutSeconds": 0,
             "ownerEmail": "stop@example.com"} for n in ("stop_simple", "stop_idle")]).raise_for_status()
        for d in definitions(stubs.http.url):
            api.post("/metadata/workflow", json=d).raise_for_status()
        api.post("/scheduler/schedules", json={
            "name": "stop_every_second", "cronExpression": "* * * * * *",
            "startWorkflowRequest": {"name": "stop_sched", "version": 1, "input": {}}}).raise_for_status()

        started: dict[str, tuple] = {}
        results = []
        for r in range(ROUNDS):
            if r:
                server.boot()
            result = one_round(server, stubs, api, 1000 * (r + 1), started)
            results.append(result)
            if result["left"]:
                cmds = {p: _cmdline(p) for p in result["left"]}
                server.kill_everything(result["left"])
                pytest.fail(f"{mode} round {r}: still running {STOP_LIMIT_SECONDS} s after SIGTERM: {cmds}\n"
                            f"{server.diagnostics()}")
            assert result["outcomes"].get("execute", ("?",))[0] in ("answer", "closed"), result
            assert result["outcomes"].get("poll", ("?",))[0] in ("answer", "closed"), result
            if mode != "tree":  # a SIGTERM to the main processes stops in order, never by the grace's SIGKILL
                forced = [n for n in ("run", "cluster") if server.log_path(n).exists()
                          and "did not stop within" in server.log_path(n).read_text(errors="replace")]
                assert forced == [], f"{mode} round {r}: the cluster was killed at the grace\n{server.diagnostics()}"

        # restart once more: everything in flight at the stops completes, once
        server.boot()
        api.put("/scheduler/schedules/stop_every_second/pause").raise_for_status()
        deadline = time.monotonic() + COMPLETION_LIMIT_SECONDS
        pending = dict(started)
        while pending:
            assert time.monotonic() < deadline, f"not completed after the restart: {pending}"
            _finish_exec_tasks(api)
            for wf_id in list(pending):
                wf = api.get(f"/workflow/{wf_id}", params={"includeTasks": "false"}).json()
                assert wf["status"] in ("RUNNING", "COMPLETED"), (pending[wf_id], wf["status"], wf.get("reasonForIncompletion"))
                if wf["status"] == "COMPLETED":
                    pending.pop(wf_id)
            time.sleep(0.5)

        for wf_id, (name, n) in started.items():
            wf = api.get(f"/workflow/{wf_id}", params={"includeTasks": "true"}).json()
            refs = Counter(t["referenceTaskName"] for t in wf["tasks"] if t["status"] == "COMPLETED")
            assert all(c == 1 for c in refs.values()), (wf_id, refs)
            if name == "stop_http":
                assert wf["output"] == {"echo": wf_id, "double": n * 2}, wf["output"]
                hits = stubs.http_hits[wf_id]
                assert hits >= 1 and (hits == 1 or mode == "tree"), (wf_id, hits)
            elif name == "stop_eval":
                assert wf["output"] == {"tripled": n * 3, "plus": n * 3 + 1}, wf["output"]
        # each schedule slot started one workflow
        fired = api.get("/workflow/search", params={"query": 'workflowType="stop_sched"', "size": 1000}).json()
        slots = Counter()
        for summary in fired["results"]:
            wf = api.get(f"/workflow/{summary['workflowId']}", params={"includeTasks": "false"}).json()
            slots[wf["input"]["_scheduledTime"]] += 1
        assert slots and max(slots.values()) == 1, [s for s, c in slots.items() if c > 1]
        # every listener-enabled completion delivered (at least once, same id on a repeat)
        listened = {wf for wf, (name, _n) in started.items() if name in ("stop_http", "stop_eval")}
        until = time.monotonic() + 60
        while True:
            with stubs.lock:
                delivered = {x["body"].get("workflowId") for x in stubs.notifications if x["path"].endswith("/workflow")}
            if listened <= delivered or time.monotonic() > until:
                break
            time.sleep(0.5)
        assert listened <= delivered, sorted(listened - delivered)
        with stubs.lock:
            ids_per_wf: dict = {}
            for x in stubs.notifications:
                ids_per_wf.setdefault(x["body"].get("workflowId"), set()).add(x["id"])
            posts = len(stubs.notifications)
        assert all(len(ids_per_wf[wf]) == 1 for wf in listened), {wf: ids_per_wf[wf] for wf in listened}
        print(f"\n{mode} ({'PostgreSQL' if pg else 'SQLite'}): {ROUNDS} rounds, stopped in "
              f"{[round(r['seconds'], 1) for r in results]} s (limit {STOP_LIMIT_SECONDS} s); HTTP calls in flight "
              f"at the stops {[r['http_in_flight'] for r in results]}; calls made twice "
              f"{sum(1 for c in stubs.http_hits.values() if c > 1)}; execute/poll "
              f"{[(r['outcomes'].get('execute'), r['outcomes'].get('poll')) for r in results]}; "
              f"schedule slots {len(slots)}; listener POSTs {posts} for {len(listened)} workflows")
    finally:
        server.kill_all()
        _servers.remove(server)
        if pg is not None:
            pg.drop()
