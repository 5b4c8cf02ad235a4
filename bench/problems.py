"""The problem views' list queries at a million executions (issue #31): wall-clock ms.

    .venv/bin/python bench/problems.py [--db sqlite|postgres] [--pg-url URL] [-n 1000000]
                                       [--repeat 5] [--json-out FILE]

Fills a throwaway database (``bench/inprocess_db.py``) with ``n`` executions in SQL
(20 workflow names over 30 days: 90 % COMPLETED, 5 % FAILED, 2 % TIMED_OUT, 3 % RUNNING),
one ended SIMPLE task per ended execution, and the tasks the views read: the newest 100 runs of one name (2 tasks each), 500 HUMAN
tasks waiting and 2,000 SCHEDULED tasks in 10 queues (one never polled). Then times each
query of the views, median of ``--repeat`` runs after one warm-up, as the pages run it:

  counts_all / counts_name    status counts of the whole table / of one name (each stops at 10,001)
  all_page                    the unfiltered list's first page (its total is counted: the UI's own search)
  failed_page                 the Failed view's first page (25, newest first, counted)
  slow_page                   "running longer than usual" (p95 per name, cached after the first)
  stuck_page                  "waiting on an unpolled queue"
  today_page                  started today
  export_10k                  the first 10,000 ids of the Failed view's export (keyset batches)
  diagnose                    "why is it stuck?" of one running execution
  grid_25 / grid_100          the run grid of one name
  inbox                       the human-task inbox's first page (and filtered by assignee)

Prints one line per query and one JSON line ``{"problems": {...}}`` (also appended to
``--json-out``). A benchmark, not a test: nothing asserted; figures on a loaded machine
mean little (bench/README.md).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

NAMES = 20
DAY_MS = 86_400_000


def fill(n: int, vendor: str, now: int) -> None:
    """``n`` executions and the tasks the views read, inserted in SQL."""
    from django.db import connection

    json_empty = "'{}'::jsonb" if vendor == "postgresql" else "'{}'"
    json_list = "'[]'::jsonb" if vendor == "postgresql" else "'[]'"
    if vendor == "postgresql":
        series = f"SELECT g AS i FROM generate_series(0, {n - 1}) g"
    else:
        series = f"WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < {n - 1}) SELECT i FROM s"

    def concat(*parts: str) -> str:
        return " || ".join(parts)
    # i: create_time spread over 30 days, newest = largest i; status by i % 100
    status = ("CASE WHEN i % 100 < 90 THEN 'COMPLETED' WHEN i % 100 < 95 THEN 'FAILED' "
              "WHEN i % 100 < 97 THEN 'TIMED_OUT' ELSE 'RUNNING' END")
    create = f"({now - 30 * DAY_MS} + CAST(i AS BIGINT) * {30 * DAY_MS // n})"
    end = f"CASE WHEN i % 100 < 97 THEN {create} + 1000 + (i % 50) * 100 ELSE 0 END"
    wid = concat("'wf-'", "CAST(i AS TEXT)")
    name = concat("'bench_wf_'", f"CAST(i % {NAMES} AS TEXT)")
    with connection.cursor() as c:
        c.execute(f"""
            INSERT INTO engine_workflow_execution (workflow_id, workflow_name, workflow_version, status, definition,
                input, output, variables, correlation_id, priority, task_to_domain, reason_for_incompletion,
                failed_reference_task_names, failed_task_names, create_time, update_time, end_time,
                last_retried_time)
            SELECT {wid}, {name}, 1, {status}, {json_empty}, {json_empty}, {json_empty}, {json_empty}, NULL, 0,
                {json_empty}, CASE WHEN i % 100 BETWEEN 90 AND 94 THEN 'Task failed: card declined' ELSE NULL END,
                {json_list}, {json_list}, {create}, {create}, {end}, 0
            FROM ({series}) AS s""")

        # one ended SIMPLE task per ended execution: the task table at scale (the inbox,
        # the queues and the grid read small ranges of it)
        c.execute(f"""
            INSERT INTO engine_task_execution (task_id, workflow_id, workflow_type, workflow_priority, task_type,
                task_def_name, reference_task_name, seq, iteration, retry_count, poll_count, status, input_data,
                output_data, workflow_task, scheduled_time, start_time, end_time, update_time, first_scheduled_time,
                start_delay_seconds, callback_after_seconds, response_timeout_seconds, queue_name, visible_at,
                retried, executed, concurrent_exec_limit, rate_limit_per_frequency,
                rate_limit_frequency_in_seconds, evaluation_key)
            SELECT {concat("'bt-'", "workflow_id")}, workflow_id, workflow_name, 0, 'SIMPLE', 'bench_work', 'work', 0,
                0, 0, 1, 'COMPLETED', {json_empty}, {json_empty}, {json_empty}, create_time, create_time, end_time,
                end_time, create_time, 0, 0, 600, 'bench_work', 0, {'false' if vendor == 'postgresql' else '0'},
                {'true' if vendor == 'postgresql' else '1'}, 0, 0, 0, ''
            FROM engine_workflow_execution WHERE end_time > 0""")

    from apps.engine.models import PollData, TaskExecution, WorkflowExecution
    from apps.metadata.models import WorkflowDef

    WorkflowDef.objects.bulk_create([WorkflowDef(name=f"bench_wf_{k}", version=1, definition={
        "name": f"bench_wf_{k}", "version": 1, "tasks": []}, create_time=now, update_time=now) for k in range(NAMES)])
    tasks = []

    def task(wid: str, seq: int, **kw) -> TaskExecution:
        base = dict(task_id=f"t-{wid}-{seq}", workflow_id=wid, workflow_type=kw.pop("wtype", "bench_wf_0"),
                    task_type="SIMPLE", task_def_name="bench_task", reference_task_name=f"r{seq}", seq=seq,
                    status="COMPLETED", scheduled_time=now - 1000, start_time=now - 900, end_time=now - 100)
        base.update(kw)
        return TaskExecution(**base)

    newest = list(WorkflowExecution.objects.filter(workflow_name="bench_wf_0").order_by("-create_time")
                  .values_list("workflow_id", "status")[:100])
    for wid, st in newest:
        tasks += [task(wid, 1), task(wid, 2, status="FAILED" if st == "FAILED" else "COMPLETED")]
    running = list(WorkflowExecution.objects.filter(status="RUNNING").order_by("-create_time")
                   .values_list("workflow_id", "workflow_name")[:2500])
    humans = min(500, len(running) // 5)
    for j, (wid, wname) in enumerate(running[:humans]):
        tasks.append(task(wid, 10, task_type="HUMAN", task_def_name="approve", reference_task_name="approve",
                          status="IN_PROGRESS", wtype=wname, end_time=0, input_data={"assignee": f"user{j % 20}"}))
    for j, (wid, wname) in enumerate(running[humans:]):
        queue = f"bench_queue_{j % 10}"
        tasks.append(task(wid, 11, task_def_name=queue, queue_name=queue, status="SCHEDULED", wtype=wname,
                          start_time=0, end_time=0, scheduled_time=now - j * 10))
    TaskExecution.objects.bulk_create(tasks, batch_size=1000)
    PollData.objects.bulk_create([PollData(queue_name=f"bench_queue_{k}", worker_id="w", last_poll_time=now)
                                  for k in range(1, 10)])


def timed(fn, repeat: int) -> float:
    fn()  # warm-up (and the p95 cache of the slow view)
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t) * 1000)
    return statistics.median(runs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    p.add_argument("--pg-url", default=os.environ.get("PG_URL"))
    p.add_argument("-n", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json-out")
    a = p.parse_args()

    sys.path.insert(0, str(REPO / "bench"))
    from inprocess_db import throwaway_database

    with throwaway_database(a.db, a.pg_url, "problems"):
        import django
        django.setup()
        from django.core.management import call_command
        from django.db import connection
        from django.http import QueryDict

        from apps.core.clock import now_ms
        from apps.problems import grid, inbox, listing, stuck
        from apps.ui.selectors import SearchQuery, search_executions

        call_command("migrate", verbosity=0)
        now = now_ms()
        t0 = time.perf_counter()
        fill(a.n, connection.vendor, now)
        with connection.cursor() as c:
            c.execute("ANALYZE")
        fill_s = time.perf_counter() - t0

        def q(text: str) -> SearchQuery:
            return SearchQuery.from_querydict(QueryDict(text))

        running_id = inbox.waiting(limit=1)[0].workflow_id
        stuck_id = next(iter(listing.rows(q("stuck=1"), limit=1)), {"workflow_id": running_id})["workflow_id"]
        cases = {
            "counts_all": lambda: listing.status_counts(q("")),
            "counts_name": lambda: listing.status_counts(q("name=bench_wf_3")),
            "all_page": lambda: search_executions(q("")),
            "failed_page": lambda: search_executions(q("status=FAILED")),
            "slow_page": lambda: search_executions(q("slow=1")),
            "stuck_page": lambda: search_executions(q("stuck=1")),
            "today_page": lambda: search_executions(q("since=today")),
            "export_10k": lambda: sum(1 for _ in listing.rows(q("status=FAILED"), limit=10_000)),
            "diagnose": lambda: (stuck.diagnose(running_id), stuck.diagnose(stuck_id)),
            "grid_25": lambda: grid.run_grid("bench_wf_0", 25),
            "grid_100": lambda: grid.run_grid("bench_wf_0", 100),
            "inbox": lambda: (inbox.waiting(), inbox.waiting(field="assignee", value="user3")),
        }
        out = {"db": a.db, "n": a.n, "fill_s": round(fill_s, 1)}
        print(f"problems bench: {a.n} executions on {a.db}, filled in {fill_s:.1f} s")
        for key, fn in cases.items():
            out[key] = round(timed(fn, a.repeat), 1)
            print(f"  {key:<12} {out[key]:>9.1f} ms")
        line = json.dumps({"problems": out})
        print(line)
        if a.json_out:
            with open(a.json_out, "a") as f:
                f.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
