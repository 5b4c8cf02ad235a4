"""Counting the Overview's per-interval figures (``apps.overview.models``) as the engine
saves its changes, and folding and pruning them.

``record`` is a transition recorder (``apps.engine.notify.add_transition_recorder``):
``apps.engine.store`` calls it inside the transaction of every saved change with the
execution, its status as loaded (None for a new execution) and the tasks whose status
changed (``[(task, status as loaded or None for a new task)]``). It turns them into
counter increments (see ``models`` for what is counted, at which time) and hands them,
once that transaction has committed (``transaction.on_commit``: a rolled-back change or
savepoint, or a lost compare-and-set that re-runs the operation, counts nothing), to
this process's **pending counts**. A flusher thread (one per process, started by the
first count) adds the pending counts to the minute rows every ``FLUSH_EVERY_S``
(``OVERVIEW_FLUSH_SECONDS``, default 1) with one ``INSERT ... ON CONFLICT DO UPDATE SET
count = count + excluded.count`` per table, rows in key order, in a transaction of its
own; the page's reader flushes its own process's counts first (``flush``), and the
process flushes at exit.

Why not in the engine's transaction (as until 2026-12-07): the upsert was the costliest
statement of a task update on PostgreSQL (250-330 µs of execution per call against 40-90
µs for the other writes, ``pg_stat_statements``, 1000 workflows x 3 tasks), every
concurrent update of the same task type waited for the row lock of the same counter until
its COMMIT, and under group commit on PostgreSQL two batches locked counters in opposite
orders and deadlocked. What it costs: the Overview lags the engine by up to
``FLUSH_EVERY_S`` for changes saved by another process, and a process that is killed
(SIGKILL, a crash) loses the counts of its last ``FLUSH_EVERY_S``; a process that ends
normally (SIGTERM: the server, a cluster worker after its sweeper stopped) writes them,
for at most ``EXIT_FLUSH_S``; one ended by the stop watchdog (``os._exit``) does not.
Executions, their history and the searches are not affected: the counts are a summary,
as Conductor's metrics are (Conductor keeps them in memory only).

Folding (``fold``, a sweeper tick hook every ``FOLD_EVERY_S``): the minute rows' counts not
yet folded (``count - folded``) are added to the hour rows (histograms also to the day
rows) and marked folded, in one transaction, so a minute row is folded once whatever
commits late. The hot path writes a third of the rows it would write for all periods
(one row per counter instead of two or three); readers of hour and day rows add the
not yet folded remainder (``selectors``), so a long range is exact at once.

What the counts are not: an execution that ends, is retried and ends again is counted at
each end (the search finds it once, at its last end); a restarted execution is counted
started once (at its first ``createTime``).

Pruning (in the same tick hook): folded minute rows older than ``OVERVIEW_MINUTE_KEEP_HOURS``
(48) and hour and day rows older than ``OVERVIEW_HOUR_KEEP_DAYS`` (90) are deleted, at most
``PRUNE_BATCH`` rows a statement, once a minute per process.
"""
from __future__ import annotations

import atexit
import hashlib
import logging
import multiprocessing as mp
import os
import threading
import time
from collections import Counter
from functools import lru_cache
from multiprocessing import util as mp_util

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F

from apps.engine.status import TERMINAL_WORKFLOW
from apps.engine.store import sql_cursor
from apps.overview.bins import bin_of
from apps.overview.models import (DAY_MS, FOLD_PERIODS, HIST_FOLD_PERIODS, HOUR_MS, MINUTE_MS, REASON_ROLLUP_TABLE,
                                  ROLLUP_TABLE, ReasonRollup, Rollup, RollupFold)

WORKFLOW = "workflow"
TASK = "task"
# task statuses counted, each under its own measure
TASK_ENDS = ("COMPLETED", "FAILED", "FAILED_WITH_TERMINAL_ERROR", "TIMED_OUT")
FAILED_WORKFLOW = ("FAILED", "TIMED_OUT", "TERMINATED")
PRUNE_BATCH = 5000
PRUNE_EVERY_S = 60.0
FOLD_EVERY_S = 10.0
# how long after a fold its minute rows are still looked at for late counts (a transaction
# that computed its increments before and commits after the fold); readers look as far
LATE_MS = 10 * MINUTE_MS
ROLLUP_KEY = ("period_ms", "kind", "bucket", "name", "version", "measure", "bin", "slot")
REASON_KEY = ("period_ms", "bucket", "name", "reason_hash", "slot")


def _setting(name: str) -> int:
    return int(settings.CONDUCTOR_OVERVIEW[name])


def slots() -> int:
    """How many rows one counter is spread over (``OVERVIEW_ROLLUP_SLOTS``, default 4)."""
    return max(1, _setting("ROLLUP_SLOTS"))


def task_label(task) -> str:
    """A task's type as the Overview and ``/metrics`` name it: the TaskDef name of a
    worker (SIMPLE) task, the type of a system task."""
    return task.task_def_name if task.task_type == "SIMPLE" else task.task_type


def increments(wf, previous: str | None, task_changes: list) -> tuple[Counter, Counter]:
    """The counter increments of one saved change, before they are spread over periods:
    ``({(kind, name, version, measure, bin, time ms): n}, {(name, masked reason, example,
    time ms): n})``."""
    from apps.ui.selectors import mask_ids

    counts: Counter = Counter()
    reasons: Counter = Counter()
    name, version = wf.workflow_name, wf.workflow_version
    if previous is None:
        counts[(WORKFLOW, name, version, "started", -1, wf.create_time)] += 1
    if wf.status in TERMINAL_WORKFLOW and previous != wf.status:
        end = wf.end_time or wf.update_time
        counts[(WORKFLOW, name, version, wf.status, -1, end)] += 1
        counts[(WORKFLOW, name, version, "duration", bin_of(end - wf.create_time), end)] += 1
        if wf.status in FAILED_WORKFLOW and wf.reason_for_incompletion:
            reasons[(name, mask_ids(wf.reason_for_incompletion), wf.reason_for_incompletion, end)] += 1
    for task, old in task_changes:
        if task.status == old or task.status not in TASK_ENDS or not task.end_time:
            continue
        label = task_label(task)
        counts[(TASK, label, 0, task.status, -1, task.end_time)] += 1
        if task.start_time:
            if task.scheduled_time:
                counts[(TASK, label, 0, "lag", bin_of(task.start_time - task.scheduled_time), task.end_time)] += 1
            counts[(TASK, label, 0, "run", bin_of(task.end_time - task.start_time), task.end_time)] += 1
    return counts, reasons


def record(wf, previous: str | None, task_changes: list) -> None:
    """The transition recorder (see the module doc): no I/O; the increments reach the
    pending counts once the current transaction commits (at once outside one)."""
    counts, reasons = increments(wf, previous, task_changes)
    if not counts and not reasons:
        return
    rows, reason_rows, examples = minute_rows(counts, reasons, _slot())
    transaction.on_commit(lambda: _pending.add(rows, reason_rows, examples), robust=True)


def _slot() -> int:
    """This process's slot: two processes' flushes never wait for each other's row
    locks unless their pids share a slot."""
    return os.getpid() % slots()


def minute_rows(counts: Counter, reasons: Counter, slot: int = 0) -> tuple[Counter, Counter, dict]:
    """``increments``' output as minute-row increments: ``({rollup key: n}, {reason key:
    n}, {reason hash: (masked reason, example)})`` (keys as ``ROLLUP_KEY`` and
    ``REASON_KEY``)."""
    rows: Counter = Counter()
    for (kind, name, version, measure, b, at), n in counts.items():
        rows[(MINUTE_MS, kind, at - at % MINUTE_MS, name, version, measure, b, slot)] += n
    reason_rows: Counter = Counter()
    examples: dict = {}
    for (name, key, example, at), n in reasons.items():
        digest = hashlib.sha1(key.encode()).hexdigest()
        examples[digest] = (key, example)
        reason_rows[(MINUTE_MS, at - at % MINUTE_MS, name, digest, slot)] += n
    return rows, reason_rows, examples


def write_rows(rows: Counter, reason_rows: Counter, examples: dict) -> None:
    """Add ``minute_rows``' output to the rollup tables, in the current transaction."""
    with (sql_cursor() if max(len(rows), len(reason_rows)) <= FEW_ROWS else connection.cursor()) as cursor:
        _add(cursor, ROLLUP_TABLE, ROLLUP_KEY, (), [(k, (), rows[k]) for k in sorted(rows)])
        _add(cursor, REASON_ROLLUP_TABLE, REASON_KEY, ("reason_key", "example"),
             [(k, examples[k[3]], reason_rows[k]) for k in sorted(reason_rows)])


class _Pending:
    """This process's counts committed and not yet written (see the module doc), and its
    flusher thread."""

    def __init__(self):
        self.lock = threading.Condition(threading.Lock())
        self.rows: Counter = Counter()
        self.reason_rows: Counter = Counter()
        self.examples: dict = {}
        self.thread: threading.Thread | None = None
        self.pid = 0
        self.stopping = False

    def add(self, rows: Counter, reason_rows: Counter, examples: dict) -> None:
        """Add one committed change's minute-row increments; starts the flusher in this
        process (a forked child has none) when it is not running."""
        with self.lock:
            self.rows.update(rows)
            self.reason_rows.update(reason_rows)
            self.examples.update(examples)
            if self.thread is None or self.pid != os.getpid() or not self.thread.is_alive():
                if self.pid != os.getpid() and mp.parent_process() is not None:
                    # a child of multiprocessing (a cluster worker) ends through its
                    # finalizers, not atexit (its registry is emptied in each new child)
                    mp_util.Finalize(None, _flush_at_exit, exitpriority=0)  # after the sweeper's stop (10)
                self.pid = os.getpid()
                self.thread = threading.Thread(target=self._run, name="overview-flusher", daemon=True)
                self.thread.start()

    def take(self) -> tuple[Counter, Counter, dict]:
        with self.lock:
            taken = self.rows, self.reason_rows, self.examples
            self.rows, self.reason_rows, self.examples = Counter(), Counter(), {}
            return taken

    def put_back(self, rows: Counter, reason_rows: Counter, examples: dict) -> None:
        with self.lock:
            self.rows.update(rows)
            self.reason_rows.update(reason_rows)
            self.examples.update(examples)

    def _run(self) -> None:
        idle_s = 0.0
        while True:
            with self.lock:
                if not self.stopping:
                    self.lock.wait(flush_every_s())
                stopping = self.stopping
            try:
                idle_s = 0.0 if flush() else idle_s + flush_every_s()
            except Exception:  # noqa: BLE001 - put back by flush; tried again next time
                log.warning("writing the Overview's counts failed; trying again", exc_info=True)
                connection.close()
            if stopping or idle_s >= IDLE_CLOSE_S:
                connection.close()  # idle: its connection goes back (tests drop their databases)
                idle_s = 0.0
            if stopping:
                return

    def stop(self, timeout_s: float, write: bool) -> None:
        """Flush what is pending (or drop it: ``write`` false), close the flusher's
        connection and end it; the next count starts a new flusher."""
        if not write:
            self.take()
        with self.lock:
            thread, self.thread = self.thread, None
            self.stopping = True
            self.lock.notify_all()
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(timeout_s)
        with self.lock:
            self.stopping = False


log = logging.getLogger(__name__)
_pending = _Pending()
# a forked child (a cluster worker) starts with none: what its parent had pending is the
# parent's to write, and a lock held by one of the parent's threads at the fork would be
# held for good in the child
os.register_at_fork(after_in_child=_pending.__init__)
# the flusher closes its connection after this many seconds without counts to write
IDLE_CLOSE_S = 2.0


def flush_every_s() -> float:
    """Seconds between two writes of the pending counts (``OVERVIEW_FLUSH_SECONDS``, default 1)."""
    return max(0.05, float(settings.CONDUCTOR_OVERVIEW.get("FLUSH_SECONDS", 1.0)))


def flush() -> int:
    """Write this process's pending counts to the minute rows in a transaction of their
    own (in the calling thread); returns how many rows were written (0: nothing was
    pending). On failure the counts are put back and the error raised. The page's reader
    (``selectors.overview``) calls it first, so its own process's counts are never behind."""
    rows, reason_rows, examples = _pending.take()
    if not rows and not reason_rows:
        return 0
    try:
        with transaction.atomic():
            write_rows(rows, reason_rows, examples)
    except BaseException:
        _pending.put_back(rows, reason_rows, examples)
        raise
    return len(rows) + len(reason_rows)


def stop_flusher(timeout_s: float = 5.0, write: bool = True) -> None:
    """End this process's flusher, writing what is pending first (``write``) or dropping
    it (tests, before their database is dropped: pytest-django refuses database access
    then)."""
    _pending.stop(timeout_s, write)


# the most a process's exit waits for its last counts to be written (seconds)
EXIT_FLUSH_S = 2.0


@atexit.register
def _flush_at_exit() -> None:
    """Write the pending counts as the process ends, in a thread of its own (its own
    connection, whatever state the ending thread's is in) and for at most
    ``EXIT_FLUSH_S``: the exit is never held longer (the counts are then lost)."""
    deadline = time.monotonic() + EXIT_FLUSH_S
    thread = _pending.thread
    if thread is not None and thread.is_alive():
        # the flusher writes what it took (a flush in flight) and what is pending, then ends
        _pending.stop(EXIT_FLUSH_S, write=True)
    if not _pending.rows and not _pending.reason_rows:
        return
    writer = threading.Thread(target=_flush_and_close, name="overview-last-flush", daemon=True)
    writer.start()
    writer.join(max(0.0, deadline - time.monotonic()))


def _flush_and_close() -> None:
    try:
        flush()
    except Exception as exc:  # noqa: BLE001 - the database may be gone already (a script's)
        log.warning("the Overview's last counts were not written at exit: %s", exc)
    finally:
        connection.close()


def _add(cursor, table: str, key: tuple[str, ...], extra: tuple[str, ...], rows: list[tuple]) -> None:
    """One ``INSERT ... ON CONFLICT (key) DO UPDATE SET count = count + excluded.count`` of
    ``rows`` = ``[(key values, extra values, count)]``, in the order given (sorted by key),
    on ``cursor`` (see ``FEW_ROWS``)."""
    if not rows:
        return
    n = len(rows)
    statement = _few_rows_upsert(table, key, extra, n) if n <= FEW_ROWS else _upsert(table, key, extra, n)
    cursor.execute(statement, [v for k, e, n in rows for v in (*k, *e, n)])


# A change writes a few rows (a handful of counters, a failure reason): their statements
# are built once per shape and go through the engine's cursor (``apps.engine.store.sql_cursor``:
# parameters bound on the server and statements prepared on PostgreSQL). More rows (a
# fold's, a rare large change) go through Django's cursor: bound on the client, so no limit
# on the number of parameters of one statement.
FEW_ROWS = 16


def _upsert(table: str, key: tuple[str, ...], extra: tuple[str, ...], n: int) -> str:
    """The statement of ``_add`` for ``n`` rows."""
    columns = (*key, *extra, "count")
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
            + ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * n)
            + f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET count = {table}.count + excluded.count")


_few_rows_upsert = lru_cache(maxsize=64)(_upsert)


def unfolded_since() -> int:
    """The earliest minute bucket (epoch ms) that may hold counts not yet folded: rows
    before it are folded (``fold``)."""
    last = RollupFold.objects.values_list("folded_before", flat=True).first()
    return max(0, (last or 0) - LATE_MS)


def fold(now: int) -> int:
    """Add the minute rows' counts not yet folded (``count - folded``, buckets from
    ``unfolded_since``) to the hour rows (histograms also to the day rows; failure reasons
    to the hour rows) and mark them folded, in one transaction. The minute rows are locked
    (PostgreSQL: ``FOR UPDATE``, in key order as the writers lock them) so no increment
    lands between reading and marking; two folds at once wait for each other on the
    ``RollupFold`` row. Returns the minute rows folded."""
    lock = " FOR UPDATE" if connection.vendor == "postgresql" else ""
    with transaction.atomic():
        state = RollupFold.objects.select_for_update().first() or RollupFold.objects.create(folded_before=0)
        since = max(0, state.folded_before - LATE_MS)
        done = 0
        with connection.cursor() as cursor:
            adds: Counter = Counter()
            marks = []
            for kind in (TASK, WORKFLOW):  # key order: the writers' lock order
                cursor.execute(
                    f"SELECT id, kind, bucket, name, version, measure, bin, count - folded FROM {ROLLUP_TABLE}"
                    " WHERE period_ms = %s AND kind = %s AND bucket >= %s AND count > folded"
                    f" ORDER BY bucket, name, version, measure, bin, slot{lock}", [MINUTE_MS, kind, since])
                for row_id, kind_, bucket, name, version, measure, b, n in cursor.fetchall():
                    for period in (HIST_FOLD_PERIODS if b >= 0 else FOLD_PERIODS):
                        adds[(period, kind_, bucket - bucket % period, name, version, measure, b, 0)] += n
                    marks.append((n, row_id))
            _add(cursor, ROLLUP_TABLE, ROLLUP_KEY, (), [(k, (), adds[k]) for k in sorted(adds)])
            cursor.executemany(f"UPDATE {ROLLUP_TABLE} SET folded = folded + %s WHERE id = %s", marks)
            done += len(marks)
            cursor.execute(
                f"SELECT id, bucket, name, reason_hash, reason_key, example, count - folded FROM {REASON_ROLLUP_TABLE}"
                " WHERE period_ms = %s AND bucket >= %s AND count > folded"
                f" ORDER BY bucket, name, reason_hash, slot{lock}", [MINUTE_MS, since])
            reason_adds: Counter = Counter()
            texts: dict = {}
            marks = []
            for row_id, bucket, name, digest, key, example, n in cursor.fetchall():
                for period in FOLD_PERIODS:
                    reason_adds[(period, bucket - bucket % period, name, digest, 0)] += n
                texts[digest] = (key, example)
                marks.append((n, row_id))
            _add(cursor, REASON_ROLLUP_TABLE, REASON_KEY, ("reason_key", "example"),
                 [(k, texts[k[3]], reason_adds[k]) for k in sorted(reason_adds)])
            cursor.executemany(f"UPDATE {REASON_ROLLUP_TABLE} SET folded = folded + %s WHERE id = %s", marks)
            done += len(marks)
        state.folded_before = max(state.folded_before, now)
        state.save(update_fields=["folded_before"])
    return done


def prune(now: int) -> int:
    """Delete expired rollup rows (at most ``PRUNE_BATCH`` per table and period; minute
    rows only once folded); returns how many went."""
    done = 0
    keep = {MINUTE_MS: _setting("MINUTE_KEEP_HOURS") * HOUR_MS, HOUR_MS: _setting("HOUR_KEEP_DAYS") * DAY_MS,
            DAY_MS: _setting("HOUR_KEEP_DAYS") * DAY_MS}
    for model in (Rollup, ReasonRollup):
        for period, kept in keep.items():
            expired = model.objects.filter(period_ms=period, bucket__lt=now - kept)
            if period == MINUTE_MS:
                expired = expired.filter(count=F("folded"))
            ids = list(expired.values_list("id", flat=True)[:PRUNE_BATCH])
            if ids:
                done += model.objects.filter(id__in=ids).delete()[0]
    return done


_last = {"fold": 0.0, "prune": 0.0}


def fold_and_prune_tick() -> int:
    """The sweeper tick hook: ``fold`` at most every ``FOLD_EVERY_S`` seconds and
    ``prune`` at most every ``PRUNE_EVERY_S`` seconds (per process); returns the rows
    folded and deleted."""
    from apps.core.clock import now_ms

    done = 0
    for job, every, fn in (("fold", FOLD_EVERY_S, fold), ("prune", PRUNE_EVERY_S, prune)):
        if time.monotonic() - _last[job] >= every:
            _last[job] = time.monotonic()
            done += fn(now_ms())
    return done
