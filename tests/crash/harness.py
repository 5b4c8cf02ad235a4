"""Harness of the crash-safety test: a server whose processes can be killed with SIGKILL
and restarted, SDK-like worker threads that keep a record of everything they did, a
starter that survives crashes, and the checks that compare the engine's history with
that record.

Server: ``CrashServer`` is the e2e ``ConductorServer`` (fresh database, migrate,
install_schedules, uvicorn on 127.0.0.1 at a free port, ``manage.py qcluster``, each in a
session of its own) plus ``kill(name)`` (SIGKILL to the process group of exactly the
process it started, then waits until no member of that group is left) and
``restart(name)`` (same command line, same port, same database).

Workers: one thread per worker, like an SDK worker: batch poll with a long poll, do the
work, ``POST /api/tasks`` with the result; the update is re-sent after a connection
error or a 5xx until it gets an answer or the run's deadline passes. Every delivery
(a task handed to a worker by a poll) is recorded. The work itself is idempotent by
record: its result is computed once per (workflowId, referenceTaskName) and kept in the
ledger; a re-delivery (a retry after a response timeout) answers with the recorded
result, so a task delivered twice never does its work twice.

Times: ``time.monotonic()`` seconds unless a name says ``_ms`` (epoch milliseconds,
as the API returns them).
"""
from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import httpx

from tests.e2e.conftest import ConductorServer, ServerStartError, server_argv, tail

WORKFLOW_NAME = "crash_chain"
# referenceTaskName -> task type, in execution order
REFS = {"a": "crash_a", "pause": "WAIT", "b": "crash_b", "calc": "INLINE", "c": "crash_c"}
WORKER_TYPES = {"crash_a": "a", "crash_b": "b", "crash_c": "c"}
SYSTEM_REFS = ("pause", "calc")
RETRY_COUNT = 2
RESPONSE_TIMEOUT_SECONDS = 5
HTTP_TIMEOUT_SECONDS = 10
LONG_POLL_MS = 500
BATCH_SIZE = 5
RETRY_PAUSE_SECONDS = 0.1


# --- definitions --------------------------------------------------------------------------

def task_defs() -> list[dict]:
    """The worker TaskDefs: two retries without delay, a 5 s response timeout (a task
    whose poll answer died with uvicorn is handed out again) and no overall timeout."""
    return [{
        "name": name,
        "retryCount": RETRY_COUNT,
        "retryLogic": "FIXED",
        "retryDelaySeconds": 0,
        "responseTimeoutSeconds": RESPONSE_TIMEOUT_SECONDS,
        "timeoutSeconds": 0,
        "timeoutPolicy": "TIME_OUT_WF",
        "ownerEmail": "crash@example.com",
    } for name in WORKER_TYPES]


def workflow_def() -> dict:
    """SIMPLE a -> WAIT 1 s -> SIMPLE b -> INLINE -> SIMPLE c; each step feeds the next,
    so the output proves which single result of each step the engine kept."""
    return {
        "name": WORKFLOW_NAME,
        "version": 1,
        "schemaVersion": 2,
        "ownerEmail": "crash@example.com",
        "timeoutSeconds": 0,
        "tasks": [
            {"name": "crash_a", "taskReferenceName": "a", "type": "SIMPLE",
             "inputParameters": {"n": "${workflow.input.n}"}},
            {"name": "pause", "taskReferenceName": "pause", "type": "WAIT",
             "inputParameters": {"duration": "1s"}},
            {"name": "crash_b", "taskReferenceName": "b", "type": "SIMPLE",
             "inputParameters": {"fromA": "${a.output.value}"}},
            {"name": "calc", "taskReferenceName": "calc", "type": "INLINE",
             "inputParameters": {"evaluatorType": "javascript", "fromB": "${b.output.value}",
                                 "expression": "$.fromB * 2"}},
            {"name": "crash_c", "taskReferenceName": "c", "type": "SIMPLE",
             "inputParameters": {"calc": "${calc.output.result}"}},
        ],
        "outputParameters": {"a": "${a.output.value}", "b": "${b.output.value}",
                             "calc": "${calc.output.result}", "c": "${c.output.value}"},
    }


def work(ref: str, task_input: dict) -> int:
    """The workers' work: a pure function of the task input."""
    if ref == "a":
        return int(task_input["n"]) * 3
    if ref == "b":
        return int(task_input["fromA"]) + 1
    if ref == "c":
        return int(task_input["calc"]) + 5
    raise AssertionError(f"no work for {ref}")


def expected_output(n: int) -> dict:
    a = n * 3
    b = a + 1
    calc = b * 2
    return {"a": a, "b": b, "calc": calc, "c": calc + 5}


# --- the server -----------------------------------------------------------------------------

def _group_members(pgid: int) -> list[int]:
    """PIDs of live (not zombie) processes in process group ``pgid`` (read from /proc)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry))
    return members


class CrashServer(ConductorServer):
    """A ``ConductorServer`` whose uvicorn and qcluster can be killed and restarted.

    ``kills``/``restarts`` count per process name; ``server_downtime`` holds, per uvicorn
    kill, the seconds from SIGKILL to a healthy ``/api/health`` of the new process."""

    GROUP_EXIT_TIMEOUT_SECONDS = 10

    def __init__(self, workdir, database_url):
        super().__init__(workdir, database_url)
        self.kills: Counter = Counter()
        self.restarts: Counter = Counter()
        self.killed_at: dict[str, float] = {}
        self.server_downtime: list[float] = []

    def argv(self, name: str) -> list[str]:
        if name == "server":
            return server_argv(self.port)
        if name == "qcluster":
            return [sys.executable, "manage.py", "qcluster"]
        raise ValueError(name)

    def kill(self, name: str, *, crash: bool = True) -> None:
        """SIGKILL the process group of the ``name`` process this object started (its
        PID is the group id: a new session) and wait until that group is empty.
        ``crash=False``: the end of the test, not counted as one of its crashes."""
        proc = self.processes.pop(name)
        pgid = proc.pid
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=self.GROUP_EXIT_TIMEOUT_SECONDS)
        deadline = time.monotonic() + self.GROUP_EXIT_TIMEOUT_SECONDS
        while _group_members(pgid):
            if time.monotonic() > deadline:
                raise ServerStartError(f"process group {pgid} of {name} still has {_group_members(pgid)}")
            time.sleep(0.05)
        if crash:
            self.kills[name] += 1
            self.killed_at[name] = time.monotonic()
        with open(self.log_path(name), "ab") as out:
            out.write(f"\n=== crash test: SIGKILL to process group {pgid} ===\n".encode())

    def restart(self, name: str) -> None:
        """Start ``name`` again with the same command line (same port and database)."""
        if name == "server":
            for _attempt in range(5):
                self._spawn("server", self.argv("server"))
                if self._wait_healthy():
                    break
                self._stop_one("server")
                if "Address already in use" not in tail(self.log_path("server"), 5):
                    raise ServerStartError(f"uvicorn did not come back at {self.url}:\n{self.diagnostics()}")
                time.sleep(0.3)
            else:
                raise ServerStartError(f"uvicorn could not bind port {self.port} again:\n{self.diagnostics()}")
            self.server_downtime.append(time.monotonic() - self.killed_at["server"])
        else:
            self._spawn(name, self.argv(name))
        self.restarts[name] += 1

    def kill_all(self) -> None:
        """End of the test: SIGKILL whatever still runs (it is a crash test; the
        database is thrown away next)."""
        for name in list(self.processes):
            if self.processes[name].poll() is None:
                self.kill(name, crash=False)
            else:
                self.processes.pop(name)


# --- what the workers did ---------------------------------------------------------------------

@dataclass
class Delivery:
    """One task handed to a worker by a poll."""
    workflow_id: str
    ref: str
    task_id: str
    retry_count: int
    worker_id: str
    polled_at: float
    update_attempts: int = 0
    update_status: int | None = None  # HTTP status of the answered update; None: never answered
    answered_at: float | None = None


@dataclass
class Ledger:
    """Deliveries and results, shared by the worker threads."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    deliveries: list[Delivery] = field(default_factory=list)
    by_task_id: dict[str, list[Delivery]] = field(default_factory=lambda: defaultdict(list))
    by_key: dict[tuple[str, str], list[Delivery]] = field(default_factory=lambda: defaultdict(list))
    results: dict[tuple[str, str], int] = field(default_factory=dict)
    work_runs: Counter = field(default_factory=Counter)
    poll_errors: int = 0
    update_retries: int = 0
    server_errors: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def deliver(self, task: dict, worker_id: str) -> Delivery:
        d = Delivery(workflow_id=task["workflowInstanceId"], ref=task["referenceTaskName"], task_id=task["taskId"],
                     retry_count=int(task.get("retryCount") or 0), worker_id=worker_id, polled_at=time.monotonic())
        with self.lock:
            self.deliveries.append(d)
            self.by_task_id[d.task_id].append(d)
            self.by_key[(d.workflow_id, d.ref)].append(d)
        return d

    def result_for(self, d: Delivery, task_input: dict) -> int:
        """The work of (workflowId, ref), done at most once: a re-delivery gets the
        recorded result."""
        key = (d.workflow_id, d.ref)
        with self.lock:
            if key not in self.results:
                self.results[key] = work(d.ref, task_input)
                self.work_runs[key] += 1
            return self.results[key]

    def note(self, attr: str, text: str | None = None) -> None:
        with self.lock:
            if text is None:
                setattr(self, attr, getattr(self, attr) + 1)
            else:
                getattr(self, attr).append(text)


def _send_update(http: httpx.Client, d: Delivery, body: dict, ledger: Ledger, deadline: float) -> None:
    """POST the TaskResult until it is answered (not a connection error, not a 5xx) or
    the deadline passes."""
    while time.monotonic() < deadline:
        d.update_attempts += 1
        try:
            r = http.post("/tasks", json=body)
        except httpx.TransportError:
            ledger.note("update_retries")
            time.sleep(RETRY_PAUSE_SECONDS)
            continue
        if r.status_code >= 500:
            ledger.note("server_errors", f"POST /tasks {d.task_id}: {r.status_code} {r.text[:300]}")
            ledger.note("update_retries")
            time.sleep(RETRY_PAUSE_SECONDS)
            continue
        d.update_status = r.status_code
        d.answered_at = time.monotonic()
        if r.status_code != 200:
            ledger.note("unexpected", f"POST /tasks {d.task_id}: {r.status_code} {r.text[:300]}")
        return


def worker_loop(base_url: str, task_type: str, worker_id: str, ledger: Ledger, stop: threading.Event,
                deadline: float, seed: int, headers: dict | None = None) -> None:
    """One SDK-like worker of ``task_type`` until ``stop`` is set or the deadline passes
    (``headers``: the access token, ``{"X-Authorization": ...}``)."""
    rng = random.Random(seed)
    with httpx.Client(base_url=base_url, timeout=HTTP_TIMEOUT_SECONDS, headers=headers or {}) as http:
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                r = http.get(f"/tasks/poll/batch/{task_type}",
                             params={"workerid": worker_id, "count": BATCH_SIZE, "timeout": LONG_POLL_MS})
            except httpx.TransportError:
                ledger.note("poll_errors")
                time.sleep(RETRY_PAUSE_SECONDS)
                continue
            if r.status_code >= 500:
                ledger.note("server_errors", f"poll {task_type}: {r.status_code} {r.text[:300]}")
                time.sleep(RETRY_PAUSE_SECONDS)
                continue
            if r.status_code != 200:
                ledger.note("unexpected", f"poll {task_type}: {r.status_code} {r.text[:300]}")
                time.sleep(RETRY_PAUSE_SECONDS)
                continue
            for task in r.json():
                d = ledger.deliver(task, worker_id)
                value = ledger.result_for(d, task.get("inputData") or {})
                time.sleep(rng.uniform(0.005, 0.05))  # the work takes a moment: kills land mid-way
                body = {"workflowInstanceId": d.workflow_id, "taskId": d.task_id, "status": "COMPLETED",
                        "workerId": worker_id, "outputData": {"value": value, "delivery": d.task_id}}
                _send_update(http, d, body, ledger, deadline)


def run_thread(errors: list, target, *args) -> threading.Thread:
    """Run ``target(*args)`` in a daemon thread; an exception is appended to ``errors``
    (the test reports them)."""
    def body():
        try:
            target(*args)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(f"{target.__name__}: {exc!r}")
    t = threading.Thread(target=body, daemon=True, name=target.__name__)
    t.start()
    return t


# --- starting the workflows ---------------------------------------------------------------------

def correlation_id(run_key: str, n: int) -> str:
    return f"{run_key}-{n}"


def start_workflows(base_url: str, run_key: str, count: int, pace_seconds: float, ids: dict[int, str],
                    ledger: Ledger, deadline: float, headers: dict | None = None) -> None:
    """Start ``count`` workflows (input ``n`` = 0..count-1), one every ``pace_seconds``.
    Each start carries an idempotency key (RETURN_EXISTING), so a start re-sent after a
    crash that hid its answer returns the execution it already created."""
    with httpx.Client(base_url=base_url, timeout=HTTP_TIMEOUT_SECONDS, headers=headers or {}) as http:
        for n in range(count):
            cid = correlation_id(run_key, n)
            body = {"name": WORKFLOW_NAME, "version": 1, "input": {"n": n}, "correlationId": cid,
                    "idempotencyKey": cid, "idempotencyStrategy": "RETURN_EXISTING"}
            while n not in ids:
                if time.monotonic() > deadline:
                    ledger.note("unexpected", f"start {n}: not answered before the deadline")
                    return
                try:
                    r = http.post("/workflow", json=body)
                except httpx.TransportError:
                    time.sleep(RETRY_PAUSE_SECONDS)
                    continue
                if r.status_code >= 500:
                    ledger.note("server_errors", f"start {n}: {r.status_code} {r.text[:300]}")
                    time.sleep(RETRY_PAUSE_SECONDS)
                    continue
                if r.status_code != 200 or not r.text.strip():
                    ledger.note("unexpected", f"start {n}: {r.status_code} {r.text[:300]}")
                    return
                ids[n] = r.text.strip()
            time.sleep(pace_seconds)


def call_until_answered(fn, deadline: float):
    """Call ``fn()`` (an HTTP request) until it returns a non-5xx answer; connection
    errors and 5xx (a process restarting) are retried until the deadline."""
    last = None
    while time.monotonic() < deadline:
        try:
            r = fn()
        except httpx.TransportError as exc:
            last = exc
            time.sleep(RETRY_PAUSE_SECONDS)
            continue
        if r.status_code < 500:
            return r
        last = f"{r.status_code} {r.text[:300]}"
        time.sleep(RETRY_PAUSE_SECONDS)
    raise AssertionError(f"no answer before the deadline; last: {last!r}")


# --- diagnostics for a failure message --------------------------------------------------------

def engine_rows(database_url: str, workflow_ids: list[str]) -> str:
    """Read-only look at the engine's bookkeeping of some executions (``next_decide_at``,
    epoch ms) and at the sweeper lease, straight from the database: what the API does
    not show, for the message of a test that found executions stuck."""
    wf_sql = ("SELECT workflow_id, status, next_decide_at FROM engine_workflow_execution "
              "WHERE workflow_id IN ({})")
    lease_sql = "SELECT name, holder, expires_at FROM engine_sweeper_lease"
    try:
        if database_url.startswith("sqlite:///"):
            import sqlite3

            conn = sqlite3.connect(f"file:{database_url[len('sqlite:///'):]}?mode=ro", uri=True, timeout=10)
            marks = ",".join("?" for _ in workflow_ids)
        else:
            import psycopg

            conn = psycopg.connect(database_url, connect_timeout=10)
            marks = ",".join("%s" for _ in workflow_ids)
        try:
            cur = conn.cursor()
            cur.execute(wf_sql.format(marks), list(workflow_ids))
            rows = cur.fetchall()
            cur.execute(lease_sql)
            lease = cur.fetchall()
        finally:
            conn.close()
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        return f"(could not read the database: {exc!r})"
    now = int(time.time() * 1000)
    lines = [f"now {now} ms; sweeper lease {lease}"]
    lines += [f"  {wid} {status} next_decide_at {due} ({'none' if due is None else f'{(due - now) / 1000:+.1f}s'})"
              for wid, status, due in rows]
    return "\n".join(lines)


def describe_workflow(wf: dict, ledger: Ledger) -> str:
    """One execution and what the workers did for it, for a failure message."""
    lines = [f"{wf['workflowId']} {wf['status']} (updateTime {wf.get('updateTime')})"]
    for t in sorted(wf.get("tasks") or [], key=lambda t: t["seq"]):
        lines.append(f"  {t['referenceTaskName']:<6} {t['taskType']:<8} {t['status']:<11} retry {t['retryCount']} "
                     f"id {t['taskId']} polls {t['pollCount']} worker {t.get('workerId')} "
                     f"scheduled {t['scheduledTime']} start {t['startTime']} update {t['updateTime']} "
                     f"end {t['endTime']} {t.get('reasonForIncompletion') or ''}")
    for (wid, ref), ds in ledger.by_key.items():
        if wid == wf["workflowId"]:
            for d in ds:
                lines.append(f"  delivered {ref} {d.task_id} to {d.worker_id}: update answered {d.update_status} "
                             f"after {d.update_attempts} attempt(s)")
    return "\n".join(lines)


def log_errors(server: ConductorServer) -> str:
    """How many ERROR/CRITICAL lines each server log holds (all incarnations)."""
    counts = []
    for name in ("server", "qcluster"):
        try:
            text = server.log_path(name).read_text(errors="replace")
        except FileNotFoundError:
            text = ""
        n = sum(1 for line in text.splitlines() if " ERROR " in line or " CRITICAL " in line)
        counts.append(f"{name} {n}")
        if n:
            first = next(line for line in text.splitlines() if " ERROR " in line or " CRITICAL " in line)
            counts[-1] += f" (first: {first.strip()[:160]})"
    return "ERROR/CRITICAL lines in the server logs: " + "; ".join(counts)
