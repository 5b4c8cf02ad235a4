"""Reads behind the operator pages: execution search (filtering, sorting and paging in
the database), the task queues overview and definition lists. No writes."""
from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from django.db.models import Count, Min, Q, TextField
from django.db.models.functions import Cast

from apps.core.clock import now_ms
from apps.engine.models import PollData, TaskExecution, WorkflowExecution, WorkflowStatus
from apps.metadata.models import WorkflowDef

STATUSES = [s.value for s in WorkflowStatus]

# What differs between otherwise identical failures: UUIDs (task and workflow ids), long
# hex strings and numbers of four digits or more (times, sizes, ports). The same pattern
# is a regular expression for Python (SQLite's REGEXP) and PostgreSQL.
ID_PATTERN = (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
              r"|[0-9a-fA-F]{16,}|[0-9]{4,}")
ID_RE = re.compile(ID_PATTERN)
MASK = "…"
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def mask_ids(text: str | None) -> str:
    """A reason with ids and numbers replaced by ``…``, so failures that differ only by
    them read (and group) the same."""
    return ID_RE.sub(MASK, text or "")


def cluster_regex(masked: str) -> str:
    """The regular expression matching every reason whose ``mask_ids`` is ``masked``."""
    return "^" + f"({ID_PATTERN})".join(re.escape(part) for part in masked.split(MASK)) + "$"


def name_tasks(reason: str | None, refs: dict[str, str]) -> tuple[str | None, dict | None]:
    """(``reason`` with each task id of ``refs`` (task id -> taskReferenceName) replaced
    by its reference, the first such task as ``{"ref", "taskId"}`` or None)."""
    if not reason:
        return reason, None
    first = None

    def name(match: re.Match) -> str:
        nonlocal first
        ref = refs.get(match.group(0))
        if ref is None:
            return match.group(0)
        if first is None:
            first = {"ref": ref, "taskId": match.group(0)}
        return ref
    return UUID_RE.sub(name, reason), first


def task_refs_in(reason: str | None) -> dict[str, str]:
    """task id -> taskReferenceName of the tasks whose ids appear in ``reason`` (one query)."""
    ids = UUID_RE.findall(reason or "")
    if not ids:
        return {}
    return dict(TaskExecution.objects.filter(task_id__in=ids).values_list("task_id", "reference_task_name"))
PAGE_SIZES = (10, 25, 50, 100, 200, 500)
SORTS = {
    "start": "create_time", "end": "end_time", "update": "update_time", "name": "workflow_name",
    "version": "workflow_version", "status": "status", "id": "workflow_id",
}
DEFAULT_SORT = "-start"
SINCE = ("1h", "24h", "today")  # the relative start windows of ``?since=``


def since_ms(since: str, now: int | None = None) -> int:
    """The epoch ms a relative window starts at: ``1h`` and ``24h`` before ``now``,
    ``today`` at 00:00 UTC of ``now``'s day. KeyError for another value."""
    now = now if now is not None else now_ms()
    if since == "today":
        return now - now % 86_400_000
    return now - {"1h": 3_600_000, "24h": 86_400_000}[since]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def parse_local_datetime(text: str | None) -> int | None:
    """``YYYY-MM-DDTHH:MM[:SS[.fff]]`` (an HTML datetime-local value, read as UTC) -> epoch ms."""
    if not text:
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"):
        try:
            dt = datetime.strptime(text.strip(), fmt).replace(tzinfo=timezone.utc)
            return (dt - EPOCH) // timedelta(milliseconds=1)  # exact: no float rounding of the ms
        except ValueError:
            continue
    return None


@dataclass
class SearchQuery:
    """Execution search parameters, as read from (and written back to) the URL."""

    names: list[str] = field(default_factory=list)
    version: int | None = None
    statuses: list[str] = field(default_factory=list)
    start_from: str = ""
    start_to: str = ""
    end_from: str = ""  # endTime window (UTC datetime-local, milliseconds allowed), both ends included
    end_to: str = ""
    correlation_id: str = ""
    workflow_id: str = ""
    text: str = ""
    cluster: str = ""
    since: str = ""  # a relative start window: one of SINCE ("1h", "24h", "today")
    slow: bool = False  # RUNNING for longer than its definition's p95 (apps.problems.durations)
    stuck: bool = False  # a task waits in a queue no worker polled lately (apps.problems.queues)
    sort: str = DEFAULT_SORT
    page: int = 1
    size: int = 25
    after: tuple | None = None
    before: tuple | None = None
    errors: list[str] = field(default_factory=list)
    # the slow and stuck views' conditions (several queries each), worked out once per
    # search and shared with its ``dataclasses.replace`` copies (the status counts)
    derived: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_querydict(cls, q) -> "SearchQuery":
        """Parse ``request.GET``; invalid values are dropped and listed in ``errors``."""
        out = cls()
        out.names = [n.strip() for n in q.getlist("name") if n.strip()]
        version = (q.get("version") or "").strip()
        if version:
            try:
                out.version = int(version)
            except ValueError:
                out.errors.append(f"version must be a number, not {version!r}")
        out.statuses = [s for s in q.getlist("status") if s in STATUSES]
        out.start_from = (q.get("start_from") or "").strip()
        out.start_to = (q.get("start_to") or "").strip()
        out.end_from = (q.get("end_from") or "").strip()
        out.end_to = (q.get("end_to") or "").strip()
        for label, value in (("start from", out.start_from), ("start to", out.start_to),
                             ("end from", out.end_from), ("end to", out.end_to)):
            if value and parse_local_datetime(value) is None:
                out.errors.append(f"{label} is not a date and time: {value!r}")
        out.correlation_id = (q.get("correlation_id") or "").strip()
        out.workflow_id = (q.get("workflow_id") or "").strip()
        out.text = (q.get("q") or "").strip()
        out.cluster = q.get("cluster") or ""
        since = (q.get("since") or "").strip()
        if since and since not in SINCE:
            out.errors.append(f"since must be one of {', '.join(SINCE)}, not {since!r}")
        out.since = since if since in SINCE else ""
        out.slow = (q.get("slow") or "") in ("1", "true", "on")
        out.stuck = (q.get("stuck") or "") in ("1", "true", "on")
        sort = (q.get("sort") or DEFAULT_SORT).strip()
        out.sort = sort if sort.lstrip("-") in SORTS else DEFAULT_SORT
        try:
            out.page = max(1, int(q.get("page") or 1))
        except ValueError:
            out.page = 1
        raw_size = (q.get("size") or "").strip()
        try:
            size = int(raw_size or 25)
        except ValueError:
            size = 0
        out.size = size if size in PAGE_SIZES else 25
        if raw_size and size not in PAGE_SIZES:
            out.errors.append(f"page size must be one of {', '.join(map(str, PAGE_SIZES))}, not {raw_size!r}: "
                              f"showing {out.size}")
        for key in ("after", "before"):
            if q.get(key):
                cursor = decode_cursor(q.get(key))
                if cursor is None:
                    out.errors.append(f"the {key} page marker is not valid: showing page {out.page}")
                setattr(out, key, cursor)
        return out

    def filters(self) -> Q:
        """The WHERE clause of this search."""
        cond = Q()
        if self.names:
            cond &= Q(workflow_name__in=self.names)
        if self.version is not None:
            cond &= Q(workflow_version=self.version)
        if self.statuses:
            cond &= Q(status__in=self.statuses)
        start_from = parse_local_datetime(self.start_from)
        if start_from is not None:
            cond &= Q(create_time__gte=start_from)
        start_to = parse_local_datetime(self.start_to)
        if start_to is not None:
            cond &= Q(create_time__lte=start_to)
        end_from, end_to = parse_local_datetime(self.end_from), parse_local_datetime(self.end_to)
        if end_from is not None:
            cond &= Q(end_time__gte=end_from)
        if end_to is not None:
            cond &= Q(end_time__lte=end_to, end_time__gt=0)
        if self.correlation_id:
            cond &= Q(correlation_id=self.correlation_id)
        if self.workflow_id:
            cond &= Q(workflow_id=self.workflow_id)
        if self.text:
            cond &= (Q(input_text__icontains=self.text) | Q(output_text__icontains=self.text)
                     | Q(reason_for_incompletion__icontains=self.text))
        if self.cluster:
            cond &= Q(reason_for_incompletion__regex=cluster_regex(self.cluster))
        if self.since:
            cond &= Q(create_time__gte=since_ms(self.since))
        if self.slow:
            key = ("slow", tuple(self.names))
            if key not in self.derived:
                from apps.problems.durations import slow_q

                self.derived[key] = slow_q(self.names or None)
            cond &= self.derived[key]
        if self.stuck:
            if "stuck" not in self.derived:
                from apps.problems import queues

                self.derived["stuck"] = Q(status="RUNNING", workflow_id__in=queues.stuck_workflow_ids(
                    queues.stale_seconds_setting()))
            cond &= self.derived["stuck"]
        return cond

    @property
    def column(self) -> str:
        """The sorted model column."""
        return SORTS[self.sort.lstrip("-")]

    @property
    def descending(self) -> bool:
        """Whether the sort is newest/largest first."""
        return self.sort.startswith("-")

    def order_by(self, reverse: bool = False) -> list[str]:
        """ORDER BY columns: the chosen one, then the id in the same direction, so the order
        is total (rows that tie keep one order, on both databases); ``reverse`` flips both."""
        desc = self.descending != reverse
        columns = [self.column] if self.column == "workflow_id" else [self.column, "workflow_id"]
        return [("-" if desc else "") + c for c in columns]

    def beyond(self, cursor: tuple, *, forward: bool) -> Q:
        """Rows strictly after (``forward``) or before ``cursor`` = (sort value, workflow id)
        in this search's order: the keyset condition of deep pages."""
        value, workflow_id = cursor
        op = "lt" if self.descending == forward else "gt"
        if self.column == "workflow_id":
            return Q(**{f"workflow_id__{op}": workflow_id})
        return Q(**{f"{self.column}__{op}": value}) | Q(**{self.column: value, f"workflow_id__{op}": workflow_id})


def encode_marker(values: list) -> str:
    """A keyset page marker for the URL: JSON ``values`` as URL-safe base64 text."""
    raw = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_marker(text: str, size: int) -> list | None:
    """``encode_marker``'s text -> its ``size`` values (strings or integers), or None when
    malformed: not JSON, not a list of ``size`` strings/integers, an integer outside 64
    bits, or a string the API's JSON rule refuses (a NUL or lone surrogate, which
    PostgreSQL cannot compare: a 500 there for a hand-made marker)."""
    from apps.api.parsers import check_json
    from apps.core.errors import InvalidInput

    text = (text or "").strip()
    try:
        values = check_json(json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))), "marker")
    except (ValueError, TypeError, InvalidInput):
        return None
    if not isinstance(values, list) or len(values) != size or any(
            isinstance(v, bool) or not isinstance(v, (str, int)) or (isinstance(v, int) and not -2**63 <= v < 2**63)
            for v in values):
        return None
    return values


def encode_cursor(row: dict, column: str) -> str:
    """An execution page marker: the row's sort value and workflow id."""
    return encode_marker([row[column], row["workflow_id"]])


def decode_cursor(text: str) -> tuple | None:
    """``encode_cursor``'s text -> (sort value, workflow id), or None when malformed."""
    values = decode_marker(text, 2)
    if values is None or not isinstance(values[1], str):
        return None
    return values[0], values[1]


AUDIT_PAGE_SIZE = 100


def audit_page(*, target: str = "", group: str = "", before: str | None = None, size: int = AUDIT_PAGE_SIZE) -> dict:
    """Audit entries newest first in a total order (time, then id, both descending), one
    keyset page (``group``: only the rows of one bulk job): ``before`` is the ``older``
    marker of the previous page (None: the
    newest). Returns ``{"entries": [AuditLog], "older": marker or None}`` (None on the
    last page)."""
    from apps.ui.models import AuditLog

    qs = AuditLog.objects.order_by("-created_at", "-id")
    if target:
        qs = qs.filter(target=target)
    if group:
        qs = qs.filter(group=group)
    values = decode_marker(before, 2) if before else None
    if values is not None and isinstance(values[1], int) and isinstance(values[0], str):
        try:
            when = datetime.fromisoformat(values[0])
        except ValueError:
            when = None
        if when is not None:
            qs = qs.filter(Q(created_at__lt=when) | Q(created_at=when, id__lt=values[1]))
    entries = list(qs[:size + 1])
    more = len(entries) > size
    entries = entries[:size]
    older = encode_marker([entries[-1].created_at.isoformat(), entries[-1].id]) if more else None
    return {"entries": entries, "older": older}


@dataclass
class SearchResult:
    """One page of executions plus paging facts."""

    rows: list[dict]
    total: int
    page: int
    size: int
    first_cursor: str | None = None
    last_cursor: str | None = None

    @property
    def pages(self) -> int:
        """Number of pages (at least 1)."""
        return max(1, -(-self.total // self.size))

    @property
    def first_index(self) -> int:
        """1-based position of the first row of this page (0 when nothing matched)."""
        return (self.page - 1) * self.size + 1 if self.total else 0

    @property
    def last_index(self) -> int:
        """1-based position of the last row of this page."""
        return min(self.page * self.size, self.total)


ROW_FIELDS = ("workflow_id", "workflow_name", "workflow_version", "status", "create_time", "update_time", "end_time",
              "correlation_id", "reason_for_incompletion", "parent_workflow_id")


def matching(query: SearchQuery):
    """The executions ``query`` matches, unsorted (its free text casts the JSON columns to
    text). The list, its failure groups, status counts, exports and bulk jobs read it."""
    qs = WorkflowExecution.objects.all()
    if query.text:
        qs = qs.annotate(input_text=Cast("input", TextField()), output_text=Cast("output", TextField()))
    return qs.filter(query.filters())


def search_executions(query: SearchQuery) -> SearchResult:
    """Executions matching ``query``: filtered, counted, sorted (total order: the sort
    column, then the workflow id) and sliced by the database. A page reached by ``after``
    or ``before`` (a neighbour page's marker) is read by keyset, so deep pages cost as
    little as the first and rows started meanwhile neither repeat nor vanish; ``page``
    alone reads by offset. Each row has the workflow columns plus ``active``: its
    SCHEDULED/IN_PROGRESS tasks."""
    qs = matching(query)
    total = qs.count()
    pages = max(1, -(-total // query.size))
    if query.after or query.before:
        forward = query.after is not None
        cursor = query.after if forward else query.before
        rows = list(qs.filter(query.beyond(cursor, forward=forward)).order_by(*query.order_by(reverse=not forward))
                    .values(*ROW_FIELDS)[:query.size])
        if not forward:
            rows.reverse()
        preceding = qs.filter(query.beyond((rows[0][query.column], rows[0]["workflow_id"]), forward=False)).count() \
            if rows else (total if forward else 0)
        page = min(pages, preceding // query.size + 1)
    else:
        page = min(query.page, pages)
        offset = (page - 1) * query.size
        rows = list(qs.order_by(*query.order_by()).values(*ROW_FIELDS)[offset:offset + query.size])
    active: dict[str, list[dict]] = {}
    if rows:
        for t in (TaskExecution.objects.filter(workflow_id__in=[r["workflow_id"] for r in rows],
                                               status__in=["SCHEDULED", "IN_PROGRESS"])
                  .order_by("seq").values("workflow_id", "reference_task_name", "status", "task_type")):
            active.setdefault(t["workflow_id"], []).append(t)
    for r in rows:
        r["active"] = active.get(r["workflow_id"], [])
        reason = r["reason_for_incompletion"] or ""
        r["reason_short"] = reason if len(reason) <= 160 else reason[:160] + "…"
        r["cluster"] = mask_ids(reason)
        r["duration_ms"] = (r["end_time"] or now_ms()) - r["create_time"]
    return SearchResult(rows=rows, total=total, page=page, size=query.size,
                        first_cursor=encode_cursor(rows[0], query.column) if rows else None,
                        last_cursor=encode_cursor(rows[-1], query.column) if rows else None)


CLUSTER_SCAN = 5000  # distinct reasons read to build the clusters


def failure_clusters(query: SearchQuery, limit: int = 8) -> list[dict]:
    """The matches of ``query`` grouped by reason with ids masked (``mask_ids``), most
    frequent first: ``[{"key": masked reason, "count": executions, "example": reason}]``,
    at most ``limit`` groups, from the ``CLUSTER_SCAN`` most frequent distinct reasons."""
    qs = matching(query).exclude(reason_for_incompletion__isnull=True).exclude(reason_for_incompletion="")
    groups: dict[str, dict] = {}
    for reason, n in (qs.values_list("reason_for_incompletion").annotate(n=Count("workflow_id"))
                      .order_by("-n", "reason_for_incompletion")[:CLUSTER_SCAN]):
        key = mask_ids(reason)
        g = groups.setdefault(key, {"key": key, "count": 0, "example": reason})
        g["count"] += n
    return sorted(groups.values(), key=lambda g: (-g["count"], g["key"]))[:limit]


NESTED_KEYS = ("decisionCases", "defaultCase", "forkTasks", "loopOver")


def _own_fields(task: dict) -> dict:
    """A WorkflowTask without its nested tasks (those are compared on their own)."""
    return {k: v for k, v in task.items() if k not in NESTED_KEYS}


def definition_diff(old: dict, new: dict, context: int = 3) -> dict:
    """The difference between two WorkflowDef versions: ``{"added", "removed",
    "changed"}`` (task references: in ``new`` only, in ``old`` only, in both with their
    own fields changed, nested tasks aside) and ``lines``: a unified diff of the two
    JSON texts (keys sorted, indented) as ``[{"kind": "add"|"del"|"ctx"|"hunk", "text"}]``
    with ``context`` unchanged lines around each change; empty when they are equal."""
    from apps.engine.blueprint import Blueprint

    a, b = Blueprint(old).by_ref, Blueprint(new).by_ref
    changed = sorted(r for r in a.keys() & b.keys() if _own_fields(a[r]) != _own_fields(b[r]))
    lines = json_diff(old, new, context=context, limit=None)
    return {"added": [r for r in b if r not in a], "removed": [r for r in a if r not in b], "changed": changed,
            "lines": lines}


COMPARE_TEXT_CHARS = 20_000  # payload text compared per side; longer payloads are cut


def json_diff(old, new, context: int = 2, limit: int | None = COMPARE_TEXT_CHARS) -> list[dict]:
    """A unified diff of two JSON values (indented, keys sorted, each cut at ``limit``
    characters unless None) as ``[{"kind": "add"|"del"|"ctx"|"hunk", "text"}]``; empty
    when equal."""
    import difflib

    def text(v) -> list[str]:
        return json.dumps(v, indent=2, sort_keys=True, default=str)[:limit].splitlines()
    out = []
    for line in difflib.unified_diff(text(old), text(new), lineterm="", n=context):
        if not line.startswith(("---", "+++")):
            out.append({"kind": {"@": "hunk", "+": "add", "-": "del"}.get(line[:1], "ctx"), "text": line})
    return out


def compare_executions(a, b) -> dict:
    """Two executions (WorkflowStates with tasks) side by side, aligned by task reference
    and loop iteration (the latest attempt of each): ``{"rows": [{"ref", "iteration",
    "a", "b" (task facts or None: status, attempts, duration_ms, task_id), "same_status",
    "input_diff", "output_diff"}], "input_diff", "output_diff", "first_difference"}``.
    Rows keep the order tasks were first scheduled in ``a``, then those only in ``b``;
    ``first_difference`` is the reference of the first row whose status or payloads
    differ (None when they ran alike)."""
    def index(wf) -> dict:
        out: dict[tuple, dict] = {}
        for t in wf.tasks:
            key = (t.reference_task_name, t.iteration or 0)
            entry = out.setdefault(key, {"attempts": 0})
            entry.update({"status": t.status, "task_id": t.task_id, "task": t,
                          "duration_ms": (t.end_time - t.start_time) if t.end_time and t.start_time else None})
            entry["attempts"] += 1
        return out

    ia, ib = index(a), index(b)
    keys = list(ia) + [k for k in ib if k not in ia]
    rows, first = [], None
    for key in keys:
        ta, tb = ia.get(key), ib.get(key)
        input_diff = json_diff(ta["task"].input_data, tb["task"].input_data) if ta and tb else []
        output_diff = json_diff(ta["task"].output_data, tb["task"].output_data) if ta and tb else []
        same = bool(ta and tb and ta["status"] == tb["status"])
        row = {"ref": key[0], "iteration": key[1], "same_status": same, "input_diff": input_diff,
               "output_diff": output_diff,
               "a": {k: v for k, v in ta.items() if k != "task"} if ta else None,
               "b": {k: v for k, v in tb.items() if k != "task"} if tb else None}
        row["differs"] = not same or bool(input_diff) or bool(output_diff)
        if row["differs"] and first is None:
            first = key[0]
        rows.append(row)
    return {"rows": rows, "input_diff": json_diff(a.input, b.input), "output_diff": json_diff(a.output, b.output),
            "first_difference": first}


def last_good_run(wf) -> str | None:
    """The newest COMPLETED execution of the same workflow name (other than ``wf``), the
    natural one to compare a failed run with; None when there is none."""
    return (WorkflowExecution.objects.filter(workflow_name=wf.workflow_name, status="COMPLETED")
            .exclude(workflow_id=wf.workflow_id).order_by("-create_time", "-workflow_id")
            .values_list("workflow_id", flat=True).first())


# ``${workflow.input.NAME...}``: NAME is the input key a task reads
_WORKFLOW_INPUT_REF = re.compile(r"\$\{\s*workflow\.input\.([A-Za-z_][A-Za-z0-9_-]*)")


def workflow_input_references(definition: dict) -> list[str]:
    """The workflow input keys a WorkflowDef's expressions read (``${workflow.input.x}``,
    ``${workflow.input.x.y}`` gives ``x``), in the order they first appear, from every
    string in the definition (tasks' inputParameters at any depth, outputParameters,
    loop conditions, expressions). The start form offers these as fields when the
    definition declares no ``inputParameters`` (Conductor's ``inputParameters`` is only a
    list of names for documentation; nothing forces a definition to fill it in)."""
    found: dict[str, None] = {}

    def walk(value) -> None:
        if isinstance(value, str):
            for name in _WORKFLOW_INPUT_REF.findall(value):
                found.setdefault(name, None)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk({k: v for k, v in definition.items() if k != "inputParameters"})
    return list(found)


def workflow_names() -> list[str]:
    """Names of registered workflow definitions and of executed workflows, sorted."""
    names = set(WorkflowDef.objects.values_list("name", flat=True).distinct())
    names |= set(WorkflowExecution.objects.values_list("workflow_name", flat=True).distinct())
    return sorted(names)


def definitions_overview() -> list[dict]:
    """Registered workflow definitions grouped by name: versions, latest description and
    the number of executions per name."""
    counts = dict(WorkflowExecution.objects.values_list("workflow_name").annotate(n=Count("workflow_id")))
    out: dict[str, dict] = {}
    for row in WorkflowDef.objects.order_by("name", "version"):
        entry = out.setdefault(row.name, {"name": row.name, "versions": [], "executions": counts.get(row.name, 0)})
        entry["versions"].append(row.version)
        entry["latest"] = row.version
        entry["description"] = row.definition.get("description") or ""
    return list(out.values())


# --- task queues --------------------------------------------------------------------------

def split_queue_name(queue_name: str) -> tuple[str, str]:
    """``domain:taskType`` -> (taskType, domain); ``taskType`` -> (taskType, "")."""
    if ":" in queue_name:
        domain, task_type = queue_name.split(":", 1)
        return task_type, domain
    return queue_name, ""


def queues_overview(now: int | None = None, *, stale_seconds: int = 60, recent_seconds: int = 3600) -> list[dict]:
    """One row per (task type, domain) that has queued or running tasks or poll data:
    ``depth`` (SCHEDULED), ``in_progress``, ``oldest_ms`` (age of the oldest queued task),
    ``workers`` (every worker that polled within ``recent_seconds``, newest first, with
    ``age_s``), ``hidden_workers`` (older pollers), ``last_poll`` (ms) and ``warning``
    (tasks wait but no worker polled within ``stale_seconds``)."""
    now = now if now is not None else now_ms()
    rows: dict[tuple[str, str], dict] = {}

    def row(task_type: str, domain: str) -> dict:
        """The row of (task type, domain), created empty on first use."""
        return rows.setdefault((task_type, domain), {
            "task_type": task_type, "domain": domain, "depth": 0, "in_progress": 0, "oldest_ms": None,
            "workers": [], "hidden_workers": 0, "last_poll": None, "warning": None})

    for r in (TaskExecution.objects.exclude(queue_name="").filter(status__in=["SCHEDULED", "IN_PROGRESS"])
              .values("queue_name", "status").order_by().annotate(n=Count("task_id"), first=Min("scheduled_time"))):
        r_ = row(*split_queue_name(r["queue_name"]))
        if r["status"] == "SCHEDULED":
            r_["depth"] += r["n"]
            if r["first"]:
                age = max(0, now - r["first"])
                r_["oldest_ms"] = age if r_["oldest_ms"] is None else max(r_["oldest_ms"], age)
        else:
            r_["in_progress"] += r["n"]
    for p in PollData.objects.order_by("queue_name", "domain", "-last_poll_time", "worker_id"):
        r = row(p.queue_name, p.domain or "")
        age_s = max(0, (now - p.last_poll_time) // 1000)
        if r["last_poll"] is None or p.last_poll_time > r["last_poll"]:
            r["last_poll"] = p.last_poll_time
        if age_s <= recent_seconds:
            r["workers"].append({"worker_id": p.worker_id or "(no id)", "last_poll": p.last_poll_time,
                                 "age_s": age_s, "stale": age_s > stale_seconds})
        else:
            r["hidden_workers"] += 1
    for r in rows.values():
        if r["depth"] > 0:
            if r["last_poll"] is None:
                r["warning"] = "Tasks are waiting and no worker has ever polled this queue."
            elif now - r["last_poll"] > stale_seconds * 1000:
                r["warning"] = (f"Tasks are waiting and no worker has polled for "
                                f"{(now - r['last_poll']) // 1000} s.")
    return sorted(rows.values(), key=lambda r: (r["warning"] is None, r["task_type"], r["domain"]))
