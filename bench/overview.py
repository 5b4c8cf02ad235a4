"""The Overview page's queries at 1,000,000 executions, in process, on SQLite or PostgreSQL.

    .venv/bin/python bench/overview.py [--db sqlite|postgres] [--pg-url URL] [-n 1000000]
                                       [--days 7] [--names 20] [--task-types 10]
                                       [--pending 2000] [--repeat 5] [--json-out FILE] [--check]

Fills a throwaway database (``bench/inprocess_db.py``) with ``n`` executions (at most
``MAX_N``) spread evenly over the last ``days`` days, ``names`` workflow names, one task
each of ``task-types`` types: 85 % COMPLETED, 8 % FAILED (with one of five reasons that
carry the task id and an order number, as real ones do), 2 % TIMED_OUT, 3 % TERMINATED and
``pending`` RUNNING executions whose task is still SCHEDULED (the queues' backlog). Rows go
in with ``bulk_create`` in batches of ``BATCH``; the rollup rows are what
``apps.overview.rollup.increments`` makes of the same executions (minute rows for the last
48 hours only, as pruning keeps them; hour rows for all), also in batches.

Then times, ``repeat`` times each, the median and the worst: ``selectors.overview`` (all the
page's data) for the 1 h, 24 h and 7 d ranges, each of its parts for 7 d, and the
executions search one failure bar links to (one name, FAILED, one hour's end window). A
benchmark, not a test: nothing asserted. Prints text and one JSON line per timing
(``{"overview": ...}``; appended to ``--json-out``, which bench/summarize.py reads).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MAX_N = 5_000_000
CHUNK = 100_000  # executions per INSERT ... SELECT
DURATIONS = 64  # distinct (worker lag, run time) pairs
# FAILED reasons: "Task task-<8 digits> failed: <text> <order number>" (ids and numbers masked: five groups)
REASON_TEXTS = ("card declined for order", "inventory service answered 503 for", "address not found for",
                "timeout calling payments for", "blocked user for")


def _literal(field, vendor: str) -> str:
    """The SQL of a column's value when the fill does not set it: NULL, or its default."""
    from django.db import models

    if field.null:
        return "NULL"
    default = field.get_default()
    if isinstance(field, models.JSONField):
        text = "'" + json.dumps(default).replace("'", "''") + "'"
        return f"CAST({text} AS jsonb)" if vendor == "postgresql" else text
    if isinstance(field, models.BooleanField):
        return "TRUE" if default else "FALSE"
    if isinstance(field, (models.IntegerField, models.BigIntegerField, models.SmallIntegerField)):
        return str(int(default or 0))
    return "'" + str(default or "").replace("'", "''") + "'"


def _insert_select(model, values: dict[str, str], source: str, vendor: str) -> str:
    """``INSERT INTO <model's table> (every column) SELECT <values or defaults> <source>``."""
    fields = [f for f in model._meta.concrete_fields]
    columns = ", ".join(f.column for f in fields)
    exprs = ", ".join(values.get(f.column, _literal(f, vendor)) for f in fields)
    return f"INSERT INTO {model._meta.db_table} ({columns}) SELECT {exprs} {source}"


def fill(a, now: int) -> dict:
    """Insert the executions and their tasks with ``INSERT ... SELECT`` over a generated
    sequence (SQLite's recursive CTE, PostgreSQL's generate_series), ``CHUNK`` executions a
    statement, then their rollup rows with grouped ``INSERT ... SELECT`` (what
    ``apps.overview.rollup.record`` would have written; checked by --check on a small n).
    Durations come from ``DURATIONS`` lognormal draws (worker lag and run time) picked by
    ``k``; returns counts and seconds."""
    import hashlib

    from django.db import connection, transaction

    from apps.engine.models import TaskExecution, WorkflowExecution
    from apps.overview.bins import bin_of
    from apps.overview.models import DAY_MS, HOUR_MS, MINUTE_MS, ReasonRollup, Rollup
    from apps.ui.selectors import mask_ids

    vendor = connection.vendor
    rng = random.Random(42)
    total = a.n + a.pending
    span = a.days * 24 * HOUR_MS
    started = time.monotonic()
    with connection.cursor() as c:
        c.execute("CREATE TEMPORARY TABLE bench_dur (i INTEGER PRIMARY KEY, lag BIGINT, run BIGINT, ms BIGINT,"
                  " lag_bin INTEGER, run_bin INTEGER, ms_bin INTEGER)")
        seen: set = set()
        for i in range(DURATIONS):
            lag, run = int(rng.lognormvariate(4, 1)) + 1, int(rng.lognormvariate(6.5, 1.5)) + 1
            while lag + run in seen:  # each row joins back by its total, its lag and its run alone
                run += 1
            seen.add(lag + run)
            c.execute("INSERT INTO bench_dur VALUES (%s, %s, %s, %s, %s, %s, %s)",
                      [i, lag, run, lag + run, bin_of(lag), bin_of(run), bin_of(lag + run)])
        status = (f"CASE WHEN k >= {a.n} THEN 'RUNNING' WHEN (k * 7919) % 100 < 85 THEN 'COMPLETED'"
                  " WHEN (k * 7919) % 100 < 93 THEN 'FAILED' WHEN (k * 7919) % 100 < 95 THEN 'TIMED_OUT'"
                  " ELSE 'TERMINATED' END")
        create = f"({now - span} + (CAST(k AS BIGINT) * {span}) / {total})"
        end = f"(CASE WHEN k >= {a.n} THEN 0 ELSE {create} + d.ms END)"
        reason = (f"CASE WHEN {status} = 'FAILED' THEN 'Task task-' || (10000000 + k) || ' failed: ' || "
                  + "CASE k % 5 " + " ".join(f"WHEN {j} THEN '{r}'" for j, r in enumerate(REASON_TEXTS))
                  + " END || ' ' || (1000 + k) ELSE NULL END")
        name = f"'bench_wf_' || (k % {a.names})"
        task_type = f"'bench_task_' || (k % {a.task_types})"
        wf_values = {"workflow_id": "'wf-' || k", "workflow_name": name, "workflow_version": "1", "status": status,
                     "create_time": create, "update_time": f"(CASE WHEN k >= {a.n} THEN {create} ELSE {end} END)",
                     "end_time": end, "reason_for_incompletion": reason,
                     "next_decide_at": f"(CASE WHEN k >= {a.n} THEN {create} + 3600000 ELSE NULL END)"}
        task_status = (f"CASE WHEN k >= {a.n} THEN 'SCHEDULED' WHEN {status} = 'TERMINATED' THEN 'CANCELED'"
                       f" ELSE {status} END")
        task_values = {"task_id": "'task-' || (10000000 + k)", "workflow_id": "'wf-' || k", "workflow_type": name,
                       "task_type": "'SIMPLE'", "task_def_name": task_type, "reference_task_name": "'t'", "seq": "1",
                       "status": task_status, "scheduled_time": create,
                       "start_time": f"(CASE WHEN k >= {a.n} THEN 0 ELSE {create} + d.lag END)",
                       "end_time": end, "update_time": f"(CASE WHEN k >= {a.n} THEN {create} ELSE {end} END)",
                       "queue_name": f"(CASE WHEN k >= {a.n} THEN {task_type} ELSE '' END)"}
        for lo in range(0, total, CHUNK):
            hi = min(total, lo + CHUNK) - 1
            if vendor == "postgresql":
                source = f"FROM generate_series(CAST({lo} AS BIGINT), CAST({hi} AS BIGINT)) AS seq(k) JOIN bench_dur d ON d.i = (k * 37) % {DURATIONS}"
                prefix = ""
            else:
                prefix = f"WITH RECURSIVE seq(k) AS (SELECT {lo} UNION ALL SELECT k + 1 FROM seq WHERE k < {hi}) "
                source = f"FROM seq JOIN bench_dur d ON d.i = (k * 37) % {DURATIONS}"
            with transaction.atomic():
                c.execute(prefix + _insert_select(WorkflowExecution, wf_values, source, vendor))
                c.execute(prefix + _insert_select(TaskExecution, task_values, source, vendor))
        executions_s = time.monotonic() - started
        started = time.monotonic()
        # the rollup rows, per period (minute rows for the last 48 hours only: pruning keeps no more)
        wf, task = WorkflowExecution._meta.db_table, TaskExecution._meta.db_table
        table = Rollup._meta.db_table
        head = f"INSERT INTO {table} (period_ms, kind, bucket, name, version, measure, bin, slot, count) "
        for period in (MINUTE_MS, HOUR_MS, DAY_MS):
            since = now - 48 * HOUR_MS if period == MINUTE_MS else 0
            counts = period != DAY_MS  # day rows: histograms only
            if counts:
                c.execute(head + f"SELECT {period}, 'workflow', (create_time / {period}) * {period}, workflow_name, 1,"
                          f" 'started', -1, 0, COUNT(*) FROM {wf} WHERE create_time >= {since} GROUP BY 3, 4")
                c.execute(head + f"SELECT {period}, 'workflow', (end_time / {period}) * {period}, workflow_name, 1,"
                          f" status, -1, 0, COUNT(*) FROM {wf} WHERE end_time > 0 AND end_time >= {since}"
                          " GROUP BY 3, 4, 6")
            c.execute(head + f"SELECT {period}, 'workflow', (end_time / {period}) * {period}, workflow_name, 1,"
                      f" 'duration', d.ms_bin, 0, COUNT(*) FROM {wf} JOIN bench_dur d ON d.ms = end_time - create_time"
                      f" WHERE end_time > 0 AND end_time >= {since} GROUP BY 3, 4, 7")
            ended = f"FROM {task} t JOIN bench_dur d ON d.lag = t.start_time - t.scheduled_time" \
                    f" AND d.run = t.end_time - t.start_time WHERE t.end_time > 0 AND t.end_time >= {since}" \
                    " AND t.status IN ('COMPLETED', 'FAILED', 'TIMED_OUT')"
            if counts:
                c.execute(head + f"SELECT {period}, 'task', (t.end_time / {period}) * {period}, t.task_def_name, 0,"
                          f" t.status, -1, 0, COUNT(*) {ended} GROUP BY 3, 4, 6")
            for measure in ("lag", "run"):
                c.execute(head + f"SELECT {period}, 'task', (t.end_time / {period}) * {period}, t.task_def_name, 0,"
                          f" '{measure}', d.{measure}_bin, 0, COUNT(*) {ended} GROUP BY 3, 4, 7")
            for j, text in enumerate(REASON_TEXTS if counts else ()):
                example = f"Task task-10000000 failed: {text} 1000"
                key = mask_ids(example)
                digest = hashlib.sha1(key.encode()).hexdigest()
                c.execute(f"INSERT INTO {ReasonRollup._meta.db_table} (period_ms, bucket, name, reason_hash, slot,"
                          f" reason_key, example, count) SELECT {period}, (end_time / {period}) * {period},"
                          f" workflow_name, %s, 0, %s, %s, COUNT(*) FROM {wf} WHERE status = 'FAILED'"
                          f" AND end_time >= {since} AND reason_for_incompletion LIKE %s GROUP BY 2, 3",
                          [digest, key, example, f"% {text} %"])
        # the hour and day rows above already hold the minute rows' counts: folded (rollup.fold)
        for t in (table, ReasonRollup._meta.db_table):
            c.execute(f"UPDATE {t} SET folded = count WHERE period_ms = {MINUTE_MS}")
        rows = Rollup.objects.count()
    return {"executions": a.n, "pending": a.pending, "rollup_rows": rows, "reason_rows": ReasonRollup.objects.count(),
            "fill_executions_s": round(executions_s, 1), "fill_rollups_s": round(time.monotonic() - started, 1)}


def check(now: int) -> None:
    """Compare the rollup rows the fill wrote with what ``rollup.increments`` makes of the
    same rows (minute rows of the last 48 hours, hour rows): raises AssertionError on a
    difference. For a small ``-n`` (it reads every execution)."""
    from collections import Counter
    from django.db.models import Sum

    from apps.engine.models import TaskExecution, WorkflowExecution
    from apps.overview import rollup
    from apps.overview.models import DAY_MS, HOUR_MS, MINUTE_MS, ReasonRollup, Rollup

    tasks = {t.workflow_id: t for t in TaskExecution.objects.all()}
    want, want_reasons = Counter(), Counter()
    for wf in WorkflowExecution.objects.all():
        task = tasks[wf.workflow_id]
        # its start and (for an ended one) its end and its task's end, as the engine saves them
        counts, reasons = rollup.increments(wf, None, [(task, "IN_PROGRESS")])
        for (kind, name, version, measure, b, at), n in counts.items():
            for period in (MINUTE_MS, HOUR_MS, DAY_MS) if b >= 0 else (MINUTE_MS, HOUR_MS):
                if period != MINUTE_MS or at >= now - 48 * HOUR_MS:
                    want[(period, kind, at - at % period, name, version, measure, b)] += n
        for (name, key, _example, at), n in reasons.items():
            for period in (MINUTE_MS, HOUR_MS):
                if period == HOUR_MS or at >= now - 48 * HOUR_MS:
                    want_reasons[(period, at - at % period, name, key)] += n
    have = Counter({k[:-1]: k[-1] for k in Rollup.objects.values_list(
        "period_ms", "kind", "bucket", "name", "version", "measure", "bin").annotate(n=Sum("count"))})
    have_reasons = Counter({k[:-1]: k[-1] for k in ReasonRollup.objects.values_list(
        "period_ms", "bucket", "name", "reason_key").annotate(n=Sum("count"))})
    assert have == want, (sorted(set(have.items()) ^ set(want.items()))[:10])
    assert have_reasons == want_reasons, (sorted(set(have_reasons.items()) ^ set(want_reasons.items()))[:10])
    print(f"check: the {sum(have.values()):,} counts of {len(have):,} rollup rows are rollup.increments' own")


def timed(fn, repeat: int) -> dict:
    """Median and worst wall ms of ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return {"ms_median": round(statistics.median(times), 2), "ms_max": round(max(times), 2)}


def measure(a, now: int, filled: dict) -> list[dict]:
    from django.db import connection
    from django.http import QueryDict

    from apps.overview import selectors
    from apps.ui.selectors import SearchQuery, search_executions

    out = []

    def emit(what: str, fn, **extra) -> None:
        line = {"overview": what, "db": connection.vendor, **filled, **extra, **timed(fn, a.repeat)}
        out.append(line)
        print(f"{what:<34} {line.get('range', ''):>4}  median {line['ms_median']:8.2f} ms  max {line['ms_max']:8.2f} ms")

    for key in ("1h", "24h", "7d"):
        window = selectors.parse_window({"range": key}, now=now)[0]
        emit("page", lambda w=window: selectors.overview(w, now=now), range=key)
    window = selectors.parse_window({"range": "7d"}, now=now)[0]
    emit("workflows", lambda: selectors.workflows(window, False), range="7d")
    emit("tasks (with queue depth, pollers)", lambda: selectors.tasks(window, now), range="7d")
    emit("engine", lambda: selectors.engine(now), range="now")
    emit("failure reasons", lambda: selectors.reasons(window), range="7d")
    hour = now - now % 3_600_000 - 3_600_000
    url = selectors.executions_url("bench_wf_03", None, "FAILED", hour, hour + 3_600_000)
    query = SearchQuery.from_querydict(QueryDict(url.split("?", 1)[1]))
    emit("a failure bar's executions search", lambda: search_executions(query), range="1h")
    return out


def run(a) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    from apps.core.clock import now_ms

    call_command("migrate", verbosity=0)
    now = now_ms()
    filled = fill(a, now)
    print(f"filled {a.n:,} executions (+{a.pending:,} running) in {filled['fill_executions_s']} s, "
          f"{filled['rollup_rows']:,} rollup rows in {filled['fill_rollups_s']} s")
    from django.db import connection

    if a.check:
        check(now)
    with connection.cursor() as c:  # fresh statistics, as autovacuum / a periodic ANALYZE keep them
        c.execute("ANALYZE")
    lines = measure(a, now, filled)
    for line in lines:
        print(json.dumps(line))
    if a.json_out:
        Path(a.json_out).parent.mkdir(parents=True, exist_ok=True)
        with open(a.json_out, "a") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--pg-url", default=os.environ.get("PG_URL"))
    p.add_argument("-n", type=int, default=1_000_000)
    p.add_argument("--days", type=int, default=7)
    p.add_argument("--names", type=int, default=20)
    p.add_argument("--task-types", type=int, default=10)
    p.add_argument("--pending", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json-out")
    p.add_argument("--check", action="store_true", help="compare the fill's rollup rows with rollup.increments'")
    a = p.parse_args()
    if not 0 < a.n <= MAX_N:
        raise SystemExit(f"-n must be between 1 and {MAX_N}")
    sys.path.insert(0, str(REPO / "bench"))
    from inprocess_db import throwaway_database
    with throwaway_database(a.db, a.pg_url, "overview"):
        run(a)


if __name__ == "__main__":
    main()
