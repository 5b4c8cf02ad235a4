"""How long a definition's runs usually take: the p95 duration per workflow name, from
its recent COMPLETED executions, and the "running longer than usual" condition built on
it (the executions list's ``slow=1`` view).

Each name's sample is its newest ``SAMPLE`` COMPLETED executions, read through the
``wf_search`` index (workflow_name, status, create_time): one bounded query per name
whatever the table's size. Results are kept ``CACHE_SECONDS`` in the process.
"""
from __future__ import annotations

import math
import threading
import time

from django.db.models import Q

from apps.core.clock import now_ms
from apps.engine.models import WorkflowExecution

SAMPLE = 200  # newest COMPLETED runs per name the p95 is taken over
MIN_SAMPLE = 5  # fewer completed runs than this: no p95 (nothing is "longer than usual")
CACHE_SECONDS = 60

_cache: dict[str, tuple[float, int | None]] = {}
_lock = threading.Lock()


def percentile(values: list[int], pct: float) -> int | None:
    """The ``pct`` (0-100) percentile of ``values`` by the nearest-rank method; None when
    empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def p95_ms(name: str) -> int | None:
    """The p95 duration (ms, end - start) of the newest ``SAMPLE`` COMPLETED executions
    of workflow ``name``; None with fewer than ``MIN_SAMPLE`` of them."""
    with _lock:
        hit = _cache.get(name)
        if hit and hit[0] > time.monotonic():
            return hit[1]
    rows = list(WorkflowExecution.objects.filter(workflow_name=name, status="COMPLETED")
                .order_by("-create_time").values_list("create_time", "end_time")[:SAMPLE])
    durations = [end - start for start, end in rows if end and end >= start]
    value = percentile(durations, 95) if len(durations) >= MIN_SAMPLE else None
    with _lock:
        _cache[name] = (time.monotonic() + CACHE_SECONDS, value)
    return value


def forget() -> None:
    """Drop the cached p95 values (tests, and after a bulk import)."""
    with _lock:
        _cache.clear()


def candidate_names(names: list[str] | None = None) -> list[str]:
    """The workflow names the slow view looks at: ``names`` when given, else every
    registered WorkflowDef name (a small table; distinct names of the executions table
    would be a scan at a million rows)."""
    from apps.metadata.models import WorkflowDef

    if names:
        return sorted(set(names))
    return sorted(set(WorkflowDef.objects.values_list("name", flat=True).distinct()))


def slow_q(names: list[str] | None = None, now: int | None = None) -> Q:
    """The condition "RUNNING for longer than its definition's p95": RUNNING and, per name
    with a p95 (``candidate_names``), started before ``now - p95`` (each an index range of
    ``wf_search``). Matches nothing when no name has a p95 (``Q(pk__in=[])``)."""
    now = now if now is not None else now_ms()
    cond = Q()
    for name in candidate_names(names):
        p95 = p95_ms(name)
        if p95 is not None:
            cond |= Q(workflow_name=name, create_time__lt=now - p95)
    if not cond:
        return Q(pk__in=[])
    return Q(status="RUNNING") & cond
