"""The production topology under SIGKILL: one PostgreSQL, one Redis, two servers
(``deploy/server.sh``) on two ports, two django-q2 clusters (``deploy/cluster.sh``) on
the Redis broker, channels-redis, the schema from ``deploy/migrate.sh``: the recipe's own
commands, run as processes.

200 workflows (SIMPLE a -> WAIT 1 s -> HTTP (a loopback stub answering after 0.2 s) ->
SUB_WORKFLOW (INLINE) -> SIMPLE b -> INLINE -> SIMPLE c) are started through both
servers while the official SDKs' workers poll both: a ``conductor-python``
``TaskHandler`` (tests/crash/sdk_workers.py) and a ``@io-orkes/conductor-javascript``
``TaskManager`` (tests/ts/scale_out_worker.ts) per server, each its own process
configured from ``CONDUCTOR_SERVER_URL`` and an access key, each recording every task
its polls were handed. Mid-run, the cluster holding the sweeper lease is killed with
SIGKILL and never comes back, and server A is killed and restarted. Checked, bounded
in time:

* every workflow COMPLETED with the expected output; each reference has exactly one
  COMPLETED task, whose output was computed for that very task (``delivery``); no
  taskId was handed to two workers; both SDKs did work through both servers;
* the sweeper lease moved to a worker of the surviving cluster (waited for up to
  ``HANDOVER_WAIT_SECONDS``; how soon is printed: the lease's timing is tested with
  short leases in tests/engine/test_cluster_leases.py, not asserted here, issue #14);
* a signed-in browser's live page on server A stays open through 7 s of silence and
  shows a poll and a completion made through server B (page polling slowed to an hour);
* SIGTERM stops the surviving cluster and a server within ``STOP_LIMIT_SECONDS``, and
  the stopped cluster leaves the sweeper lease released;
* every HTTP task, those in flight in the killed cluster included, ended; a call cut by
  the kill is made again (at-least-once), never recorded twice. How long after being
  scheduled is printed, not asserted: on a loaded machine the survivor's backlog
  decides it (one waited 47 s for a worker, issue #14); the re-dispatch of a task lost
  with its cluster (5 s, then half its age) is tested with a fake clock in
  tests/engine/test_cluster_leases.py.

Needs PostgreSQL (``scripts/with_postgres.sh``) and redis-server. The figures measured
are printed.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.crash.harness import (
    _group_members,
    call_until_answered,
    correlation_id,
    expected_output,
    run_thread,
    task_defs,
)
from tests.crash.wsclient import WebSocket
from tests.e2e.conftest import PostgresDatabase, _is_postgres, tail
from tests.support.http_stub import HttpStub, Reply, StubRequest
from tests.redis_server import free_port, have_redis_server, start_redis, stop_redis

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.scale_out, pytest.mark.timeout(400),
              pytest.mark.skipif(not have_redis_server(), reason="needs redis-server")]

REPO_ROOT = Path(__file__).resolve().parents[2]
TS_DIR = REPO_ROOT / "tests" / "ts"
WORKFLOW_NAME = "scale_chain"
CHILD_NAME = "scale_child"
WORKFLOWS = 200
START_PACE_SECONDS = 0.15        # per starter (one per server): 200 starts over ~15 s
SDK_FLEETS = ("py-a", "py-b", "ts-a", "ts-b")  # SDK (Python, TypeScript) x server (A, B)
KILL_AFTER_STARTS = 80           # the kills land mid-run
SERVER_DOWN_SECONDS = 1.5
HTTP_DELAY_SECONDS = 0.2         # the stub answers after this: kills catch calls in flight
HTTP_TIMEOUT_MS = 60_000         # the HTTP task's connect/read timeouts: a bound, not a speed (the
                                 # stub in this process took over 5 s to answer at load 45, #14)
HANDOVER_WAIT_SECONDS = 120      # a bound; measured ~1-6 s (a 5 s lease), printed
SLOW_HTTP_SECONDS = 40           # HTTP spans this long are listed in the report (not a failure)
STARTS_SECONDS = 90
RECOVERY_SECONDS = 200         # a loaded machine (2 cores, other jobs) needs the margin
WORKER_STOP_SECONDS = 20
STOP_LIMIT_SECONDS = 30
LIVE_IDLE_SECONDS = 7            # longer than channels-redis's 5 s blocking read
LIVE_LIMIT_SECONDS = 120         # a bound, not a speed: a delta through Redis takes well under a second
LIVE_POLL_SECONDS = 3600         # the page's own polling: it cannot explain a delta within the bound
Q_WORKERS = 4                    # per cluster: one survivor alone keeps up with the HTTP calls


def workflow_defs(stub_url: str) -> list[dict]:
    child = {"name": CHILD_NAME, "version": 1, "schemaVersion": 2, "ownerEmail": "scale@example.com",
             "tasks": [{"name": "double", "taskReferenceName": "double", "type": "INLINE",
                        "inputParameters": {"evaluatorType": "javascript", "v": "${workflow.input.v}",
                                            "expression": "$.v * 2"}}],
             "outputParameters": {"v2": "${double.output.result}"}}
    parent = {
        "name": WORKFLOW_NAME, "version": 1, "schemaVersion": 2, "ownerEmail": "scale@example.com",
        "timeoutSeconds": 0,
        "tasks": [
            {"name": "crash_a", "taskReferenceName": "a", "type": "SIMPLE", "inputParameters": {"n": "${workflow.input.n}"}},
            {"name": "pause", "taskReferenceName": "pause", "type": "WAIT", "inputParameters": {"duration": "1s"}},
            {"name": "call", "taskReferenceName": "call", "type": "HTTP",
             "inputParameters": {"http_request": {"uri": f"{stub_url}/hit/${{workflow.workflowId}}", "method": "GET",
                                                  "connectionTimeOut": HTTP_TIMEOUT_MS, "readTimeOut": HTTP_TIMEOUT_MS}}},
            {"name": "child", "taskReferenceName": "child", "type": "SUB_WORKFLOW",
             "subWorkflowParam": {"name": CHILD_NAME, "version": 1}, "inputParameters": {"v": "${a.output.value}"}},
            {"name": "crash_b", "taskReferenceName": "b", "type": "SIMPLE", "inputParameters": {"fromA": "${a.output.value}"}},
            {"name": "calc", "taskReferenceName": "calc", "type": "INLINE",
             "inputParameters": {"evaluatorType": "javascript", "fromB": "${b.output.value}", "expression": "$.fromB * 2"}},
            {"name": "crash_c", "taskReferenceName": "c", "type": "SIMPLE", "inputParameters": {"calc": "${calc.output.result}"}},
        ],
        "outputParameters": {"a": "${a.output.value}", "b": "${b.output.value}", "calc": "${calc.output.result}",
                             "c": "${c.output.value}", "http": "${call.output.response.body.ok}",
                             "child": "${child.output.v2}"},
    }
    return [child, parent]


class HttpTarget:
    """The HTTP task's target (a loopback ``HttpStub``): ``GET /hit/<workflowId>`` answers
    ``{"ok": true}`` after ``HTTP_DELAY_SECONDS``; ``hits`` counts calls per workflow and
    ``times`` keeps when each came (epoch seconds)."""

    def __init__(self):
        self.hits: Counter = Counter()
        self.times: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self._stub = HttpStub(self._answer)
        self.url = self._stub.url

    def _answer(self, request: StubRequest) -> Reply:
        key = request.path.rsplit("/", 1)[-1]
        with self._lock:
            self.hits[key] += 1
            self.times.setdefault(key, []).append(time.time())
        time.sleep(HTTP_DELAY_SECONDS)
        return Reply(200, {"ok": True})

    def close(self):
        self._stub.close()


class Topology:
    """The processes of the deployment, each in a session of its own (its PID is its
    process group), started with the recipe's scripts; ``kill`` sends SIGKILL to exactly
    that group and waits until it is empty."""

    def __init__(self, workdir: Path, database_url: str, redis_url: str):
        self.workdir = workdir
        self.database_url = database_url
        self.processes: dict[str, subprocess.Popen] = {}
        self.ports: dict[str, int] = {}
        self.env = {**os.environ, "DATABASE_URL": database_url, "Q_REDIS_URL": redis_url,
                    "CHANNEL_REDIS_URL": redis_url, "SECRET_KEY": secrets.token_hex(32),
                    "VENV": str(Path(sys.executable).parent.parent), "Q_WORKERS": str(Q_WORKERS),
                    "Q_CLUSTER_NAME": f"scale{secrets.token_hex(3)}", "DB_POOL_MAX": "8",
                    "LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1",
                    # the live pages' own polling is slowed: only Redis can explain a prompt delta
                    "UI_LIVE_POLL_SECONDS": str(LIVE_POLL_SECONDS), "CONDUCTOR_API_AUTH": "on"}

    def log_path(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def migrate(self) -> None:
        subprocess.run([str(REPO_ROOT / "deploy" / "migrate.sh")], cwd=REPO_ROOT, env=self.env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=180)

    def access_key(self, name: str, role: str) -> dict:
        """A new access key (``manage.py create_access_key``, as an operator makes one):
        ``{"CONDUCTOR_AUTH_KEY": ..., "CONDUCTOR_AUTH_SECRET": ...}``, what the SDKs read."""
        out = subprocess.run([sys.executable, "manage.py", "create_access_key", name, "--role", role, "--env"],
                             cwd=REPO_ROOT, env=self.env, capture_output=True, text=True, timeout=120, check=True).stdout
        return dict(line.split("=", 1) for line in out.split())

    def access_token(self, api: str) -> dict:
        """An admin access key exchanged for a token: ``{"X-Authorization": token}`` for
        every /api call."""
        values = self.access_key("scale-out", "admin")
        r = httpx.post(f"{api}/token", json={"keyId": values["CONDUCTOR_AUTH_KEY"],
                                             "keySecret": values["CONDUCTOR_AUTH_SECRET"]}, timeout=10)
        r.raise_for_status()
        return {"X-Authorization": r.json()["token"]}

    def session_cookie(self) -> str:
        """``sessionid=...`` of a signed-in superuser (what a browser holds)."""
        code = ("from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY\n"
                "from django.contrib.auth.models import User\n"
                "from django.contrib.sessions.backends.db import SessionStore\n"
                "u = User.objects.create_superuser('ops', 'ops@example.com', 'x')\n"
                "s = SessionStore(); s[SESSION_KEY] = str(u.pk)\n"
                "s[BACKEND_SESSION_KEY] = 'django.contrib.auth.backends.ModelBackend'\n"
                "s[HASH_SESSION_KEY] = u.get_session_auth_hash(); s.create(); print('SID=' + s.session_key)")
        out = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=REPO_ROOT, env=self.env,
                             capture_output=True, text=True, timeout=120, check=True).stdout
        return "sessionid=" + next(line[4:] for line in out.splitlines() if line.startswith("SID="))

    def spawn(self, name: str, script: str, **env: str) -> None:
        """Run the recipe's ``deploy/<script>`` with the shared environment plus ``env``."""
        self.spawn_argv(name, [str(REPO_ROOT / "deploy" / script)], REPO_ROOT, {**self.env, **env})

    def spawn_argv(self, name: str, argv: list[str], cwd: Path, env: dict) -> None:
        """Run ``argv`` as the process ``name`` (output in ``<name>.log``)."""
        with open(self.log_path(name), "ab") as out:
            self.processes[name] = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                                    stdin=subprocess.DEVNULL, start_new_session=True)

    def sdk_workers(self, name: str, api: str, key: dict, ledger_dir: Path, node: str) -> None:
        """Start the SDK worker fleet ``name`` (``py-*``: conductor-python's TaskHandler,
        tests/crash/sdk_workers.py; ``ts-*``: the TypeScript SDK's TaskManager,
        tests/ts/scale_out_worker.ts) on the server ``api``, with the access key ``key``."""
        env = {**os.environ, **key, "CONDUCTOR_SERVER_URL": api, "SCALE_WORKER_LABEL": name,
               "SCALE_LEDGER_DIR": str(ledger_dir), "PYTHONUNBUFFERED": "1", "NODE_NO_WARNINGS": "1",
               # one process per Python fleet (an SDK option): the workers run as its threads
               "CONDUCTOR_WORKER_ISOLATION": "thread",
               "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)}
        env.pop("DATABASE_URL", None)
        if name.startswith("py-"):
            self.spawn_argv(name, [sys.executable, "-m", "tests.crash.sdk_workers"], REPO_ROOT, env)
        else:
            self.spawn_argv(name, [node, "--import", "tsx", "scale_out_worker.ts"], TS_DIR, env)

    def server(self, name: str) -> str:
        port = self.ports.setdefault(name, free_port())
        self.spawn(name, "server.sh", PORT=str(port), BIND="127.0.0.1")
        return f"http://127.0.0.1:{port}"

    def wait_healthy(self, url: str, limit: float = 60) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"{url} not healthy:\n" + "\n".join(tail(self.log_path(n), 30) for n in self.processes))

    def kill(self, name: str) -> None:
        proc = self.processes.pop(name)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _group_members(proc.pid):
            assert time.monotonic() < deadline, f"process group of {name} did not end"
            time.sleep(0.05)

    def terminate(self, name: str, limit: float) -> float:
        """SIGTERM to the process ``name`` (its main process only, as systemd's
        KillMode=mixed does); seconds until its whole group is gone (at most ``limit``)."""
        proc = self.processes[name]
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        while _group_members(proc.pid) or proc.poll() is None:
            if time.monotonic() - started > limit:
                return float("inf")
            time.sleep(0.05)
        self.processes.pop(name)
        return time.monotonic() - started

    def group_of(self, pid: int) -> str | None:
        """Which of our processes' groups ``pid`` belongs to."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                pgid = int(f.read().rsplit(")", 1)[-1].split()[2])
        except (OSError, ValueError, IndexError):
            return None
        return next((name for name, p in self.processes.items() if p.pid == pgid), None)

    def kill_all(self) -> None:
        for name in list(self.processes):
            self.kill(name)


def _lease(database_url: str) -> tuple[str, int] | None:
    import psycopg

    with psycopg.connect(database_url, connect_timeout=5) as conn:
        row = conn.execute("SELECT holder, expires_at FROM engine_sweeper_lease WHERE name = 'sweeper'").fetchone()
    return (row[0], int(row[1])) if row else None


def _holder_group(topology: Topology, database_url: str) -> str | None:
    """The cluster whose worker holds a live sweeper lease now (None if none)."""
    lease = _lease(database_url)
    if not lease or lease[1] < time.time() * 1000:
        return None
    return topology.group_of(int(lease[0].split(":")[1]))


@pytest.fixture
def topology(tmp_path):
    session_url = os.environ.get("DATABASE_URL", "")
    if not _is_postgres(session_url):
        pytest.skip("the scale-out topology runs on PostgreSQL (scripts/with_postgres.sh)")
    pg = PostgresDatabase(session_url)
    redis_proc, redis_url = start_redis(tmp_path)
    topo = Topology(tmp_path, pg.url, redis_url)
    try:
        yield topo
    finally:
        topo.kill_all()
        stop_redis(redis_proc)
        pg.drop()


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` binary, with the TypeScript SDK installed in ``tests/ts/node_modules``."""
    binary = shutil.which("node")
    if binary is None:
        pytest.fail("node is not installed: the scale-out test runs TypeScript SDK workers (Node.js 18+)")
    if not (TS_DIR / "node_modules" / "@io-orkes" / "conductor-javascript" / "package.json").exists() or \
            not (TS_DIR / "node_modules" / "tsx").exists():
        pytest.fail("the TypeScript SDK is not installed: run `make test` (or `cd tests/ts && npm ci --legacy-peer-deps`)")
    return binary


def test_two_servers_two_clusters_survive_sigkill(topology, node, tmp_path):
    topo = topology
    stub = HttpTarget()
    try:
        _scenario(topo, stub, node, tmp_path / "ledger")
    finally:
        stub.close()


def _describe(wf: dict) -> str:
    """One execution's tasks, for a failure message."""
    lines = [f"{wf['workflowId']} {wf['status']} {wf.get('reasonForIncompletion') or ''}"]
    lines += [f"  {t['referenceTaskName']:<6} {t['taskType']:<12} {t['status']:<11} retry {t['retryCount']} "
              f"polls {t['pollCount']} worker {t.get('workerId')} {t.get('reasonForIncompletion') or ''}"
              for t in sorted(wf.get("tasks") or [], key=lambda t: t["seq"])]
    return "\n".join(lines)


def _read_ledger(ledger_dir: Path) -> list[dict]:
    """Every delivery the SDK workers recorded (one JSON object per line, all files)."""
    return [json.loads(line) for path in sorted(ledger_dir.glob("*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def _scenario(topo: Topology, stub: HttpTarget, node: str, ledger_dir: Path) -> None:
    ledger_dir.mkdir()
    t0 = time.monotonic()
    deadline = t0 + STARTS_SECONDS + RECOVERY_SECONDS
    topo.migrate()
    url_a, url_b = topo.server("server-a"), topo.server("server-b")
    topo.spawn("cluster-1", "cluster.sh")
    topo.spawn("cluster-2", "cluster.sh")
    topo.wait_healthy(url_a)
    topo.wait_healthy(url_b)
    api_a, api_b = f"{url_a}/api", f"{url_b}/api"
    auth = topo.access_token(api_b)  # a token from one server is good on every server (same SECRET_KEY)
    http_b = httpx.Client(base_url=api_b, timeout=10, headers=auth)
    assert http_b.post("/metadata/taskdefs", json=task_defs()).status_code in (200, 204)
    for definition in workflow_defs(stub.url):
        r = http_b.post("/metadata/workflow", json=definition)
        assert r.status_code in (200, 204), r.text
    live = _live_page(topo, url_a, http_b)
    # a sweeper holder among the clusters' workers
    until = time.monotonic() + 60
    while _holder_group(topo, topo.database_url) not in ("cluster-1", "cluster-2"):
        assert time.monotonic() < until, f"no sweeper thread took the lease: {_lease(topo.database_url)}"
        time.sleep(0.2)

    worker_key = topo.access_key("scale-out-workers", "worker")
    for fleet in SDK_FLEETS:
        topo.sdk_workers(fleet, api_a if fleet.endswith("-a") else api_b, worker_key, ledger_dir, node)
    errors: list[str] = []
    ids_a: dict[int, str] = {}
    ids_b: dict[int, str] = {}
    run_key = f"scale-{uuid.uuid4().hex[:8]}"
    half = WORKFLOWS // 2
    starters = [run_thread(errors, _start, api_a, f"{run_key}-a", half, ids_a, deadline, auth),
                run_thread(errors, _start, api_b, f"{run_key}-b", half, ids_b, deadline, auth)]

    while len(ids_a) + len(ids_b) < KILL_AFTER_STARTS and time.monotonic() < deadline:
        time.sleep(0.05)
    victim = _holder_group(topo, topo.database_url)
    assert victim in ("cluster-1", "cluster-2")
    survivor = "cluster-2" if victim == "cluster-1" else "cluster-1"
    killed_at = time.monotonic()
    killed_epoch = time.time()
    topo.kill(victim)            # never restarted
    topo.kill("server-a")
    time.sleep(SERVER_DOWN_SECONDS)
    topo.server("server-a")      # same port
    handover = None
    while time.monotonic() - killed_at < HANDOVER_WAIT_SECONDS:
        if _holder_group(topo, topo.database_url) == survivor:
            handover = time.monotonic() - killed_at
            break
        time.sleep(0.1)
    assert handover is not None, f"the sweeper lease did not move to {survivor}: {_lease(topo.database_url)}"
    topo.wait_healthy(url_a)

    for t in starters:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not errors, errors
    cids = [correlation_id(f"{run_key}-a", n) for n in range(half)] + \
           [correlation_id(f"{run_key}-b", n) for n in range(half)]
    assert len(ids_a) + len(ids_b) == WORKFLOWS

    http_a = httpx.Client(base_url=api_a, timeout=30, headers=auth)
    workflows: list[dict] = []
    while time.monotonic() < deadline:
        workflows = _correlated(http_a, cids, deadline)
        if all(w["status"] in ("COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED") for w in workflows):
            break
        time.sleep(1)
    elapsed = time.monotonic() - t0
    worker_stops = {fleet: topo.terminate(fleet, WORKER_STOP_SECONDS) for fleet in SDK_FLEETS}
    deliveries = _read_ledger(ledger_dir)

    not_done = [w for w in workflows if w["status"] != "COMPLETED"]
    assert not not_done, (f"{len(not_done)} not COMPLETED; SDK deliveries per fleet "
                          f"{Counter(d['worker'].rsplit('-', 1)[0] for d in deliveries)}, SIGTERM stops {worker_stops}\n"
                          + "\n".join(_describe(w) for w in not_done[:3]) + "\n"
                          + "\n".join(f"--- {name}\n{tail(topo.log_path(name), 15)}"
                                      for name in (*SDK_FLEETS, "server-a", "server-b", survivor)))
    assert len(workflows) == WORKFLOWS
    http_spans = []
    slow: list[str] = []
    kept_by: set[str] = set()
    for wf in workflows:
        n = int(wf["input"]["n"])
        out = wf["output"]
        assert {k: out[k] for k in ("a", "b", "calc", "c")} == expected_output(n), wf["workflowId"]
        assert out["http"] is True and out["child"] == expected_output(n)["a"] * 2
        completed = [t for t in wf["tasks"] if t["status"] == "COMPLETED"]
        by_ref = Counter(t["referenceTaskName"] for t in completed)
        assert all(by_ref[ref] == 1 for ref in ("a", "pause", "call", "child", "b", "calc", "c")), by_ref
        for t in completed:
            if t["referenceTaskName"] in ("a", "b", "c"):  # the result kept is the one computed for that task
                assert t["outputData"]["delivery"] == t["taskId"], (wf["workflowId"], t)
                kept_by.add(t["workerId"])
        call = next(t for t in wf["tasks"] if t["referenceTaskName"] == "call")
        http_spans.append((call["endTime"] - call["scheduledTime"]) / 1000)
        if http_spans[-1] >= SLOW_HTTP_SECONDS:
            rel = {k: round(call[k] / 1000 - killed_epoch, 1) for k in ("scheduledTime", "startTime", "updateTime",
                                                                          "endTime")}
            slow.append(f"{wf['workflowId']} call {rel} polls {call['pollCount']} worker {call.get('workerId')} "
                        f"stub hits at {[round(t - killed_epoch, 1) for t in stub.times.get(wf['workflowId'], [])]}")
    # no taskId handed to two workers (nor twice to one); every SDK fleet did work
    by_task = Counter(d["taskId"] for d in deliveries)
    assert all(n == 1 for n in by_task.values()), [(tid, n) for tid, n in by_task.items() if n > 1][:5]
    mine = {w["workflowId"] for w in workflows}
    fleets = Counter(d["worker"].rsplit("-", 1)[0] for d in deliveries if d["workflowId"] in mine)
    assert set(fleets) == set(SDK_FLEETS), fleets
    assert {w.split("-")[0] for w in kept_by} == {"py", "ts"}, kept_by
    redone = sum(1 for n in Counter((d["workflowId"], d["ref"]) for d in deliveries if d["workflowId"] in mine).values()
                 if n > 1)
    repeated = sum(1 for n in stub.hits.values() if n > 1)
    # calls the killed cluster had in flight (first hit before the kill): seconds from the
    # SIGKILL to the call made again by the survivor
    redispatched = sorted(times[1] - killed_epoch for times in stub.times.values()
                          if len(times) > 1 and times[0] < killed_epoch)
    # a clean stop on SIGTERM, within the units' budgets (deploy/systemd: 70 s and 20 s)
    cluster_stop = topo.terminate(survivor, STOP_LIMIT_SECONDS)
    server_stop = topo.terminate("server-b", STOP_LIMIT_SECONDS)
    assert cluster_stop < STOP_LIMIT_SECONDS and server_stop < STOP_LIMIT_SECONDS, (cluster_stop, server_stop)
    assert all(t < WORKER_STOP_SECONDS for t in worker_stops.values()), f"SDK workers' stop on SIGTERM: {worker_stops}"
    lease = _lease(topo.database_url)
    assert lease and lease[1] == 0, f"a stopped cluster releases the sweeper lease: {lease}"
    print(f"\nscale-out: {WORKFLOWS} workflows COMPLETED in {elapsed:.1f} s; sweeper lease moved to the survivor "
          f"{handover:.1f} s after the SIGKILL; HTTP task span max {max(http_spans):.1f} s, "
          f"p50 {sorted(http_spans)[len(http_spans) // 2]:.1f} s; HTTP calls made again after the kill: {repeated} "
          f"(cut by the kill and made again {[round(t, 1) for t in redispatched]} s after it); "
          f"SDK deliveries {len(deliveries)} ({dict(fleets)}), tasks handed out again after the kills {redone}; "
          f"SDK workers stopped on SIGTERM in {max(worker_stops.values()):.1f} s; "
          f"SIGTERM stop: cluster {cluster_stop:.1f} s, server {server_stop:.1f} s; live page on A: survived "
          f"{LIVE_IDLE_SECONDS} s idle, poll through B seen {live[0]:.2f} s later, completion {live[1]:.2f} s later")
    if slow:
        print(f"HTTP tasks over {SLOW_HTTP_SECONDS} s (seconds after the kill):\n" + "\n".join(slow[:10]))


def _live_page(topo: Topology, url_a: str, http_b: httpx.Client) -> tuple[float, float]:
    """A signed-in browser's live page on server A stays open while idle, and shows a
    poll and a completion made through server B (only channels-redis can carry them:
    the page's own polling is slowed to an hour). Returns both latencies (seconds)."""
    assert http_b.post("/metadata/taskdefs", json=[{"name": "scale_live", "retryCount": 0,
                                                    "responseTimeoutSeconds": 600, "timeoutSeconds": 0,
                                                    "ownerEmail": "scale@example.com"}]).status_code in (200, 204)
    definition = {"name": "scale_live", "version": 1, "schemaVersion": 2, "ownerEmail": "scale@example.com",
                  "tasks": [{"name": "scale_live", "taskReferenceName": "live", "type": "SIMPLE"}]}
    assert http_b.post("/metadata/workflow", json=definition).status_code in (200, 204)
    wf_id = http_b.post("/workflow/scale_live", json={}).text.strip()
    ws = WebSocket("127.0.0.1", int(url_a.rsplit(":", 1)[1]), f"/ws/executions/{wf_id}/", topo.session_cookie())
    try:
        assert ws.receive(LIVE_LIMIT_SECONDS)["type"] == "snapshot"
        with pytest.raises(TimeoutError):
            ws.receive(LIVE_IDLE_SECONDS)  # nothing happens: the channel must stay open
        sent = time.monotonic()
        [task] = http_b.get("/tasks/poll/batch/scale_live", params={"workerid": "live-w", "count": 1}).json()
        delta = ws.receive(LIVE_LIMIT_SECONDS)
        polled = time.monotonic() - sent
        assert delta["type"] == "delta" and {r["status"] for r in delta["data"]["tasks"]} == {"IN_PROGRESS"}
        sent = time.monotonic()
        r = http_b.post("/tasks", json={"workflowInstanceId": wf_id, "taskId": task["taskId"], "status": "COMPLETED",
                                        "workerId": "live-w", "outputData": {}})
        assert r.status_code == 200, r.text
        while True:
            delta = ws.receive(LIVE_LIMIT_SECONDS)
            if delta["data"].get("header", {}).get("status") == "COMPLETED":
                break
        return polled, time.monotonic() - sent
    finally:
        ws.close()


def _start(api: str, run_key: str, count: int, ids: dict, deadline: float, auth: dict) -> None:
    """Start ``count`` workflows through one server; each start carries an idempotency
    key, so one re-sent after the server's kill returns the execution it created."""
    with httpx.Client(base_url=api, timeout=10, headers=auth) as http:
        for n in range(count):
            cid = correlation_id(run_key, n)
            body = {"name": WORKFLOW_NAME, "version": 1, "input": {"n": n}, "correlationId": cid,
                    "idempotencyKey": cid, "idempotencyStrategy": "RETURN_EXISTING"}
            r = call_until_answered(lambda: http.post("/workflow", json=body), deadline)
            assert r.status_code == 200, r.text[:300]
            ids[n] = r.text.strip()
            time.sleep(START_PACE_SECONDS)


def _correlated(http: httpx.Client, cids: list[str], deadline: float) -> list[dict]:
    r = call_until_answered(lambda: http.post(f"/workflow/{WORKFLOW_NAME}/correlated", json=cids,
                                              params={"includeClosed": "true", "includeTasks": "true"}), deadline)
    assert r.status_code == 200, r.text[:300]
    return [w for ws in r.json().values() for w in ws]
