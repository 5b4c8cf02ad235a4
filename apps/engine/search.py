"""Search over workflow and task executions, done by the database.

Three layers, each usable alone:

* ``parse_query(text)`` (pure): Conductor's query mini-language, as its SQLite/PostgreSQL
  index DAOs read it (``SqliteIndexQueryBuilder``/``PostgresIndexQueryBuilder``):
  conditions joined by ``AND``, each ``field OP value`` with OP one of ``=``, ``>``,
  ``<``, ``IN`` (``>=`` and ``<=`` are accepted too); quotes and parentheses are
  stripped from the value, which is split on commas (``status IN (RUNNING,PAUSED)``);
  ``IN`` with one value is ``=``; a ``*`` in an ``=`` value is a wildcard (matched case
  insensitively, as the SQLite DAO's ``lower(x) LIKE lower(?)``); ``*Time`` fields take
  epoch ms (ISO-8601 text is accepted too). Field names are camelCase (snake_case is
  accepted); names this module does not know are dropped silently, as Conductor does.
  A condition that is not ``field OP value`` is a 400
  ``Incorrectly formatted query string: <condition>``.
* ``workflow_q``/``task_q``/``free_text_q`` turn those conditions and ``freeText`` into
  ``Q`` objects; ``WorkflowExecutionFilter``/``TaskExecutionFilter`` (django-filter) take
  explicit parameters (lists of types and statuses, time ranges) for callers such as the
  UI.
* ``workflow_search``/``task_search``/``workflow_search_by_tasks`` (selectors): filter,
  count, sort (``field:ASC|DESC`` joined by ``|``) and page (``start``/``size``) in SQL
  and return ``(totalHits, rows)``.

``freeText``: ``*`` (or empty) matches everything; any other text is a case-insensitive
substring match over the JSON text of input/output and the id, name and reason columns
(Conductor's SQLite index: ``lower(json_data) LIKE %text%``). JSON columns are cast to
text in SQL, so it works on SQLite and PostgreSQL alike; the escaped JSON spellings of
the text are tried as well (``\\"`` quotes, ``\\u00e9`` on SQLite), since that is how the
columns store it. Case folding is ASCII-only on SQLite.

Shapes: results are ``WorkflowState``/``TaskState`` (snake_case); the camelCase JSON is
``apps.engine.representation`` (``workflow_summary_json``, ``workflow_json``, ``task_json``,
``task_summary_json``). Times are epoch ms. Errors: ``InvalidInput`` (400).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

import django_filters
from django import forms
from django.db.models import F, Q, QuerySet, TextField
from django.db.models.functions import Cast

from apps.core.errors import InvalidInput, validation_failed
from apps.engine import store
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.engine.selectors import whole_loop
from apps.engine.state import TASK_FIELDS, WORKFLOW_FIELDS, TaskState, WorkflowState

MAX_SEARCH_SIZE = 5000
DEFAULT_SEARCH_SIZE = 100

# --- the query mini-language --------------------------------------------------------------

_CONDITION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|=|>|<|\bIN\b)\s*(.*?)\s*$", re.IGNORECASE | re.DOTALL)
_AND = re.compile(r"\s+AND\s+", re.IGNORECASE)
_STRIP = re.compile(r"[\"'()]")


@dataclass(frozen=True)
class Condition:
    """One parsed condition: ``field`` as written (camelCase), ``op`` one of ``=``, ``>``,
    ``<``, ``>=``, ``<=``, ``IN`` (``IN`` always has two or more values), ``values`` the
    unquoted strings."""

    field: str
    op: str
    values: tuple[str, ...]


def _split_and(text: str) -> list[str]:
    """Split on ``AND`` (any case, surrounded by spaces) outside quoted strings."""
    parts, buf, quote = [], [], None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in "\"'":
            quote = ch
            buf.append(ch)
            i += 1
            continue
        m = _AND.match(text, i)
        if m and ch.isspace():
            parts.append("".join(buf))
            buf = []
            i = m.end()
            continue
        buf.append(ch)
        i += 1
    parts.append("".join(buf))
    return parts


def parse_query(text: str | None) -> list[Condition]:
    """Parse Conductor's ``query`` parameter into conditions (see the module doc).

    ``None``/blank -> ``[]``. Errors: InvalidInput
    ``Incorrectly formatted query string: <condition>`` (Conductor's message).
    Source: ``SqliteIndexQueryBuilder.Condition`` (regex ``([a-zA-Z]+)\\s?(=|>|<|IN)\\s?(.*)``).
    """
    if not text or not text.strip():
        return []
    out = []
    for part in _split_and(text.strip()):
        if not part.strip():
            raise InvalidInput(f"Incorrectly formatted query string: {part}")
        m = _CONDITION.match(part)
        if not m:
            raise InvalidInput(f"Incorrectly formatted query string: {part.strip()}")
        field, op, raw = m.group(1), m.group(2).upper(), m.group(3)
        values = tuple(v.strip() for v in _STRIP.sub("", raw).split(",") if v.strip())
        if not values:
            raise InvalidInput(f"Incorrectly formatted query string: {part.strip()}")
        if op == "IN" and len(values) == 1:
            op = "="
        elif op == "=" and len(values) > 1:
            op = "IN"
        out.append(Condition(field, op, values))
    return out


def camel_to_snake(name: str) -> str:
    """``workflowType`` -> ``workflow_type`` (Conductor's ``camelToSnake``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@dataclass(frozen=True)
class _Field:
    column: str
    kind: str = "text"  # text | time | status | int
    unset_zero: bool = False  # a time column where 0 means "not yet" (never matches < or <=)


# camelCase name -> model column. Workflow ``startTime`` is the execution's create time.
WORKFLOW_QUERY_FIELDS: dict[str, _Field] = {
    "workflowId": _Field("workflow_id"),
    "correlationId": _Field("correlation_id"),
    "workflowType": _Field("workflow_name"),
    "startTime": _Field("create_time", "time"),
    "endTime": _Field("end_time", "time", unset_zero=True),
    "updateTime": _Field("update_time", "time"),
    "status": _Field("status", "status"),
    "parentWorkflowId": _Field("parent_workflow_id"),
    "version": _Field("workflow_version", "int"),
    "priority": _Field("priority", "int"),
    "idempotencyKey": _Field("idempotency_key"),
    "event": _Field("event"),
}

TASK_QUERY_FIELDS: dict[str, _Field] = {
    "taskId": _Field("task_id"),
    "taskType": _Field("task_type"),  # also matches a SIMPLE task's name, see _task_type_q
    "taskDefName": _Field("task_def_name"),
    "referenceTaskName": _Field("reference_task_name"),
    "taskRefName": _Field("reference_task_name"),
    "status": _Field("status", "status"),
    "workflowId": _Field("workflow_id"),
    "workflowInstanceId": _Field("workflow_id"),
    "workflowType": _Field("workflow_type"),
    "correlationId": _Field("workflow__correlation_id"),
    "scheduledTime": _Field("scheduled_time", "time"),
    "startTime": _Field("start_time", "time", unset_zero=True),
    "endTime": _Field("end_time", "time", unset_zero=True),
    "updateTime": _Field("update_time", "time"),
    "domain": _Field("domain"),
    "workerId": _Field("worker_id"),
    "retryCount": _Field("retry_count", "int"),
    "iteration": _Field("iteration", "int"),
}


def _lookup_table(fields: dict[str, _Field]) -> dict[str, _Field]:
    table = {}
    for name, f in fields.items():
        table[name.lower()] = f
        table[camel_to_snake(name)] = f
    return table


_WORKFLOW_LOOKUP = _lookup_table(WORKFLOW_QUERY_FIELDS)
_TASK_LOOKUP = _lookup_table(TASK_QUERY_FIELDS)


def _time_value(field: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"Invalid time value for {field}: {value} (epoch milliseconds expected)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def _int_value(field: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(f"Invalid integer value for {field}: {value}") from None


def _typed(f: _Field, field: str, value: str) -> Any:
    if f.kind == "time":
        return _time_value(field, value)
    if f.kind == "int":
        return _int_value(field, value)
    if f.kind == "status":
        return value.upper()
    return value


def wildcard_q(column: str, pattern: str) -> Q:
    """``column`` matches ``pattern`` where ``*`` is any run of characters (case
    insensitive, like the SQLite DAO's ``lower(col) LIKE lower(?)``). ``*`` alone matches
    every non-null value."""
    core = pattern.strip("*")
    if "*" not in core:
        lead, trail = pattern.startswith("*"), pattern.endswith("*")
        if not core:
            return Q(**{f"{column}__isnull": False})
        if lead and trail:
            return Q(**{f"{column}__icontains": core})
        if trail:
            return Q(**{f"{column}__istartswith": core})
        return Q(**{f"{column}__iendswith": core})
    regex = "^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$"
    return Q(**{f"{column}__iregex": regex})


def _condition_q(cond: Condition, f: _Field) -> Q:
    col = f.column
    if cond.op == "IN":
        return Q(**{f"{col}__in": [_typed(f, cond.field, v) for v in cond.values]})
    value = cond.values[0]
    if cond.op == "=":
        if "*" in value and f.kind in ("text", "status"):
            return wildcard_q(col, value)
        return Q(**{col: _typed(f, cond.field, value)})
    lookup = {">": "gt", "<": "lt", ">=": "gte", "<=": "lte"}[cond.op]
    q = Q(**{f"{col}__{lookup}": _typed(f, cond.field, value)})
    if f.unset_zero and cond.op in ("<", "<="):
        q &= Q(**{f"{col}__gt": 0})  # not ended/started yet: Conductor's index holds no time
    return q


def _task_type_q(cond: Condition, base: Q) -> Q:
    """Conductor gives a SIMPLE task the task's name as ``taskType``; here ``task_type``
    is ``SIMPLE`` and the name is ``task_def_name``, so ``taskType`` matches either."""
    by_name = _condition_q(cond, _Field("task_def_name"))
    return base | (Q(task_type="SIMPLE") & by_name)


def workflow_q(conditions: list[Condition]) -> Q:
    """AND of the conditions over ``WorkflowExecution`` (unknown fields dropped)."""
    q = Q()
    for cond in conditions:
        f = _WORKFLOW_LOOKUP.get(cond.field.lower()) or _WORKFLOW_LOOKUP.get(camel_to_snake(cond.field))
        if f is not None:
            q &= _condition_q(cond, f)
    return q


def task_q(conditions: list[Condition]) -> Q:
    """AND of the conditions over ``TaskExecution`` (unknown fields dropped)."""
    q = Q()
    for cond in conditions:
        f = _TASK_LOOKUP.get(cond.field.lower()) or _TASK_LOOKUP.get(camel_to_snake(cond.field))
        if f is None:
            continue
        part = _condition_q(cond, f)
        q &= _task_type_q(cond, part) if f.column == "task_type" else part
    return q


# --- freeText -----------------------------------------------------------------------------

WORKFLOW_TEXT_COLUMNS = ("workflow_id", "correlation_id", "workflow_name", "reason_for_incompletion")
WORKFLOW_JSON_COLUMNS = ("input", "output")
TASK_TEXT_COLUMNS = ("task_id", "workflow__workflow_id", "task_def_name", "reference_task_name", "workflow_type",
                     "reason_for_incompletion")
TASK_JSON_COLUMNS = ("input_data", "output_data")


def _json_spellings(text: str) -> list[str]:
    """The ways ``text`` can appear inside stored JSON text: as is, with JSON escapes
    (quotes, backslashes) and with non-ASCII as ``\\uXXXX`` (how SQLite stores it)."""
    out = []
    for s in (text, json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1]):
        if s not in out:
            out.append(s)
    return out


def free_text_q(free_text: str | None, text_columns: tuple[str, ...], json_columns: tuple[str, ...]) -> tuple[dict, Q]:
    """``(annotations, Q)`` for Conductor's ``freeText``: ``*``/blank -> match all;
    otherwise a case-insensitive substring of any text column or of the JSON text of any
    JSON column (cast to text in SQL). Apply with ``qs.annotate(**a).filter(q)``."""
    if free_text is None or not free_text.strip() or free_text.strip() == "*":
        return {}, Q()
    term = free_text.strip()
    annotations = {f"_ft_{c}": Cast(c, output_field=TextField()) for c in json_columns}
    q = Q()
    for c in text_columns:
        q |= Q(**{f"{c}__icontains": term})
    for alias in annotations:
        for spelling in _json_spellings(term):
            q |= Q(**{f"{alias}__icontains": spelling})
    return annotations, q


# --- sorting --------------------------------------------------------------------------------

def parse_sort(sort: str | list[str] | None, fields: dict[str, _Field]) -> list:
    """``field:ASC|DESC`` entries (a list, or one string joined by ``|``; ``field`` alone
    means ASC) -> ORM order expressions. Unknown fields or orders are ignored, as in
    Conductor's index query builders. NULLs sort first ascending and last descending on
    both databases."""
    if not sort:
        return []
    items = sort if isinstance(sort, (list, tuple)) else [sort]
    entries = [e.strip() for item in items for e in str(item).split("|") if e.strip()]
    table = _lookup_table(fields)
    out = []
    for entry in entries:
        name, _, order = entry.partition(":")
        order = (order or "ASC").strip().upper()
        f = table.get(name.strip().lower()) or table.get(camel_to_snake(name.strip()))
        if f is None or order not in ("ASC", "DESC"):
            continue
        expr = F(f.column)
        out.append(expr.asc(nulls_first=True) if order == "ASC" else expr.desc(nulls_last=True))
    return out


def total_order(order: list, unique_column: str) -> list:
    """``order`` (ORM order expressions from ``parse_sort``) made a total order: the row's
    unique ``unique_column`` is appended in the direction of the last sort key (ascending
    when ``order`` is empty), so rows that tie on every key keep one order on both databases
    and pages taken with ``start``/``size`` neither repeat nor skip rows."""
    descending = bool(order) and getattr(order[-1], "descending", False)
    return [*order, F(unique_column).desc() if descending else F(unique_column).asc()]


# --- django-filter FilterSets (explicit parameters) -------------------------------------------

class _ListWidget(forms.TextInput):
    """Reads every value of a parameter (``?status=A&status=B``, ``status=A,B`` or a Python
    list) as one comma-joined string for django-filter's CSV filters."""

    def value_from_datadict(self, data, files, name):
        if hasattr(data, "getlist"):
            raw = data.getlist(name)
        else:
            raw = data.get(name)
            raw = list(raw) if isinstance(raw, (list, tuple, set)) else ([] if raw is None else [raw])
        if not raw:
            return None
        parts = [p.strip() for v in raw for p in str(v).split(",") if p.strip()]
        return parts


class CharListFilter(django_filters.BaseInFilter, django_filters.CharFilter):
    """``field IN (values)`` from a list, repeated parameters or a comma-joined string."""

    def __init__(self, *args, upper: bool = False, **kwargs):
        kwargs.setdefault("lookup_expr", "in")
        kwargs.setdefault("widget", _ListWidget)
        self.upper = upper
        super().__init__(*args, **kwargs)

    def filter(self, qs, value):
        if value and self.upper:
            value = [v.upper() for v in value]
        return super().filter(qs, value)


class SetTimeToFilter(django_filters.NumberFilter):
    """Upper bound (inclusive, epoch ms) of a time that is 0 until set: rows still at 0
    (not started/ended) never match."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("lookup_expr", "lte")
        super().__init__(*args, **kwargs)

    def filter(self, qs, value):
        if value in ([], (), {}, "", None):
            return qs
        return super().filter(qs, value).filter(**{f"{self.field_name}__gt": 0})


class WorkflowExecutionFilter(django_filters.FilterSet):
    """Explicit filters over workflow executions (camelCase names; times in epoch ms).

    ``workflowType``/``status``/``workflowId``/``correlationId`` take lists; ``*TimeFrom``
    / ``*TimeTo`` are inclusive bounds; ``topLevelOnly=true`` keeps executions without a
    parent (Conductor: ``parentWorkflowId=""``)."""

    workflowType = CharListFilter(field_name="workflow_name")
    version = django_filters.NumberFilter(field_name="workflow_version")
    status = CharListFilter(field_name="status", upper=True)
    workflowId = CharListFilter(field_name="workflow_id")
    correlationId = CharListFilter(field_name="correlation_id")
    parentWorkflowId = django_filters.CharFilter(field_name="parent_workflow_id")
    startTimeFrom = django_filters.NumberFilter(field_name="create_time", lookup_expr="gte")
    startTimeTo = django_filters.NumberFilter(field_name="create_time", lookup_expr="lte")
    endTimeFrom = django_filters.NumberFilter(field_name="end_time", lookup_expr="gte")
    endTimeTo = SetTimeToFilter(field_name="end_time")
    updateTimeFrom = django_filters.NumberFilter(field_name="update_time", lookup_expr="gte")
    updateTimeTo = django_filters.NumberFilter(field_name="update_time", lookup_expr="lte")
    topLevelOnly = django_filters.BooleanFilter(method="_top_level_only")

    class Meta:
        model = WorkflowExecution
        fields: list[str] = []

    def _top_level_only(self, qs, name, value):
        if value:
            return qs.filter(Q(parent_workflow_id__isnull=True) | Q(parent_workflow_id=""))
        return qs


class TaskExecutionFilter(django_filters.FilterSet):
    """Explicit filters over task executions (camelCase names; times in epoch ms).
    ``taskType`` matches the type or, for SIMPLE tasks, the task name."""

    taskType = CharListFilter(method="_task_type")
    taskDefName = CharListFilter(field_name="task_def_name")
    status = CharListFilter(field_name="status", upper=True)
    workflowId = CharListFilter(field_name="workflow_id")
    workflowType = CharListFilter(field_name="workflow_type")
    referenceTaskName = CharListFilter(field_name="reference_task_name")
    workerId = CharListFilter(field_name="worker_id")
    domain = CharListFilter(field_name="domain")
    startTimeFrom = django_filters.NumberFilter(field_name="start_time", lookup_expr="gte")
    startTimeTo = SetTimeToFilter(field_name="start_time")
    endTimeFrom = django_filters.NumberFilter(field_name="end_time", lookup_expr="gte")
    endTimeTo = SetTimeToFilter(field_name="end_time")
    updateTimeFrom = django_filters.NumberFilter(field_name="update_time", lookup_expr="gte")
    updateTimeTo = django_filters.NumberFilter(field_name="update_time", lookup_expr="lte")

    class Meta:
        model = TaskExecution
        fields: list[str] = []

    def _task_type(self, qs, name, value):
        if not value:
            return qs
        return qs.filter(Q(task_type__in=value) | Q(task_type="SIMPLE", task_def_name__in=value))


def _apply_filterset(filterset_class, filters: dict, qs: QuerySet) -> QuerySet:
    unknown = sorted(set(filters) - set(filterset_class.base_filters))
    if unknown:
        raise InvalidInput(f"Unknown search filter(s): {', '.join(unknown)}")
    data = {k: v for k, v in filters.items() if v is not None}
    if not data:
        return qs
    fs = filterset_class(data, queryset=qs)
    if not fs.is_valid():
        errors = [{"path": name, "message": "; ".join(str(m) for m in msgs)} for name, msgs in fs.errors.items()]
        raise validation_failed(errors)
    return fs.qs


# --- selectors ---------------------------------------------------------------------------------

MAX_START = 2**31 - 1  # Conductor's start is a Java int


def check_paging(start: int | None, size: int | None, *, path: str, what: str = "workflows") -> tuple[int, int]:
    """Validate ``start``/``size``: ``size`` above 5000 is Conductor's bean-validation 400
    (``Cannot return more than 5000 workflows. Please use pagination.`` at ``path``);
    negative values and a ``start`` past a Java int are 400 too. Returns ``(start, size)`` with defaults 0/100."""
    start = 0 if start is None else start
    size = DEFAULT_SEARCH_SIZE if size is None else size
    if size > MAX_SEARCH_SIZE:
        raise validation_failed([{"path": path, "invalidValue": size,
                                  "message": f"Cannot return more than {MAX_SEARCH_SIZE} {what}. Please use pagination."}])
    if size < 0:
        raise InvalidInput(f"size must not be negative: {size}")
    if start < 0:
        raise InvalidInput(f"start must not be negative: {start}")
    if start > MAX_START:
        raise InvalidInput(f"start must not be more than {MAX_START}: {start}")
    return start, size


def _classifier_q(classifier: str | list[str] | None) -> Q:
    """Conductor's ``classifier=a,b``: the definition's ``metadata.classifier`` in the
    list; ``workflow`` also matches definitions without one."""
    if not classifier:
        return Q()
    values = classifier if isinstance(classifier, (list, tuple)) else str(classifier).split(",")
    values = [v.strip() for v in values if v.strip()]
    if not values:
        return Q()
    q = Q(definition__metadata__classifier__in=values)
    if any(v.lower() == "workflow" for v in values):
        q |= Q(definition__metadata__classifier__isnull=True)
    return q


def _searched(qs: QuerySet, filterset, filters: dict, query_q: Q, free_text: str | None,
              text_columns: tuple[str, ...], json_columns: tuple[str, ...]) -> QuerySet:
    """``qs`` narrowed by the filterset's ``filters``, the parsed ``query`` and the free
    text over those columns (the steps workflow and task searches share)."""
    qs = _apply_filterset(filterset, filters, qs)
    qs = qs.filter(query_q)
    annotations, q = free_text_q(free_text, text_columns, json_columns)
    if annotations:
        qs = qs.annotate(**annotations)
    return qs.filter(q)


def workflow_queryset(*, query: str | None = None, free_text: str | None = "*", classifier: str | list[str] | None = None,
                      **filters: Any) -> QuerySet:
    """The filtered (unsorted, unpaged) ``WorkflowExecution`` queryset of a search; see
    ``workflow_search``."""
    qs = _searched(WorkflowExecution.objects.all(), WorkflowExecutionFilter, filters, workflow_q(parse_query(query)),
                   free_text, WORKFLOW_TEXT_COLUMNS, WORKFLOW_JSON_COLUMNS)
    cq = _classifier_q(classifier)
    if cq:
        qs = qs.filter(cq)
    return qs


_SUMMARY_FIELDS = tuple(f for f in WORKFLOW_FIELDS if f != "definition")


def workflow_search(*, query: str | None = None, free_text: str | None = "*", sort: str | list[str] | None = None,
                    start: int = 0, size: int = DEFAULT_SEARCH_SIZE, classifier: str | list[str] | None = None,
                    with_definition: bool = False, **filters: Any) -> tuple[int, list[WorkflowState]]:
    """Search workflow executions; return ``(totalHits, page)``.

    ``query``: Conductor's mini-language (module doc) over workflowId, correlationId,
    workflowType, startTime, endTime, updateTime, status, parentWorkflowId (plus version,
    priority). ``free_text``: ``*`` = all, else case-insensitive substring. ``sort``:
    ``"startTime:DESC|workflowId:ASC"`` or a list of such entries; default newest first
    (``startTime:DESC``); the workflow id always breaks ties, in the direction of the last
    sort key (``total_order``), so pages are stable.
    ``start``/``size``: offset and page size (size 0..5000). ``classifier``: comma list
    matched against the definition's ``metadata.classifier``. ``filters``:
    ``WorkflowExecutionFilter`` fields (camelCase, e.g. ``workflowType=["a", "b"]``,
    ``status="FAILED"``, ``startTimeFrom=ms``, ``topLevelOnly=True``).
    Returns WorkflowStates without tasks; ``definition`` is ``{}`` unless
    ``with_definition``. Errors: InvalidInput for a malformed query, bad filter values,
    unknown filter names or paging out of range. Source: ``WorkflowService.searchWorkflows``
    with the SQL index DAOs.
    """
    start, size = check_paging(start, size, path="searchWorkflows.arg1")
    qs = workflow_queryset(query=query, free_text=free_text, classifier=classifier, **filters)
    return _workflow_page(qs, sort, start, size, with_definition)


def _workflow_page(qs: QuerySet, sort: str | list[str] | None, start: int, size: int,
                   with_definition: bool) -> tuple[int, list[WorkflowState]]:
    """``(totalHits, page)`` of a workflow queryset: sorted (default newest first, the id
    breaking ties), paged, as WorkflowStates without tasks (``definition`` ``{}`` unless
    ``with_definition``)."""
    total = qs.count()
    order = parse_sort(sort, WORKFLOW_QUERY_FIELDS) or [F("create_time").desc()]
    fields = WORKFLOW_FIELDS if with_definition else _SUMMARY_FIELDS
    rows = list(qs.order_by(*total_order(order, "workflow_id")).values(*fields)[start:start + size]) if size else []
    if not with_definition:
        for r in rows:
            r["definition"] = {}
    return total, [store.workflow_from_values(r) for r in rows]


class TaskHit(NamedTuple):
    """A task of a search page with its workflow's correlationId (Task JSON carries it)."""

    task: TaskState
    correlation_id: str | None


def task_queryset(*, query: str | None = None, free_text: str | None = "*", **filters: Any) -> QuerySet:
    """The filtered (unsorted, unpaged) ``TaskExecution`` queryset of a search; see
    ``task_search``."""
    return _searched(TaskExecution.objects.all(), TaskExecutionFilter, filters, task_q(parse_query(query)),
                     free_text, TASK_TEXT_COLUMNS, TASK_JSON_COLUMNS)


def task_search(*, query: str | None = None, free_text: str | None = "*", sort: str | list[str] | None = None,
                start: int = 0, size: int = DEFAULT_SEARCH_SIZE, **filters: Any) -> tuple[int, list[TaskHit]]:
    """Search task executions (every attempt is a row); return ``(totalHits, page)``.

    ``query`` fields: taskId, taskType (a SIMPLE task also matches by its name, as
    Conductor's taskType is the name), taskDefName, referenceTaskName, status, workflowId,
    workflowType, correlationId, scheduledTime, startTime, endTime, updateTime, domain,
    workerId, retryCount, iteration. ``free_text``, ``sort``, ``start``/``size`` as in
    ``workflow_search``; default order newest scheduled first, task id breaks ties.
    ``filters``: ``TaskExecutionFilter`` fields. Errors: InvalidInput. Size is capped at
    5000 like workflow search (Conductor leaves task search uncapped).
    Source: ``ExecutionService.searchTaskSummary`` with the SQL index DAOs.
    """
    start, size = check_paging(start, size, path="search.arg1", what="tasks")
    qs = task_queryset(query=query, free_text=free_text, **filters)
    total = qs.count()
    order = parse_sort(sort, TASK_QUERY_FIELDS) or [F("scheduled_time").desc()]
    rows = list(qs.order_by(*total_order(order, "task_id")).values(*TASK_FIELDS, "workflow__correlation_id")[start:start + size]) \
        if size else []
    hits = []
    for r in rows:
        cid = r.pop("workflow__correlation_id")
        hits.append(TaskHit(whole_loop(store.task_from_values(r)), cid))
    return total, hits


def workflow_search_by_tasks(*, query: str | None = None, free_text: str | None = "*", sort: str | list[str] | None = None,
                             start: int = 0, size: int = DEFAULT_SEARCH_SIZE, with_definition: bool = False,
                             ) -> tuple[int, list[WorkflowState]]:
    """Workflows that have at least one task matching the task ``query``/``free_text``
    (``GET /workflow/search-by-tasks``); sorted and paged like ``workflow_search`` (sort
    fields are workflow fields). Returns ``(totalHits, page)``. Errors: InvalidInput.
    Source: ``WorkflowService.searchWorkflowsByTasks``."""
    start, size = check_paging(start, size, path="searchWorkflowsByTasks.arg1")
    matching = task_queryset(query=query, free_text=free_text).values("workflow_id")
    qs = WorkflowExecution.objects.filter(workflow_id__in=matching)
    return _workflow_page(qs, sort, start, size, with_definition)
