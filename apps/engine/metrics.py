"""Prometheus metrics with Conductor's names and labels, computed from the database.

Every server process (the HTTP server, the django-q2 cluster, the sweeper) changes executions, and
only some of them serve ``GET /metrics``; counters kept in process memory would only see
the events of the process that is scraped. So nothing is counted in memory at event
time: a custom collector reads the database at scrape time (``DatabaseCollector``), and
every process that serves ``/metrics`` reports the same cluster-wide figures. Aggregate
them across instances with ``max()``, not ``sum()`` (or scrape one instance).

Gauges (a fresh grouped count per scrape; registered TaskDefs and WorkflowDefs appear
with 0 when idle):

* ``task_queue_depth{taskType,ownerApp}``: SCHEDULED tasks, including those waiting for
  a retry delay or callback (Conductor's queue size counts them too).
* ``task_in_progress{taskType,ownerApp}``: IN_PROGRESS tasks.
* ``workflow_running{workflowName,ownerApp}``: RUNNING and PAUSED executions
  (Conductor's pending-workflow count).

``taskType`` is the task's name for worker (SIMPLE) tasks and the type for system tasks
(Conductor's queue names); ``ownerApp`` is the TaskDef's/WorkflowDef's ``ownerApp``,
``system`` for system tasks, else ``unknown``.

Counters and histograms are derived from row timestamps. Each collector keeps a
watermark (epoch ms); a scrape adds the events whose timestamp lies in
``(watermark, now - METRICS_SETTLE_MS]`` and moves the watermark there:

* ``workflow_start_success_total{workflowName,version,ownerApp}``: executions created
  (``create_time`` in the window).
* ``workflow_failure_total{workflowName,status,ownerApp}``: executions that ended
  FAILED, TIMED_OUT or TERMINATED (``end_time`` in the window).
* ``workflow_execution_seconds{workflowName,ownerApp}`` (histogram): end - start of
  executions that COMPLETED in the window.
* ``task_execution_seconds{taskType,includeRetries="false",status}`` and its alias
  ``task_completed_seconds{taskType,status}`` (histograms): end - start of each task
  attempt that ended in the window (attempts that never started are not timed).
* ``task_timeout_total{taskType}``: attempts that ended TIMED_OUT.
* ``task_poll_total{taskType}``: worker tasks handed out by a poll (first delivery,
  ``start_time`` in the window; empty polls leave no row and are not counted).
* ``task_queue_wait_seconds{taskType}`` and its alias
  ``task_queue_wait_time_seconds{taskType}`` (histograms): start - scheduled of those
  worker tasks.

Why this is right across processes: the events are rows every process writes to the
same database, and each event is counted exactly once per collector because the windows
of one collector never overlap. ``METRICS_SETTLE_MS`` (5 s) keeps the upper edge behind "now" so
a transaction that stamped a row a moment before the scrape but commits after it is
still counted, and so are hosts whose clocks differ by less than that. Like Conductor's
own Micrometer counters, the values are per collector: they start when the process first
serves ``/metrics`` (counting the last ``METRICS_LOOKBACK_SECONDS``, default 3600) and
restart with the process, which Prometheus' ``rate()``/``increase()`` handle as a counter
reset. Removing executions never lowers a counter, since counted windows are not
re-read. Histograms use fixed buckets (seconds) instead of Micrometer's client-side
percentiles; ``_count`` and ``_sum`` have the same names, and
``histogram_quantile()`` gives the percentiles.

Scrape cost is bounded: two grouped queries over non-terminal rows (the gauges) and
four grouped queries over the rows of one window (normally the scrape interval; after a
long pause at most ``METRICS_LOOKBACK_SECONDS``), each returning one row per label set,
with the histogram buckets counted in SQL (``COUNT(*) FILTER``/``CASE``). Definition
owner lookups (two small queries over the TaskDef/WorkflowDef tables) are cached for a
minute. The window queries read ``create_time``,
``end_time`` and ``start_time``; an index on ``end_time`` of both execution tables keeps
them from scanning history.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.db.models import Case, CharField, Count, F, IntegerField, Q, Sum, Value, When
from django.db.models.fields.json import KT
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from apps.core.clock import now_ms
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.engine.status import ACTIVE_WORKFLOW


# Histogram upper bounds, in seconds.
TASK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
WORKFLOW_BUCKETS = (0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)

FAILED_WORKFLOW = ("FAILED", "TIMED_OUT", "TERMINATED")


def lookback_ms() -> int:
    """How far back a fresh collector starts counting (ms), from
    ``settings.CONDUCTOR["METRICS_LOOKBACK_SECONDS"]`` (default 3600 s)."""
    seconds = settings.CONDUCTOR["METRICS_LOOKBACK_SECONDS"]
    return int(float(seconds) * 1000)


def _task_label():
    """``taskType`` label: the name for SIMPLE tasks, the type for system tasks."""
    return Case(When(task_type="SIMPLE", then=F("task_def_name")), default=F("task_type"), output_field=CharField())


def _is_worker():
    return Case(When(task_type="SIMPLE", then=Value(1)), default=Value(0), output_field=IntegerField())


def _bucket_counts(end: str, begin: str, buckets: Iterable[float], condition: Q | None = None) -> dict:
    """Aggregates counting rows with ``end - begin <= bound`` for each bound (ms), plus
    ``_n`` (rows) and ``_sum`` (total ms), all restricted to ``condition``."""
    base = condition if condition is not None else Q()
    out = {"_n": Count("pk", filter=base),
           "_sum": Sum(F(end) - F(begin), filter=base, output_field=IntegerField())}
    for i, bound in enumerate(buckets):
        out[f"_b{i}"] = Count("pk", filter=base & Q(**{f"{end}__lte": F(begin) + int(round(bound * 1000))}))
    return out


class _Histogram:
    """Cumulative bucket counts, count and sum (seconds) of one label set."""

    __slots__ = ("buckets", "counts", "count", "sum")

    def __init__(self, buckets: tuple[float, ...]):
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.count = 0
        self.sum = 0.0

    def add_row(self, row: dict) -> None:
        for i in range(len(self.buckets)):
            self.counts[i] += row[f"_b{i}"] or 0
        self.count += row["_n"] or 0
        self.sum += (row["_sum"] or 0) / 1000.0

    def exposition(self) -> list[tuple[str, float]]:
        pairs = [(floatToGoString(b), float(c)) for b, c in zip(self.buckets, self.counts)]
        pairs.append(("+Inf", float(self.count)))
        return pairs


def operator_gauges(now: int) -> list[Metric]:
    """The cluster's signals: ``sweeper_last_run_age_seconds`` (since the sweeper lease
    was last renewed by its holder's tick; +Inf when no sweeper ever ran),
    ``sweeper_due_lag_seconds`` (how far behind the sweeper is: age of the most overdue
    execution, 0 when none is due) and ``cluster_queue_depth`` (jobs waiting in the
    django-q2 broker; NaN when the broker cannot be read)."""
    from apps.engine.cluster import LEASE_NAME
    from apps.engine.models import SweeperLease

    last = GaugeMetricFamily("sweeper_last_run_age_seconds", "Seconds since the sweeper's last tick")
    expires = SweeperLease.objects.filter(name=LEASE_NAME).values_list("expires_at", flat=True).first()
    last.add_metric([], max(0.0, (now - (expires - settings.CONDUCTOR["SWEEPER_LEASE_MS"])) / 1000) if expires else float("inf"))
    lag = GaugeMetricFamily("sweeper_due_lag_seconds", "Age of the most overdue execution the sweeper has not decided")
    oldest = (WorkflowExecution.objects.filter(status__in=("RUNNING", "PAUSED"), next_decide_at__lte=now)
              .order_by("next_decide_at").values_list("next_decide_at", flat=True).first())
    lag.add_metric([], (now - oldest) / 1000 if oldest is not None else 0.0)
    depth = GaugeMetricFamily("cluster_queue_depth", "Jobs waiting in the django-q2 broker")
    try:
        from django_q.brokers import get_broker

        depth.add_metric([], float(get_broker().queue_size() or 0))
    except Exception:  # noqa: BLE001 - a broker outage must not break the scrape
        depth.add_metric([], float("nan"))
    return [last, lag, depth]


class DatabaseCollector(Collector):
    """The prometheus-client collector described in the module doc. One instance per
    registry; its counters live as long as the instance. ``clock`` returns epoch ms
    (default ``apps.core.clock.now_ms``)."""

    def __init__(self, clock=now_ms):
        self._clock = clock
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget the counted windows and cached owners (the next scrape starts afresh)."""
        self.watermark: int | None = None
        self._counters: dict[str, dict[tuple, float]] = defaultdict(lambda: defaultdict(float))
        self._histograms: dict[str, dict[tuple, _Histogram]] = defaultdict(dict)
        self._owners: tuple[float, dict, dict] | None = None

    # --- owners ---------------------------------------------------------------------------

    def _owner_maps(self) -> tuple[dict[str, str], dict[str, str]]:
        """``({taskDefName: ownerApp}, {workflowName: ownerApp})`` of the registered
        definitions (latest version wins), cached for ``METRICS_OWNER_CACHE_SECONDS``."""
        from apps.metadata.models import TaskDef, WorkflowDef

        cached = self._owners
        if cached is not None and time.monotonic() - cached[0] < settings.CONDUCTOR["METRICS_OWNER_CACHE_SECONDS"]:
            return cached[1], cached[2]
        tasks = {r["name"]: r["owner"] or "unknown"
                 for r in TaskDef.objects.annotate(owner=KT("definition__ownerApp")).values("name", "owner")}
        workflows: dict[str, str] = {}
        for r in WorkflowDef.objects.annotate(owner=KT("definition__ownerApp")).order_by("name", "version") \
                .values("name", "owner"):
            workflows[r["name"]] = r["owner"] or "unknown"
        self._owners = (time.monotonic(), tasks, workflows)
        return tasks, workflows

    # --- gauges -------------------------------------------------------------------------

    def _gauges(self, task_owner: dict[str, str], workflow_owner: dict[str, str]) -> list[Metric]:
        depth = GaugeMetricFamily("task_queue_depth", "Tasks waiting in a queue (SCHEDULED)",
                                  labels=["taskType", "ownerApp"])
        in_progress = GaugeMetricFamily("task_in_progress", "Tasks being executed (IN_PROGRESS)",
                                        labels=["taskType", "ownerApp"])
        running = GaugeMetricFamily("workflow_running", "Workflow executions not ended (RUNNING or PAUSED)",
                                    labels=["workflowName", "ownerApp"])
        counts: dict[tuple[str, str], dict[str, int]] = {}
        for name in task_owner:
            counts[(name, task_owner[name])] = {"SCHEDULED": 0, "IN_PROGRESS": 0}
        rows = (TaskExecution.objects.filter(status__in=("SCHEDULED", "IN_PROGRESS"))
                .annotate(tt=_task_label(), worker=_is_worker())
                .values("tt", "worker", "status").annotate(n=Count("pk")).order_by())
        for r in rows:
            owner = task_owner.get(r["tt"], "unknown") if r["worker"] else "system"
            counts.setdefault((r["tt"], owner), {"SCHEDULED": 0, "IN_PROGRESS": 0})[r["status"]] += r["n"]
        for (tt, owner), by_status in sorted(counts.items()):
            depth.add_metric([tt, owner], by_status["SCHEDULED"])
            in_progress.add_metric([tt, owner], by_status["IN_PROGRESS"])

        wf_counts = dict.fromkeys(workflow_owner, 0)
        for r in (WorkflowExecution.objects.filter(status__in=ACTIVE_WORKFLOW)
                  .values("workflow_name").annotate(n=Count("pk")).order_by()):
            wf_counts[r["workflow_name"]] = r["n"]
        for name, n in sorted(wf_counts.items()):
            running.add_metric([name, workflow_owner.get(name, "unknown")], n)
        return [depth, in_progress, running, *operator_gauges(self._clock())]

    # --- windows of events -----------------------------------------------------------------

    def _hist(self, metric: str, labels: tuple, buckets: tuple[float, ...]) -> _Histogram:
        h = self._histograms[metric].get(labels)
        if h is None:
            h = self._histograms[metric][labels] = _Histogram(buckets)
        return h

    def _count_window(self, lo: int, hi: int, task_owner: dict, workflow_owner: dict) -> None:
        """Add the events with a timestamp in ``(lo, hi]`` (epoch ms)."""
        counters = self._counters
        for r in (WorkflowExecution.objects.filter(create_time__gt=lo, create_time__lte=hi)
                  .values("workflow_name", "workflow_version").annotate(n=Count("pk")).order_by()):
            name = r["workflow_name"]
            counters["workflow_start_success"][(name, str(r["workflow_version"]),
                                                workflow_owner.get(name, "unknown"))] += r["n"]

        completed = Q(status="COMPLETED")
        for r in (WorkflowExecution.objects.filter(end_time__gt=lo, end_time__lte=hi)
                  .values("workflow_name", "status")
                  .annotate(n=Count("pk"), **_bucket_counts("end_time", "create_time", WORKFLOW_BUCKETS, completed))
                  .order_by()):
            name, owner = r["workflow_name"], workflow_owner.get(r["workflow_name"], "unknown")
            if r["status"] in FAILED_WORKFLOW:
                counters["workflow_failure"][(name, r["status"], owner)] += r["n"]
            if r["_n"]:
                self._hist("workflow_execution_seconds", (name, owner), WORKFLOW_BUCKETS).add_row(r)

        started = Q(start_time__gt=0)
        for r in (TaskExecution.objects.filter(end_time__gt=lo, end_time__lte=hi)
                  .annotate(tt=_task_label()).values("tt", "status")
                  .annotate(n=Count("pk"), **_bucket_counts("end_time", "start_time", TASK_BUCKETS, started))
                  .order_by()):
            if r["status"] == "TIMED_OUT":
                counters["task_timeout"][(r["tt"],)] += r["n"]
            if r["_n"]:
                self._hist("task_execution_seconds", (r["tt"], "false", r["status"]), TASK_BUCKETS).add_row(r)
                self._hist("task_completed_seconds", (r["tt"], r["status"]), TASK_BUCKETS).add_row(r)

        for r in (TaskExecution.objects.filter(start_time__gt=lo, start_time__lte=hi, scheduled_time__gt=0)
                  .exclude(queue_name="")
                  .annotate(tt=_task_label()).values("tt")
                  .annotate(**_bucket_counts("start_time", "scheduled_time", TASK_BUCKETS))
                  .order_by()):
            counters["task_poll"][(r["tt"],)] += r["_n"]
            self._hist("task_queue_wait_seconds", (r["tt"],), TASK_BUCKETS).add_row(r)
            self._hist("task_queue_wait_time_seconds", (r["tt"],), TASK_BUCKETS).add_row(r)

    def advance(self, now: int | None = None) -> None:
        """Count the events of the next window (up to ``now - METRICS_SETTLE_MS``); called by
        ``collect``. A first call, or one after a pause longer than the lookback, starts
        ``METRICS_LOOKBACK_SECONDS`` back."""
        now = self._clock() if now is None else now
        hi = now - settings.CONDUCTOR["METRICS_SETTLE_MS"]
        floor = hi - lookback_ms()
        lo = self.watermark if self.watermark is not None and self.watermark >= floor else floor
        if hi <= lo:
            return
        task_owner, workflow_owner = self._owner_maps()
        self._count_window(lo, hi, task_owner, workflow_owner)
        self.watermark = hi

    # --- Collector -------------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            task_owner, workflow_owner = self._owner_maps()
            gauges = self._gauges(task_owner, workflow_owner)
            self.advance()
            families = list(gauges)
            families += self._counter_families()
            families += self._histogram_families()
        yield from families

    def _counter_families(self) -> list[Metric]:
        specs = [
            ("workflow_start_success", "Workflow executions started", ["workflowName", "version", "ownerApp"]),
            ("workflow_failure", "Workflow executions ended FAILED, TIMED_OUT or TERMINATED",
             ["workflowName", "status", "ownerApp"]),
            ("task_timeout", "Task attempts that ended TIMED_OUT", ["taskType"]),
            ("task_poll", "Worker tasks handed out by polls", ["taskType"]),
        ]
        out = []
        for name, doc, labels in specs:
            family = CounterMetricFamily(name, doc, labels=labels)
            for key, value in sorted(self._counters[name].items()):
                family.add_metric(list(key), value)
            out.append(family)
        return out

    def _histogram_families(self) -> list[Metric]:
        specs = [
            ("workflow_execution_seconds", "Duration of completed workflow executions", ["workflowName", "ownerApp"]),
            ("task_execution_seconds", "Duration of task attempts (end - start)", ["taskType", "includeRetries", "status"]),
            ("task_completed_seconds", "Duration of task attempts (end - start)", ["taskType", "status"]),
            ("task_queue_wait_seconds", "Time worker tasks waited in the queue (start - scheduled)", ["taskType"]),
            ("task_queue_wait_time_seconds", "Time worker tasks waited in the queue (start - scheduled)",
             ["taskType"]),
        ]
        out = []
        for name, doc, labels in specs:
            family = HistogramMetricFamily(name, doc, labels=labels)
            for key, h in sorted(self._histograms[name].items()):
                family.add_metric(list(key), h.exposition(), sum_value=h.sum)
            out.append(family)
        return out


registry = CollectorRegistry(auto_describe=False)
collector = DatabaseCollector()
registry.register(collector)


def reset() -> None:
    """Reset the process-wide collector (tests; a fresh process starts reset)."""
    collector.reset()


def exposition(accept: str | None = None) -> tuple[bytes, str]:
    """Render the registry for a scrape: ``(body, content type)``, Prometheus text format
    or OpenMetrics when the ``Accept`` header asks for it."""
    from prometheus_client.exposition import choose_encoder

    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type
