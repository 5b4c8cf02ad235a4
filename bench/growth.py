"""Per-update cost as an execution grows: CPU time of the process, in process, no HTTP.

    .venv/bin/python bench/growth.py [--db sqlite|postgres] [--pg-url URL] [-n 2000]
                                     [--window 10] [--shape loop|fork|both] [--profile OUT.prof]
                                     [--json-out FILE]

Two executions of one SIMPLE task type (``growth_task``), driven one update at a time in
one thread the way an SDK worker drives them (``queue.task_poll`` then
``executor.task_update`` of that task):

  loop   a DO_WHILE whose loopOver is one SIMPLE task, running ``n`` iterations;
  fork   a FORK_JOIN_DYNAMIC of ``n`` SIMPLE branches and its JOIN (plus, for the
         baseline, a fork of ``window`` branches).

For each it prints the mean CPU milliseconds (``time.process_time``: this process only,
which holds the engine and, with SQLite, the database; so figures stay meaningful on a
loaded machine) and the SQL statements of one poll + update, near the start (updates
1..window, after one warm-up update) and near the end (the last ``window`` updates), and
their ratio. For the fork the start figure is a ``window``-branch fork's, the end figure
the last ``window`` updates of the ``n``-branch fork (when every branch but those is
COMPLETED). Target (issue #9): end/start <= 1.5. A benchmark, not a test: nothing asserted.
PostgreSQL's server-side CPU is not in these figures (a separate process).

Besides the text lines it prints one JSON line per shape (starts with ``{"growth":``; also
appended to ``--json-out``, which bench/summarize.py reads): ``shape``, ``db``, ``n``,
``window``, ``status`` of the big execution, ``start_ms``/``end_ms``/``ratio`` (means),
``start_ms_median``/``end_ms_median``/``ratio_median`` and ``start_stmts``/``end_stmts``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TASK = "growth_task"


def loop_def(n: int) -> dict:
    return {"name": "growth_loop", "version": 1, "schemaVersion": 2, "ownerEmail": "bench@example.com",
            "tasks": [{"name": "loop", "taskReferenceName": "loop", "type": "DO_WHILE",
                       "inputParameters": {"n": n},
                       "loopCondition": "if ($.loop['iteration'] < $.n) { true; } else { false; }",
                       "loopOver": [{"name": TASK, "taskReferenceName": "g", "type": "SIMPLE",
                                     "inputParameters": {"i": "${loop.output.iteration}"}}]}]}


def fork_def() -> dict:
    return {"name": "growth_fork", "version": 1, "schemaVersion": 2, "ownerEmail": "bench@example.com",
            "tasks": [{"name": "fork", "taskReferenceName": "fork", "type": "FORK_JOIN_DYNAMIC",
                       "inputParameters": {"tasks": "${workflow.input.tasks}", "inputs": "${workflow.input.inputs}"},
                       "dynamicForkTasksParam": "tasks", "dynamicForkTasksInputParamName": "inputs"},
                      {"name": "join", "taskReferenceName": "join", "type": "JOIN"}]}


def fork_input(n: int) -> dict:
    return {"tasks": [{"name": TASK, "taskReferenceName": f"b{i}", "type": "SIMPLE"} for i in range(n)],
            "inputs": {f"b{i}": {"i": i} for i in range(n)}}


class Counter:
    def __init__(self):
        self.n = 0

    def __call__(self, execute, sql, params, many, context):
        self.n += 1
        return execute(sql, params, many, context)


def drive(workflow_id: str, updates: int, counter: Counter) -> list[tuple[float, int]]:
    """Poll + update ``updates`` tasks of the queue; [(cpu ms, statements)] per update."""
    from apps.engine import executor, queue
    out = []
    for _ in range(updates):
        counter.n = 0
        t = time.process_time()
        tasks = queue.task_poll(task_type=TASK, worker_id="w", count=1, timeout_ms=0)
        if not tasks:
            break
        task = tasks[0]
        assert task.workflow_id == workflow_id
        executor.task_update(task_result={"workflowInstanceId": workflow_id, "taskId": task.task_id,
                                          "status": "COMPLETED", "outputData": {"r": 1}, "workerId": "w"})
        out.append(((time.process_time() - t) * 1000, counter.n))
    return out


def summary(label: str, first: list, last: list) -> dict:
    """Print the start/end figures of one shape; return them (ms of CPU, statements) as a dict."""
    a = statistics.mean(c for c, _ in first)
    b = statistics.mean(c for c, _ in last)
    sa = statistics.mean(s for _, s in first)
    sb = statistics.mean(s for _, s in last)
    print(f"{label:<8} start {a:7.2f} ms ({sa:5.1f} stmts)   end {b:7.2f} ms ({sb:5.1f} stmts)   end/start {b / a:5.2f}x")
    # medians: the one update that ends a JOIN or a loop (and reads every task once) aside
    ma = statistics.median(c for c, _ in first)
    mb = statistics.median(c for c, _ in last)
    print(f"{'':<8} median start {ma:7.2f} ms   median end {mb:7.2f} ms   end/start {mb / ma:5.2f}x")
    return {"start_ms": round(a, 3), "end_ms": round(b, 3), "ratio": round(b / a, 3),
            "start_ms_median": round(ma, 3), "end_ms_median": round(mb, 3), "ratio_median": round(mb / ma, 3),
            "start_stmts": round(sa, 1), "end_stmts": round(sb, 1)}


def emit(a, shape: str, status: str, figures: dict) -> None:
    """Print the JSON line of one shape and append it to ``--json-out``."""
    from bench import emit as emit_json
    emit_json({"growth": shape, "db": a.db, "n": a.n, "window": a.window, "status": status,
               "loadavg": " ".join(Path("/proc/loadavg").read_text().split()[:3]), **figures}, a.json_out)


def run(a) -> None:
    import django
    django.setup()
    from django.core.management import call_command
    from django.db import connection
    call_command("migrate", verbosity=0)
    from apps.engine import store
    from apps.api.views.workflow import start_from_request
    from apps.metadata import services
    services.task_defs_register(task_defs=[{"name": TASK, "retryCount": 0, "ownerEmail": "bench@example.com",
                                            "responseTimeoutSeconds": 3600, "timeoutSeconds": 0}])
    services.workflow_defs_update(workflow_defs=[loop_def(a.n), fork_def()])
    counter = Counter()
    prof = None
    if a.profile:
        import cProfile
        prof = cProfile.Profile()
    w = a.window
    print(f"# {connection.vendor}, n={a.n}, window={w}, CPU ms of this process per poll + update")
    with connection.execute_wrapper(counter):
        if a.shape in ("loop", "both"):
            wid = start_from_request({"name": "growth_loop", "version": 1, "input": {}}, principal=None)
            drive(wid, 1, counter)
            if prof:
                prof.enable()
            costs = drive(wid, a.n - 1, counter)
            if prof:
                prof.disable()
            wf = store.load_workflow(wid)
            print(f"# loop: {len(costs) + 1} updates, workflow {wf.status}, {len(wf.tasks)} tasks")
            emit(a, "loop", wf.status, summary("loop", costs[:w], costs[-w:]))
        if a.shape in ("fork", "both"):
            small = start_from_request({"name": "growth_fork", "version": 1, "input": fork_input(w + 1)}, principal=None)
            drive(small, 1, counter)
            first = drive(small, w, counter)
            big = start_from_request({"name": "growth_fork", "version": 1, "input": fork_input(a.n)}, principal=None)
            if prof:
                prof.enable()
            costs = drive(big, a.n, counter)
            if prof:
                prof.disable()
            wf = store.load_workflow(big)
            print(f"# fork: {len(costs)} updates, workflow {wf.status}, {len(wf.tasks)} tasks; "
                  f"first {w} updates of the big fork: {statistics.mean(c for c, _ in costs[:w]):.2f} ms")
            emit(a, "fork", wf.status, summary("fork", first, costs[-w:]))
    if prof:
        prof.dump_stats(a.profile)
        import pstats
        pstats.Stats(prof).sort_stats("cumulative").print_stats(45)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--pg-url", default=os.environ.get("PG_URL"))
    p.add_argument("-n", type=int, default=2000)
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--shape", choices=("loop", "fork", "both"), default="both")
    p.add_argument("--profile", metavar="OUT.prof", help="cProfile the big runs, print the top of it")
    p.add_argument("--json-out", metavar="FILE", help="append the JSON line of each shape to FILE")
    a = p.parse_args()
    # the loop runs n iterations (the default cap is 1,000)
    os.environ["CONDUCTOR_DO_WHILE_MAX_ITERATIONS"] = str(a.n + 10)
    from inprocess_db import throwaway_database
    with throwaway_database(a.db, a.pg_url, "growth"):
        run(a)


if __name__ == "__main__":
    main()
