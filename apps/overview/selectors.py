"""What the Overview page shows, read from the rollup rows and a few indexed live queries.
No writes; nothing here scans executions.

``overview(window, by_version)`` returns one JSON-ready dict (the shape is described in
``docs/ui.md#overview``); ``window`` comes from ``parse_window``. Times are epoch ms,
durations ms. Costs, whatever the number of executions kept: the two rollup reads touch
the rows of the window only (``overview_rollup_key`` is ordered by period, kind, bucket);
queue depth and oldest pending task read the SCHEDULED tasks through the partial index
``task_pending``; the sweeper lag reads one row of ``wf_due``; the outboxes count their
pending rows through their partial indexes (``bench/overview.py`` times them at 1,000,000
executions).
"""
from __future__ import annotations

import logging
import math
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlencode

from django.db.models import Count, Min, Q
from django.urls import reverse

from apps.core.clock import now_ms
from apps.engine.status import ACTIVE_WORKFLOW
from apps.overview.bins import percentile
from apps.overview.models import DAY_MS, HOUR_MS, MINUTE_MS, REASON_ROLLUP_TABLE, ROLLUP_TABLE
from apps.overview.rollup import FAILED_WORKFLOW, TASK, TASK_ENDS, WORKFLOW, flush, unfolded_since

RANGES = {"1h": HOUR_MS, "6h": 6 * HOUR_MS, "24h": 24 * HOUR_MS, "7d": 7 * 24 * HOUR_MS}
DEFAULT_RANGE = "1h"
MAX_SPAN_MS = 90 * 24 * HOUR_MS  # hour rows are kept 90 days
MINUTE_STEPS = (1, 2, 5, 10, 15, 30)  # minutes per interval on minute rows (spans up to 6 h)
HOUR_STEPS = (1, 2, 3, 6, 12, 24)  # hours per interval on hour rows
MAX_INTERVALS = 180
WORKFLOW_MEASURES = ("started", "COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED")
EVALUATED_TYPES = ("INLINE", "LAMBDA", "JSON_JQ_TRANSFORM", "SWITCH", "DECISION")
TOP_REASONS = 10
NEXT_FIRINGS = 5


@dataclass(frozen=True)
class Window:
    """The time window shown: ``[start, end)`` epoch ms, cut in intervals of ``step`` ms
    read from rollup rows of ``period`` ms; ``key`` the range chosen (``1h``...,
    ``custom``)."""

    key: str
    start: int
    end: int
    step: int
    period: int

    @property
    def intervals(self) -> list[int]:
        """The start of each interval."""
        return list(range(self.start, self.end, self.step))


def _step(span: int) -> tuple[int, int]:
    """(step ms, period ms) for a span: minute rows up to 6 h, hour rows beyond; the
    smallest step giving at most ``MAX_INTERVALS`` intervals."""
    if span <= 6 * HOUR_MS:
        for m in MINUTE_STEPS:
            if span / (m * MINUTE_MS) <= MAX_INTERVALS:
                return m * MINUTE_MS, MINUTE_MS
        return MINUTE_STEPS[-1] * MINUTE_MS, MINUTE_MS
    for h in HOUR_STEPS:
        if span / (h * HOUR_MS) <= MAX_INTERVALS:
            return h * HOUR_MS, HOUR_MS
    return HOUR_STEPS[-1] * HOUR_MS, HOUR_MS


def parse_window(params, now: int | None = None) -> tuple[Window, list[str]]:
    """The window of the request's GET ``params``: ``range`` (``1h``, ``6h``, ``24h``, ``7d``;
    default ``1h``) ending now, or ``range=custom`` with ``from``/``to`` (epoch ms). Ends are
    widened to whole intervals. Returns (window, errors); a bad custom range falls back to
    the default with an error naming the parameter."""
    now = now_ms() if now is None else now
    errors: list[str] = []
    key = params.get("range") or DEFAULT_RANGE
    if key == "custom":
        try:
            start, end = int(params.get("from", "")), int(params.get("to", ""))
            if not 0 <= start < end:
                raise ValueError
            if end - start > MAX_SPAN_MS:
                errors.append("from/to: a custom range spans at most 90 days")
                start = end - MAX_SPAN_MS
        except ValueError:
            errors.append("from/to: a custom range needs from < to, both epoch milliseconds")
            key, start, end = DEFAULT_RANGE, now - RANGES[DEFAULT_RANGE], now
    elif key in RANGES:
        start, end = now - RANGES[key], now
    else:
        errors.append(f"range must be one of {', '.join(RANGES)} or custom, not {key!r}")
        key, start, end = DEFAULT_RANGE, now - RANGES[DEFAULT_RANGE], now
    step, period = _step(end - start)
    end = -(-end // step) * step  # the interval holding "now" is the last one
    start = start - start % step
    return Window(key, start, end, step, period), errors


@lru_cache(maxsize=4096)
def iso(ms: int) -> str:
    """Epoch ms as the executions search's datetime-local text (UTC, milliseconds)."""
    from datetime import datetime, timedelta, timezone

    return (datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


@lru_cache(maxsize=8)
def _path(name: str) -> str:
    return reverse(name)


def executions_url(name: str | None, version: int | None, measure: str, lo: int, hi: int,
                   extra: dict | None = None) -> str:
    """The executions search counting what a workflow figure counts in ``[lo, hi)``:
    ``started`` by start time, a status by end time (both ends included, to the ms)."""
    params: list[tuple[str, str]] = []
    if name is not None:
        params.append(("name", name))
    if version is not None:
        params.append(("version", str(version)))
    if measure == "started":
        params += [("start_from", iso(lo)), ("start_to", iso(hi - 1))]
    else:
        statuses = FAILED_WORKFLOW if measure == "failed_any" else (measure,)
        params += [("status", s) for s in statuses]
        params += [("end_from", iso(lo)), ("end_to", iso(hi - 1))]
    params += list((extra or {}).items())
    return _path("ui:executions") + "?" + urlencode(params)


def tasks_url(label: str, status: str, lo: int | None = None, hi: int | None = None) -> str:
    """The task search counting what a task figure counts: attempts of ``label`` with
    ``status``, ended in ``[lo, hi)`` when given."""
    params = {"type": label, "status": status}
    if lo is not None:
        params["query"] = f"endTime>{lo - 1} AND endTime<{hi}"
    return _path("ui:tasks") + "?" + urlencode(params)


def _series(window: Window, kind: str, by_version: bool) -> dict:
    """``{(name, version or None): {"counts": {measure: [n per interval]}, "hist": {measure:
    {bin: n}}}}``: two grouped reads of the window's rollup rows, the counts grouped by
    interval, the histograms over the whole window (so each returns few rows whatever the
    number of rows read). Hour and day rows are read with the minute rows' part not yet
    folded into them (``rollup.fold``), in the same statement (one snapshot: a fold
    committing meanwhile is seen whole or not at all). Plain SQL: the ORM's per-row
    converters cost more than the query."""
    from django.db import connection

    size = len(window.intervals)
    version = "version" if by_version and kind == WORKFLOW else "0"
    group = "name, version" if version == "version" else "name"
    interval = "bucket" if window.step == window.period else f"(bucket - {int(window.start)}) / {int(window.step)}"
    day = window.end - window.start > 24 * HOUR_MS  # percentiles beyond 24 h: the day rows of the days touched
    hist_period, hist_start = (DAY_MS, window.start - window.start % DAY_MS) if day else (window.period, window.start)
    out: dict = {}

    def entry(name, v):
        return out.setdefault((name, v if by_version and kind == WORKFLOW else None), {"counts": {}, "hist": {}})

    # minute rows before this are all folded (read once: a fold meanwhile only moves it on)
    since = unfolded_since() if window.period != MINUTE_MS else 0

    def read(cursor, by_bin: bool, period: int, start: int, folded_at: str) -> list:
        """The rows of ``period`` in [start, end) (counts, or the histogram bins with
        ``by_bin``) grouped by ``folded_at``, plus, for hour and day rows, the minute rows'
        unfolded part as rows keyed by their ``period`` bucket (``unfolded`` = 1)."""
        select = f"name, {version}, measure" + (", bin" if by_bin else "")
        rest = "bin >= 0" if by_bin else "bin = -1"
        sql = (f"SELECT {select}, 0, {folded_at}, SUM(count) FROM {ROLLUP_TABLE} WHERE period_ms = %s AND kind = %s"
               f" AND bucket >= %s AND bucket < %s AND {rest} GROUP BY {group}, measure, {folded_at}")
        params = [period, kind, start, window.end]
        if period != MINUTE_MS:
            sql += (f" UNION ALL SELECT {select}, 1, bucket - bucket %% {int(period)}, SUM(count - folded)"
                    f" FROM {ROLLUP_TABLE} WHERE period_ms = %s AND kind = %s AND bucket >= %s AND bucket < %s"
                    f" AND count > folded AND bucket - bucket %% {int(period)} >= %s AND {rest}"
                    f" GROUP BY {group}, measure, {'bin, ' if by_bin else ''}bucket - bucket %% {int(period)}")
            params += [MINUTE_MS, kind, max(start, since), window.end, start]
        cursor.execute(sql, params)
        return cursor.fetchall()

    with connection.cursor() as cursor:
        for name, v, measure, unfolded, at, n in read(cursor, False, window.period, window.start, interval):
            i = (at - window.start) // window.step if unfolded or window.step == window.period else at
            entry(name, v)["counts"].setdefault(measure, [0] * size)[int(i)] += int(n)
        for name, v, measure, b, _unfolded, _at, n in read(cursor, True, hist_period, hist_start, "bin"):
            hist = entry(name, v)["hist"].setdefault(measure, {})
            hist[b] = hist.get(b, 0) + int(n)
    return out


def _ms(value: float | None) -> int | None:
    return None if value is None else int(math.ceil(value))


def workflows(window: Window, by_version: bool) -> list[dict]:
    """Per workflow name (and version with ``by_version``): counts per interval, totals,
    failure rate, p50/p95/p99 duration (ms), and the search URL of each figure."""
    size = len(window.intervals)
    rows = []
    for (name, version), entry in sorted(_series(window, WORKFLOW, by_version).items(),
                                         key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        counts = {m: entry["counts"].get(m, [0] * size) for m in WORKFLOW_MEASURES}
        totals = {m: sum(v) for m, v in counts.items()}
        ended = sum(totals[m] for m in WORKFLOW_MEASURES if m != "started")
        failed = sum(totals[m] for m in FAILED_WORKFLOW)
        hist = entry["hist"].get("duration", {})
        rows.append({
            "name": name, "version": version, "series": counts, "totals": totals, "failed": failed,
            "failureRate": failed / ended if ended else None,
            "p50": _ms(percentile(hist, 0.5)), "p95": _ms(percentile(hist, 0.95)), "p99": _ms(percentile(hist, 0.99)),
            "totalUrls": {m: executions_url(name, version, m, window.start, window.end) for m in WORKFLOW_MEASURES},
            "failedUrl": executions_url(name, version, "failed_any", window.start, window.end),
        })
    return rows


def tasks(window: Window, now: int) -> list[dict]:
    """Per task type: live queue depth and oldest pending age, workers from poll data,
    ends per interval (by status), p95 worker lag and run time (ms), with search URLs."""
    from django.conf import settings

    from apps.engine.models import PollData

    # a queue whose last poll is older than this has no poller (as on /queues/)
    poller_recent_ms = settings.CONDUCTOR_UI["QUEUE_STALE_POLL_SECONDS"] * 1000
    size = len(window.intervals)
    series = _series(window, TASK, False)
    pending: dict[str, dict] = {}
    for _wf, task_type, def_name, n, oldest in scheduled_tasks(by_workflow=False):
        label = def_name if task_type == "SIMPLE" else task_type
        p = pending.setdefault(label, {"depth": 0, "oldest": None, "worker": task_type == "SIMPLE"})
        p["depth"] += n
        p["oldest"] = oldest if p["oldest"] is None else min(p["oldest"], oldest)
    pollers: dict[str, list] = defaultdict(list)
    for queue, domain, worker, last in PollData.objects.values_list("queue_name", "domain", "worker_id",
                                                                     "last_poll_time"):
        pollers[queue].append({"workerId": worker, "domain": domain, "lastPollTime": last,
                               "recent": now - last <= poller_recent_ms})
    names = sorted({k[0] for k in series} | set(pending) | set(pollers))
    rows = []
    for label in names:
        entry = series.get((label, None), {"counts": {}, "hist": {}})
        counts = {m: entry["counts"].get(m, [0] * size) for m in TASK_ENDS}
        p = pending.get(label, {"depth": 0, "oldest": None, "worker": label in pollers})
        workers = sorted(pollers.get(label, []), key=lambda w: -w["lastPollTime"])
        rows.append({
            "name": label, "series": counts, "totals": {m: sum(v) for m, v in counts.items()},
            "depth": p["depth"], "oldestPendingMs": now - p["oldest"] if p["oldest"] else None,
            "depthUrl": tasks_url(label, "SCHEDULED"),
            "totalUrls": {m: tasks_url(label, m, window.start, window.end) for m in TASK_ENDS},
            "p95LagMs": _ms(percentile(entry["hist"].get("lag", {}), 0.95)),
            "p95RunMs": _ms(percentile(entry["hist"].get("run", {}), 0.95)),
            "workers": workers,
            "noPoller": p["depth"] > 0 and p["worker"] and not any(w["recent"] for w in workers),
        })
    return rows


def engine(now: int) -> dict:
    """The engine's backlog: sweeper lag (ms the most overdue decide waits; 0 when none),
    the sweeper's last tick age (ms; None when none ran), evaluations waiting (script and
    jq tasks IN_PROGRESS), the status listeners' pending notifications and the internal
    event queue's unprocessed messages (count and oldest age, ms), the schedules' next
    firings."""
    from django.conf import settings
    from django.db import connection

    from apps.engine.cluster import LEASE_NAME
    from apps.engine.models import SweeperLease
    from apps.engine.store import WF_TABLE
    from apps.scheduler.models import WorkflowSchedule

    with connection.cursor() as cursor:  # literals, not parameters: SQLite then uses the partial index
        cursor.execute(f"SELECT next_decide_at FROM {WF_TABLE} WHERE status IN"
                       f" ({', '.join(repr(s) for s in ACTIVE_WORKFLOW)}) AND next_decide_at <= %s"
                       " ORDER BY next_decide_at LIMIT 1", [now])
        row = cursor.fetchone()
    oldest_due = row[0] if row else None
    lease = SweeperLease.objects.filter(name=LEASE_NAME).values_list("expires_at", flat=True).first()
    evaluations, listener, events = backlogs()
    firings = [{"name": n, "workflowName": w, "nextRunTime": t,
                "url": reverse("scheduler:schedule", args=[n])}
               for n, w, t in WorkflowSchedule.objects.filter(paused=False, next_run_time__isnull=False)
               .order_by("next_run_time", "name").values_list("name", "workflow_name", "next_run_time")[:NEXT_FIRINGS]]
    return {
        "sweeperLagMs": now - oldest_due if oldest_due is not None else 0,
        "sweeperLastTickAgeMs": max(0, now - (lease - settings.CONDUCTOR["SWEEPER_LEASE_MS"])) if lease else None,
        "pendingEvaluations": evaluations,
        "listenerBacklog": listener["n"], "listenerOldestMs": now - listener["oldest"] if listener["oldest"] else None,
        "eventBacklog": events["n"], "eventOldestMs": now - events["oldest"] if events["oldest"] else None,
        "brokerBacklog": [{"broker": b, "pending": n, "oldestMs": now - oldest if oldest else None}
                          for b, n, oldest in broker_backlog()],
        "nextFirings": firings,
    }


def scheduled_tasks(by_workflow: bool) -> list[tuple]:
    """``[(workflow name or "", task type, TaskDef name, SCHEDULED count, oldest scheduledTime)]``
    grouped by task (and workflow name with ``by_workflow``). The status is written as a
    literal: with a bound parameter SQLite cannot prove the partial index ``task_poll``
    (``status = 'SCHEDULED'``) applies and scans every task."""
    from django.db import connection

    from apps.engine.store import TASK_TABLE

    wf = "workflow_type" if by_workflow else "''"
    group = "workflow_type, task_type, task_def_name" if by_workflow else "task_type, task_def_name"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {wf}, task_type, task_def_name, COUNT(*), MIN(scheduled_time)"
                       f" FROM {TASK_TABLE} WHERE status = 'SCHEDULED' GROUP BY {group}")
        return cursor.fetchall()


def backlogs() -> tuple[int, dict, dict]:
    """(evaluations waiting, status-listener notifications pending, internal event-queue
    messages unprocessed), the last two as ``{"n", "oldest"}`` (oldest: created, epoch ms
    or None): three counts over the pending rows only."""
    from django.db import connection

    from apps.engine.models import EventMessage, TaskExecution
    from apps.listeners.models import NOTIFICATION_TABLE, Notification

    evaluations = TaskExecution.objects.filter(
        Q(task_type__in=EVALUATED_TYPES) | ~Q(evaluation_key=""), status="IN_PROGRESS").count()
    with connection.cursor() as cursor:  # a literal state: SQLite then uses the partial index notification_due
        cursor.execute(f"SELECT COUNT(*), MIN(created_time) FROM {NOTIFICATION_TABLE}"
                       f" WHERE state = '{Notification.State.PENDING.value}'")
        n, oldest = cursor.fetchone()
    listener = {"n": n, "oldest": oldest}
    events = EventMessage.objects.filter(processed_time__isnull=True).aggregate(n=Count("message_id"),
                                                                              oldest=Min("created_time"))
    return evaluations, listener, events


def broker_backlog() -> list[tuple[str, int, int | None]]:
    """``[(broker, messages waiting in the broker outbox, oldest created epoch ms)]`` per
    broker with any (apps.brokers: an EVENT task's message or a Kafka status event waits
    there while its broker is down). The state is written as a literal so SQLite can use
    the outbox's partial index ``broker_msg_due`` (state PENDING) instead of reading the
    sent rows too."""
    from django.db import connection

    from apps.brokers.models import MESSAGE_TABLE, BrokerMessage

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT broker, COUNT(*), MIN(created_time) FROM {MESSAGE_TABLE}"
                       f" WHERE state = '{BrokerMessage.State.PENDING.value}' GROUP BY broker ORDER BY broker")
        return [(b, n, oldest) for b, n, oldest in cursor.fetchall()]


def reasons(window: Window) -> list[dict]:
    """The most frequent failure reasons (ids masked, as the search's failure groups) of
    workflows that ended FAILED, TIMED_OUT or TERMINATED in the window, with the search
    URL listing exactly those executions."""
    from django.db import connection

    sql = (f"SELECT reason_key, name, example, count FROM {REASON_ROLLUP_TABLE}"
           " WHERE period_ms = %s AND bucket >= %s AND bucket < %s")
    params = [window.period, window.start, window.end]
    if window.period != MINUTE_MS:  # with the minute rows' part not yet folded (as ``_series``)
        sql += (f" UNION ALL SELECT reason_key, name, example, count - folded FROM {REASON_ROLLUP_TABLE}"
                " WHERE period_ms = %s AND bucket >= %s AND bucket < %s AND count > folded"
                f" AND bucket - bucket %% {int(window.period)} >= %s")
        params += [MINUTE_MS, max(window.start, unfolded_since()), window.end, window.start]
    groups: dict[str, dict] = {}
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT reason_key, name, MIN(example), SUM(count) FROM ({sql}) AS r GROUP BY reason_key, name",
                       params)
        rows = cursor.fetchall()
    for key, name, example, n in rows:
        g = groups.setdefault(key, {"key": key, "example": example, "count": 0, "workflows": {}})
        g["count"] += int(n)
        g["workflows"][name] = g["workflows"].get(name, 0) + int(n)
    top = sorted(groups.values(), key=lambda g: (-g["count"], g["key"]))[:TOP_REASONS]
    for g in top:
        names = sorted(g["workflows"])
        g["url"] = executions_url(None, None, "failed_any", window.start, window.end,
                                  {"cluster": g["key"]}) + "".join("&" + urlencode({"name": n}) for n in names)
        g["workflows"] = [{"name": n, "count": g["workflows"][n]} for n in names]
    return top


def overview(window: Window, by_version: bool = False, now: int | None = None) -> dict:
    """Everything the page shows (see the module doc), this process's pending counts
    written first (``rollup.flush``; when that write fails, the page shows what is written
    and the counts stay pending)."""
    try:
        flush()
    except Exception:  # noqa: BLE001 - a read-only page; the flusher tries again
        logging.getLogger(__name__).warning("writing this process's Overview counts failed", exc_info=True)
    now = now_ms() if now is None else now
    return {
        "now": now,
        "window": {"key": window.key, "start": window.start, "end": window.end, "step": window.step,
                   "period": window.period, "intervals": window.intervals},
        "byVersion": by_version,
        "workflows": workflows(window, by_version),
        "tasks": tasks(window, now),
        "engine": engine(now),
        "reasons": reasons(window),
    }
