"""Writing the Overview's per-interval counts (``apps.overview.models``) in the engine's
own transaction, and pruning old ones.

``record`` is a transition recorder (``apps.engine.notify.add_transition_recorder``):
``apps.engine.store`` calls it inside the transaction of every saved change with the
execution, its status as loaded (None for a new execution) and the tasks whose status
changed (``[(task, status as loaded or None for a new task)]``). It turns them into
counter increments (see ``models`` for what is counted, at which time) and writes them
with one ``INSERT ... ON CONFLICT DO UPDATE SET count = count + excluded.count`` per
table, rows in key order so two transactions never wait for each other in a circle.
A rolled-back change (a lost compare-and-set re-runs the whole operation) rolls its
counts back with it, so each change is counted once.

What the counts are not: an execution that ends, is retried and ends again is counted at
each end (the search finds it once, at its last end); a restarted execution is counted
started once (at its first ``createTime``).

Pruning (``prune_tick``, a sweeper tick hook): minute rows older than
``OVERVIEW_MINUTE_KEEP_HOURS`` (48) and hour and day rows older than ``OVERVIEW_HOUR_KEEP_DAYS``
(90) are deleted, at most ``PRUNE_BATCH`` rows a statement, once a minute per process.
"""
from __future__ import annotations

import hashlib
import time
import zlib
from collections import Counter

from django.conf import settings
from django.db import connection

from apps.engine.status import TERMINAL_WORKFLOW
from apps.overview.bins import bin_of
from apps.overview.models import (DAY_MS, HIST_PERIODS, HOUR_MS, MINUTE_MS, PERIODS, REASON_ROLLUP_TABLE, ROLLUP_TABLE,
                                  ReasonRollup, Rollup)

WORKFLOW = "workflow"
TASK = "task"
# task statuses counted, each under its own measure
TASK_ENDS = ("COMPLETED", "FAILED", "FAILED_WITH_TERMINAL_ERROR", "TIMED_OUT")
FAILED_WORKFLOW = ("FAILED", "TIMED_OUT", "TERMINATED")
PRUNE_BATCH = 5000
PRUNE_EVERY_S = 60.0


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
    """The transition recorder (see the module doc). Quick: no I/O but two statements."""
    counts, reasons = increments(wf, previous, task_changes)
    if not counts and not reasons:
        return
    slot = zlib.crc32(wf.workflow_id.encode()) % slots()
    write(counts, reasons, slot)


def write(counts: Counter, reasons: Counter, slot: int = 0) -> None:
    """Add ``increments``' output to the rollup tables (both periods), in the current
    transaction."""
    rows: Counter = Counter()
    for (kind, name, version, measure, b, at), n in counts.items():
        for period in (HIST_PERIODS if b >= 0 else PERIODS):
            rows[(period, kind, at - at % period, name, version, measure, b, slot)] += n
    reason_rows: Counter = Counter()
    examples: dict = {}
    for (name, key, example, at), n in reasons.items():
        digest = hashlib.sha1(key.encode()).hexdigest()
        examples[digest] = (key, example)
        for period in PERIODS:
            reason_rows[(period, at - at % period, name, digest, slot)] += n
    _add(ROLLUP_TABLE, ("period_ms", "kind", "bucket", "name", "version", "measure", "bin", "slot"), (),
         [(k, (), rows[k]) for k in sorted(rows)])
    _add(REASON_ROLLUP_TABLE, ("period_ms", "bucket", "name", "reason_hash", "slot"), ("reason_key", "example"),
         [(k, examples[k[3]], reason_rows[k]) for k in sorted(reason_rows)])


def _add(table: str, key: tuple[str, ...], extra: tuple[str, ...], rows: list[tuple]) -> None:
    """One ``INSERT ... ON CONFLICT (key) DO UPDATE SET count = count + excluded.count`` of
    ``rows`` = ``[(key values, extra values, count)]``, in the order given (sorted by key)."""
    if not rows:
        return
    columns = (*key, *extra, "count")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
            + ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * len(rows))
            + f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET count = {table}.count + excluded.count",
            [v for k, e, n in rows for v in (*k, *e, n)])


_last_prune = [0.0]


def prune(now: int) -> int:
    """Delete expired rollup rows (at most ``PRUNE_BATCH`` per table and period); returns
    how many went."""
    done = 0
    keep = {MINUTE_MS: _setting("MINUTE_KEEP_HOURS") * HOUR_MS, HOUR_MS: _setting("HOUR_KEEP_DAYS") * DAY_MS,
            DAY_MS: _setting("HOUR_KEEP_DAYS") * DAY_MS}
    for model in (Rollup, ReasonRollup):
        for period, kept in keep.items():
            ids = list(model.objects.filter(period_ms=period, bucket__lt=now - kept)
                       .values_list("id", flat=True)[:PRUNE_BATCH])
            if ids:
                done += model.objects.filter(id__in=ids).delete()[0]
    return done


def prune_tick() -> int:
    """The sweeper tick hook: ``prune`` at most once every ``PRUNE_EVERY_S`` seconds."""
    from apps.core.clock import now_ms

    if time.monotonic() - _last_prune[0] < PRUNE_EVERY_S:
        return 0
    _last_prune[0] = time.monotonic()
    return prune(now_ms())
