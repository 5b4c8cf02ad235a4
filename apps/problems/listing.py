"""The executions list's problem tools: counts per status of the current search, the
one-click views, export of a search's result and the search as code.

A search is ``apps.ui.selectors.SearchQuery`` (what the URL says). Counts group the
search without its status filter by status (an index range of ``wf_search`` or
``wf_status_create``); exports read the result in keyset batches of ``EXPORT_BATCH``
rows in the search's order, up to ``EXPORT_MAX``, streamed as they are read.
"""
from __future__ import annotations

import csv
import io
import json
import shlex
from dataclasses import replace
from datetime import datetime, timezone
from typing import Iterator

from apps.ui.selectors import STATUSES, SearchQuery, matching, parse_local_datetime, since_ms

COUNT_CAP = 10_000  # status counts stop here ("10000+")
EXPORT_BATCH = 1000
EXPORT_MAX = 100_000
EXPORT_FIELDS = ("workflow_id", "workflow_name", "workflow_version", "status", "create_time", "update_time",
                 "end_time", "correlation_id", "parent_workflow_id", "reason_for_incompletion")
# the export's camelCase names, as Conductor's WorkflowSummary spells them
EXPORT_NAMES = {"workflow_id": "workflowId", "workflow_name": "workflowType", "workflow_version": "version",
                "status": "status", "create_time": "startTime", "update_time": "updateTime", "end_time": "endTime",
                "correlation_id": "correlationId", "parent_workflow_id": "parentWorkflowId",
                "reason_for_incompletion": "reasonForIncompletion"}

# one-click views: (key, label, the query parameters it sets; every other filter is dropped)
QUICK_VIEWS = [
    ("failed", "Failed", {"status": ["FAILED"]}),
    ("timed_out", "Timed out", {"status": ["TIMED_OUT"]}),
    ("slow", "Running longer than usual (p95)", {"slow": ["1"]}),
    ("stuck", "Waiting on an unpolled queue", {"stuck": ["1"]}),
    ("today", "Started today (UTC)", {"since": ["today"]}),
    ("hour", "Last hour", {"since": ["1h"]}),
]


def status_counts(query: SearchQuery, cap: int = COUNT_CAP) -> dict[str, int]:
    """``{status: count}`` for every workflow status, of ``query`` with its status filter
    left out (so each count says what choosing that status would show). Each count is one
    index range (status first, or name then status) and stops at ``cap`` + 1: a count
    above ``cap`` means "more than ``cap``" (counting a million rows takes seconds)."""
    return {status: matching(replace(query, statuses=[status])).order_by()[:cap + 1].count()
            for status in STATUSES}


def rows(query: SearchQuery, limit: int = EXPORT_MAX) -> Iterator[dict]:
    """The rows ``query`` matches in its order, at most ``limit``, read ``EXPORT_BATCH`` at
    a time by keyset (each batch one indexed range, never an OFFSET)."""
    qs = matching(query).order_by(*query.order_by())
    cursor = None
    sent = 0
    while sent < limit:
        page = qs.filter(query.beyond(cursor, forward=True)) if cursor else qs
        batch = list(page.values(*EXPORT_FIELDS)[:min(EXPORT_BATCH, limit - sent)])
        if not batch:
            return
        for row in batch:
            yield row
        sent += len(batch)
        last = batch[-1]
        cursor = (last[query.column], last["workflow_id"])


def export_lines(query: SearchQuery, fmt: str, limit: int = EXPORT_MAX) -> Iterator[str]:
    """The export of ``query`` as text chunks: ``ids`` (one workflow id a line), ``csv``
    (a header of Conductor's camelCase names, then a row each; times epoch ms) or ``json``
    (one array of WorkflowSummary-like objects). ValueError for another format."""
    if fmt == "ids":
        return (row["workflow_id"] + "\n" for row in rows(query, limit))
    if fmt == "csv":
        return _csv(query, limit)
    if fmt == "json":
        return _json(query, limit)
    raise ValueError(f"unknown export format {fmt!r}: ids, csv or json")


def _csv(query: SearchQuery, limit: int) -> Iterator[str]:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([EXPORT_NAMES[f] for f in EXPORT_FIELDS])
    for row in rows(query, limit):
        writer.writerow(["" if row[f] is None else row[f] for f in EXPORT_FIELDS])
        if buf.tell() > 64_000:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


def _json(query: SearchQuery, limit: int) -> Iterator[str]:
    yield "["
    first = True
    for row in rows(query, limit):
        yield ("" if first else ",") + "\n" + json.dumps({EXPORT_NAMES[f]: row[f] for f in EXPORT_FIELDS})
        first = False
    yield "\n]\n"


# --- the search as code ---------------------------------------------------------------------

def conductor_query(query: SearchQuery) -> tuple[str, str, list[str]]:
    """(``query``, ``freeText``, what the API cannot say): the search in Conductor's query
    language for ``GET /api/workflow/search``. Relative windows (``since``) become the
    absolute start time of now; the failure cluster, the slow view and the stuck view have
    no equivalent and are listed in the third item."""
    parts = []
    if query.names:
        parts.append(f"workflowType IN ({','.join(query.names)})")
    if query.version is not None:
        parts.append(f"version={query.version}")
    if query.statuses:
        parts.append(f"status IN ({','.join(query.statuses)})")
    start_from = parse_local_datetime(query.start_from)
    if query.since:
        since = since_ms(query.since)
        start_from = max(start_from or 0, since)
    if start_from is not None:
        parts.append(f"startTime>={start_from}")
    start_to = parse_local_datetime(query.start_to)
    if start_to is not None:
        parts.append(f"startTime<={start_to}")
    if query.correlation_id:
        parts.append(f"correlationId={query.correlation_id}")
    if query.workflow_id:
        parts.append(f"workflowId={query.workflow_id}")
    missing = [label for on, label in ((query.cluster, "the failure-reason cluster"),
                                       (query.slow, "running longer than the p95"),
                                       (query.stuck, "waiting on an unpolled queue")) if on]
    return " AND ".join(parts), query.text or "*", missing


def sort_param(query: SearchQuery) -> str:
    """The search's sort as the API's ``field:ASC|DESC``."""
    field = {"start": "startTime", "end": "endTime", "update": "updateTime", "name": "workflowType",
             "version": "version", "status": "status", "id": "workflowId"}[query.sort.lstrip("-")]
    return f"{field}:{'DESC' if query.descending else 'ASC'}"


def as_code(query: SearchQuery, api_url: str) -> dict:
    """``{"curl", "python", "cli", "missing"}``: the same search (first page of
    ``query.size``) against ``api_url`` (the server's ``.../api``) with curl, the Python
    SDK (conductor-python's ``OrkesClients``) and our CLI (``conductor workflow search``).
    Times in the query are epoch ms."""
    text, free, missing = conductor_query(query)
    sort = sort_param(query)
    curl = " \\\n  ".join([f"curl -G {shlex.quote(api_url + '/workflow/search')}",
                          f"--data-urlencode {shlex.quote('query=' + text)}" if text else "",
                          f"--data-urlencode {shlex.quote('freeText=' + free)}",
                          f"-d size={query.size} -d start=0 -d sort={sort}"])
    curl = "\n".join(line for line in curl.splitlines() if line.strip() not in ("", "\\"))
    curl = "# with API keys on, add: -H \"X-Authorization: <token from POST /api/token>\"\n" + curl
    python = "\n".join([
        "from conductor.client.configuration.configuration import Configuration",
        "from conductor.client.orkes_clients import OrkesClients",
        "",
        f"clients = OrkesClients(Configuration(server_api_url={api_url!r}))",
        "result = clients.get_workflow_client().search(",
        f"    start=0, size={query.size}, free_text={free!r}, query={text or None!r})",
        "for w in result.results:",
        "    print(w.workflow_id, w.status, w.start_time)",
    ])
    cli = ["conductor", "workflow", "search"] + ([free] if free != "*" else []) + ["-c", str(query.size)]
    if text:
        cli += ["-q", text]
    if sort != "startTime:DESC":
        cli += ["--sort", sort]
    return {"curl": curl, "python": python,
            "cli": f"CONDUCTOR_SERVER_URL={shlex.quote(api_url)} " + " ".join(shlex.quote(c) for c in cli),
            "missing": missing}


def export_filename(fmt: str) -> str:
    """``executions-<UTC time>.<txt|csv|json>``."""
    stamp = datetime.now(tz=timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"executions-{stamp}.{ {'ids': 'txt'}.get(fmt, fmt)}"
