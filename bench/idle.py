"""Idle cost and cross-process wake-up of long polls (issue #9's "idle" target).

    .venv/bin/python bench/idle.py [--db sqlite|postgres] [--pg-url URL] [--workers 20]
                                   [--timeout-ms 100 [--timeout-ms 5000 ...]] [--sdk-backoff]
                                   [--seconds 10] [--wakes 20] [--json-out FILE]

Starts its own server (``bench.py``'s ``Server``: a fresh database, one server
process, ``python -m conductor_web.serve``, on 127.0.0.1, no cluster), then:

1. idle: ``--workers`` threads long-poll empty queues (``GET /api/tasks/poll/batch/idle_i
   ?count=1&timeout=T``, each its own queue, as the SDK's TaskRunner; ``--sdk-backoff``
   also sleeps 1, 2, 4 .. 100 ms after each empty poll as the SDK does) for ``--seconds``;
   the server's CPU in % of one core over that time and the polls answered. Once per
   ``--timeout-ms`` given (default 100, the SDK's), one after the other on the same server.
2. wake: one worker long-polls (timeout 5 s) queue ``wake_task`` on the server while
   THIS process (another process, its own database connection) starts a workflow whose
   first task is on that queue, ``--wakes`` times; prints the delay from the start's
   commit (the return of the connection's ``commit()``) to the poll's answer reaching the
   worker (p50 / max, ms). On PostgreSQL the server's queue listener wakes the poll
   (LISTEN/NOTIFY); on SQLite the poll's ``LONG_POLL_RECHECK_MS`` re-check finds it.

With ``--url URL --server-pid PID`` it measures a server started elsewhere (Conductor OSS,
by bench/run_oss.sh), idle phase only; ``--system`` names it in the JSON line.

Prints one JSON line (also appended to ``--json-out``, which bench/summarize.py reads):
``db``, ``workers``, ``idle`` (a list, one entry per poll timeout: ``timeout_ms``,
``sdk_backoff``, ``idle_server_cpu_pct``, ``polls_per_s``, ``server_cpu_ms_per_poll``),
``wakes``, ``wake_ms_p50``, ``wake_ms_max`` and ``wake_ms`` (every delay).
A benchmark, not a test: nothing is asserted. Every process it starts is stopped by PID.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench import Server, emit, parse_args as bench_args  # noqa: E402
from cpu_meter import _children_map, tree_cpu_s  # noqa: E402

WAKE_TYPE = "wake_task"


def idle_phase(url: str, pids: list[int], workers: int, timeout_ms: int, backoff: bool, seconds: float) -> dict:
    stop = threading.Event()
    polls = [0] * workers

    def worker(i: int) -> None:
        delay = 0.001
        with httpx.Client(base_url=url, timeout=30) as c:
            while not stop.is_set():
                r = c.get(f"/api/tasks/poll/batch/idle_{i}", params={"workerid": f"w{i}", "count": 1,
                                                                    "timeout": timeout_ms})
                polls[i] += 1
                if r.status_code == 200 and r.json():
                    delay = 0.001
                    continue
                if backoff:
                    stop.wait(delay)
                    delay = min(delay * 2, 0.1)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    time.sleep(min(2.0, seconds / 2))  # warm: every worker has polled, poll data written
    kids = _children_map()
    cpu0, t0, p0 = sum(tree_cpu_s(p, kids) for p in pids), time.monotonic(), sum(polls)
    time.sleep(seconds)
    kids = _children_map()
    cpu1, t1, p1 = sum(tree_cpu_s(p, kids) for p in pids), time.monotonic(), sum(polls)
    stop.set()
    for t in threads:
        t.join(timeout_ms / 1000 + 10)
    return {"timeout_ms": timeout_ms, "sdk_backoff": backoff,
            "idle_server_cpu_pct": round(100 * (cpu1 - cpu0) / (t1 - t0), 2),
            "polls_per_s": round((p1 - p0) / (t1 - t0), 1),
            "server_cpu_ms_per_poll": round(1000 * (cpu1 - cpu0) / max(p1 - p0, 1), 3)}


def wake_phase(url: str, database_url: str, wakes: int) -> dict:
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conductor_web.settings")
    import django

    django.setup()
    from django.db import connections
    from apps.engine import executor

    # the moment of the start's commit: workflow_start returns only after its on-commit
    # hooks, which a waiting poll may already have beaten
    conn = connections["default"]
    commits: list[float] = []
    real_commit = conn.commit

    def timed_commit() -> None:
        real_commit()
        commits.append(time.monotonic())
    conn.commit = timed_commit

    with httpx.Client(base_url=url, timeout=30) as c:
        c.post("/api/metadata/taskdefs", json=[{"name": WAKE_TYPE, "retryCount": 0, "ownerEmail": "b@example.com"}])
        c.post("/api/metadata/workflow", json={"name": "wake_wf", "version": 1, "schemaVersion": 2,
                                               "ownerEmail": "b@example.com",
                                               "tasks": [{"name": WAKE_TYPE, "taskReferenceName": "t",
                                                          "type": "SIMPLE"}]})
    delays = []
    for _ in range(wakes):
        got: dict = {}
        waiting = threading.Event()

        def poll() -> None:
            with httpx.Client(base_url=url, timeout=30) as c:
                waiting.set()
                r = c.get(f"/api/tasks/poll/batch/{WAKE_TYPE}", params={"workerid": "w", "count": 1, "timeout": 5000})
                got["at"] = time.monotonic()
                got["tasks"] = r.json() if r.status_code == 200 else []

        t = threading.Thread(target=poll, daemon=True)
        t.start()
        waiting.wait(5)
        time.sleep(0.3)  # the poll is waiting on the server
        commits.clear()
        executor.workflow_start(name="wake_wf", input={})
        committed = commits[0] if commits else time.monotonic()
        t.join(10)
        if got.get("tasks"):
            delays.append(1000 * (got["at"] - committed))
            task = got["tasks"][0]
            with httpx.Client(base_url=url, timeout=30) as c:
                c.post("/api/tasks", json={"taskId": task["taskId"], "workflowInstanceId": task["workflowInstanceId"],
                                           "status": "COMPLETED", "outputData": {}})
    return {"wakes": len(delays), "wake_ms_p50": round(statistics.median(delays), 1) if delays else None,
            "wake_ms_max": round(max(delays), 1) if delays else None, "wake_ms": [round(d, 1) for d in delays]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--pg-url", default=os.environ.get("PG_URL"))
    p.add_argument("--workers", type=int, default=20)
    p.add_argument("--timeout-ms", type=int, action="append",
                   help="poll timeout of the idle phase, ms (default 100); repeat for one idle phase each")
    p.add_argument("--sdk-backoff", action="store_true")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--wakes", type=int, default=20)
    p.add_argument("--app-dir", default=str(REPO), help="project tree to serve (e.g. a `git archive` of one commit)")
    p.add_argument("--server", default="conductor-web",
                   help="bench.py's --server (conductor-web, the product's; uvicorn, granian, ... for comparison)")
    p.add_argument("--json-out", metavar="FILE", help="append the JSON line to FILE")
    p.add_argument("--url", help="measure a running server instead (base URL, no /api; the idle phase only)")
    p.add_argument("--server-pid", type=int, action="append", default=[], metavar="PID",
                   help="with --url: a process of that server whose CPU (with its children) is measured")
    p.add_argument("--system", default="conductor-web", help="the name of the system in the JSON line")
    a = p.parse_args()
    if a.url:
        return external(a)
    sys.path.insert(0, str(Path(a.app_dir).resolve()))  # the wake phase queues with the served tree's engine
    argv = ["--start-server", "--db", a.db, "--app-dir", a.app_dir, "--server", a.server] + (["--pg-url", a.pg_url] if a.pg_url else [])
    server = Server(bench_args(argv))
    try:
        server.start()
        out = {"system": a.system, "db": a.db, "server": a.server, "workers": a.workers, "seconds": a.seconds,
               "loadavg": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
               "idle": [idle_phase(server.url, server.pids(), a.workers, t, a.sdk_backoff, a.seconds)
                        for t in a.timeout_ms or [100]]}
        out.update(wake_phase(server.url, server.db_url, a.wakes))
        emit(out, a.json_out)
    finally:
        server.stop()
    return 0


def external(a) -> int:
    """The idle phase against a server started elsewhere (Conductor OSS in `make bench`):
    the CPU of ``--server-pid`` while the workers poll. No wake phase (it queues through
    our engine)."""
    if not a.server_pid:
        raise SystemExit("--url needs --server-pid (the process whose CPU is measured)")
    url = a.url.rstrip("/").removesuffix("/api")
    out = {"system": a.system, "db": a.db, "workers": a.workers, "seconds": a.seconds,
           "loadavg": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
           "idle": [idle_phase(url, a.server_pid, a.workers, t, a.sdk_backoff, a.seconds)
                    for t in a.timeout_ms or [100]]}
    emit(out, a.json_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
