"""In-process timing of the engine's hot paths, without HTTP and without contention.

    [APP_DIR=tree] .venv/bin/python bench/profile_paths.py [--db sqlite|postgres] [--pg-url URL] [-n 200]
                                                       [--pyinstrument OUT.html]

Creates a fresh database (a temp SQLite file, or a new database on the PostgreSQL server
of ``--pg-url``/``PG_URL``, dropped at the end), migrates it, registers the bench
workflow and runs, one call at a time in one thread, n times each:

  start    ``executor.workflow_start``                         (POST /api/workflow)
  poll     ``queue.task_poll(timeout_ms=0)`` + ``task_json``  (GET /api/tasks/poll/batch, a hit)
  empty    ``queue.task_poll(timeout_ms=0)`` on an empty queue (the poll of an idle worker)
  update   ``executor.task_update`` + the update-v2 claim     (POST /api/tasks/update-v2)

and prints, per path: wall ms per call (p50/mean), SQL statements per call, ms spent in
the database driver per call (measured around each statement with
``connection.execute_wrapper``, and around each COMMIT), and the statements of one call, and the CPU ms of this process per call (``time.process_time``:
less noisy than wall time on a loaded machine; the database server's CPU is not in it). The difference between
wall and SQL time is Python (ORM, decider, JSON). With ``--pyinstrument`` the whole loop is
profiled into an HTML call tree (pyinstrument from a separate venv, added to sys.path with
``--tools-site``).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
APP_DIR = Path(os.environ.get("APP_DIR") or REPO)  # project tree to import (default: this checkout)
sys.path.insert(0, str(APP_DIR))
sys.path.insert(0, str(REPO / "bench"))


class QueryTimer:
    """``connection.execute_wrapper`` that records (sql, seconds) of each statement."""

    def __init__(self):
        self.records: list[tuple[str, float]] = []

    def __call__(self, execute, sql, params, many, context):
        t = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.records.append((sql, time.perf_counter() - t))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--pg-url", default=os.environ.get("PG_URL"))
    p.add_argument("-n", type=int, default=200)
    p.add_argument("--pyinstrument", metavar="OUT.html")
    p.add_argument("--tools-site", default="/tmp/bench-tools/lib/python3.11/site-packages",
                   help="site-packages holding pyinstrument (appended to sys.path)")
    a = p.parse_args()

    from inprocess_db import throwaway_database
    with throwaway_database(a.db, a.pg_url, "prof"):
        run(a)


def run(a) -> None:
    import django
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from bench import task_defs, workflow_def  # the benchmark's own definitions

    from apps.api.views.workflow import start_from_request
    from apps.engine import executor, queue
    from apps.engine.representation import task_json
    from apps.metadata import services

    services.task_defs_register(task_defs=task_defs())
    services.workflow_defs_update(workflow_defs=[workflow_def()])

    timer = QueryTimer()
    results: dict[str, dict] = {}
    # COMMIT does not go through execute_wrapper: time the backend's _commit as well
    from django.db import connections
    wrapper_cls = type(connections["default"])
    original_commit = wrapper_cls._commit

    def timed_commit(self):
        t = time.perf_counter()
        try:
            return original_commit(self)
        finally:
            timer.records.append(("COMMIT", time.perf_counter() - t))
    wrapper_cls._commit = timed_commit

    def measure(name: str, fn, n: int):
        walls, cpus, sqls, counts = [], [], [], []
        sample: list[tuple[str, float]] = []
        for _ in range(n):
            timer.records.clear()
            t, c = time.perf_counter(), time.process_time()
            fn()
            walls.append((time.perf_counter() - t) * 1000)
            cpus.append((time.process_time() - c) * 1000)
            sqls.append(sum(s for _, s in timer.records) * 1000)
            counts.append(len(timer.records))
            sample = list(timer.records)
        results[name] = {"wall": walls, "cpu": cpus, "sql": sqls, "count": counts, "sample": sample}

    profiler = None
    if a.pyinstrument:
        sys.path.append(a.tools_site)
        from pyinstrument import Profiler
        profiler = Profiler(interval=0.0005)

    with connection.execute_wrapper(timer):
        # warm-up
        for i in range(5):
            wid = start_from_request({"name": "bench_wf", "version": 1, "input": {"x": i}}, principal=None)
            for t in ("bench_a", "bench_b", "bench_c"):
                task = queue.task_poll(task_type=t, worker_id="w", count=1, timeout_ms=0)[0]
                executor.task_update(task_result={"workflowInstanceId": wid, "taskId": task.task_id,
                                                  "status": "COMPLETED", "outputData": {"x": 1}, "workerId": "w"})
        if profiler:
            profiler.start()
        n = a.n
        ids = []
        measure("start", lambda: ids.append(start_from_request({"name": "bench_wf", "version": 1,
                                                                   "input": {"x": len(ids)}}, principal=None)), n)
        for t in ("bench_a", "bench_b", "bench_c"):
            polled = []
            measure(f"poll {t}", lambda: polled.append(
                [task_json(x) for x in queue.task_poll(task_type=t, worker_id="w", count=1, timeout_ms=0)]), n)
            got = [len(x) for x in polled]
            if any(g != 1 for g in got):
                print(f"# polls of {t} with count=1 returned {sum(got)} tasks in all: "
                      f"{sum(1 for g in got if g > 1)} polls returned more than 1, {got.count(0)} returned none",
                      file=sys.stderr)
            polled[:] = [[task] for batch in polled for task in batch]

            def update(t=t, polled=polled):
                if not polled:
                    return
                task = polled.pop()[0]
                executor.task_update_and_claim(task_result={  # update-v2: update + the worker's next task
                    "workflowInstanceId": task["workflowInstanceId"], "taskId": task["taskId"],
                    "status": "COMPLETED", "outputData": {"x": task["inputData"]["x"] + 1}, "workerId": "w"})
            measure(f"update-v2 {t}", update, n)
        measure("empty poll", lambda: queue.task_poll(task_type="bench_a", worker_id="w", count=1, timeout_ms=0), n)
        if profiler:
            profiler.stop()

    print(f"# {connection.vendor}, n={a.n} per path, one thread, no HTTP (ms per call)")
    print(f"{'path':<20}{'wall p50':>10}{'wall mean':>11}{'cpu mean':>10}{'sql/call':>10}{'sql ms':>9}{'python ms':>11}")
    for name, r in results.items():
        wall = statistics.mean(r["wall"])
        sql = statistics.mean(r["sql"])
        print(f"{name:<20}{statistics.median(r['wall']):>10.2f}{wall:>11.2f}{statistics.mean(r['cpu']):>10.2f}"
              f"{statistics.mean(r['count']):>10.1f}"
              f"{sql:>9.2f}{wall - sql:>11.2f}")
    for name in ("start", "poll bench_b", "update-v2 bench_b", "empty poll"):
        print(f"\n-- statements of one '{name}' call (ms) --")
        for sql, s in results[name]["sample"]:
            print(f"{s * 1000:7.2f}  {sql[:160]}")
    if profiler:
        Path(a.pyinstrument).write_text(profiler.output_html())
        print(profiler.output_text(unicode=False, color=False, show_all=False)[:12000])


if __name__ == "__main__":
    main()
