"""Loading and saving execution state: every row <-> state conversion of the engine.

Reads elsewhere (selectors, search, jobs) fetch ORM ``values()`` dicts and turn them
into state with ``task_from_values`` / ``workflow_from_values``. The decide cycle runs on
every task update, so this module speaks SQL directly: a fixed set of statements built
once per database vendor, JSON columns encoded and decoded here (one statement each to lock the workflow, read its tasks, insert new tasks, update
changed tasks and update the workflow row). The ORM models in ``apps.engine.models``
define the schema; the column lists come from ``apps.engine.state`` whose field names
are the column names.

Writes of task rows are compare-and-set on the status that was loaded, so a concurrent
poll that claimed a task (SCHEDULED -> IN_PROGRESS) is never overwritten by a stale
decide: the whole operation is retried instead (``StaleState``). The workflow
``definition`` snapshot is written only when it was replaced (restart with the latest
definition), never on ordinary decides. Every insert and status change saved here is
handed, inside the transaction, to ``notify.transitions`` (the status listeners' outbox).
"""
from __future__ import annotations

import contextlib
import json
import re
import threading
from functools import lru_cache, partial

import orjson

from django.db import DEFAULT_DB_ALIAS, connection, connections

from apps.engine import history, notify, params
from apps.engine.outcome import DeciderOutcome
from apps.engine.state import TASK_FIELDS, WORKFLOW_FIELDS, TaskList, TaskState, WorkflowState, active_tasks, task_by_id
from apps.engine.status import TERMINAL_TASK

WF_TABLE = "engine_workflow_execution"
TASK_TABLE = "engine_task_execution"
WF_JSON = frozenset({"definition", "input", "output", "variables", "task_to_domain",
                     "failed_reference_task_names", "failed_task_names"})
TASK_JSON = frozenset({"input_data", "output_data", "workflow_task"})
TASK_BOOL = frozenset({"retried", "executed"})
_TASK_JSON_AT = tuple(i for i, f in enumerate(TASK_FIELDS) if f in TASK_JSON)
_TASK_BOOL_AT = tuple(i for i, f in enumerate(TASK_FIELDS) if f in TASK_BOOL)
_WF_JSON_AT = tuple(i for i, f in enumerate(WORKFLOW_FIELDS) if f in WF_JSON)
_TASK_SLOTS = {f: TaskState.__dict__[f] for f in TASK_FIELDS}
_WF_SLOTS = {f: WorkflowState.__dict__[f] for f in WORKFLOW_FIELDS}
_TASK_INDEX = {f: i for i, f in enumerate(TASK_FIELDS)}
_WF_INDEX = {f: i for i, f in enumerate(WORKFLOW_FIELDS)}
_TASK_UPDATE_FIELDS = tuple(f for f in TASK_FIELDS if f not in ("task_id", "workflow_id"))
_WORKFLOW_UPDATE_FIELDS = tuple(f for f in WORKFLOW_FIELDS if f not in ("workflow_id", "definition"))


class FusedConflict(Exception):
    """A workflow was locked twice in one fused batch (``fused``): the batch must be rolled
    back and run call by call."""


class StaleState(Exception):
    """A task row changed under us (claimed by a poll); the caller retries the operation."""


class Loaded:
    """A workflow state plus what is needed to save it: the task statuses as loaded, the
    definition snapshot object as loaded, and the operator action being applied (``note``,
    recorded in the execution's history by ``save``)."""

    __slots__ = ("wf", "loaded_status", "definition", "workflow_status", "action")

    def __init__(self, wf: WorkflowState):
        self.wf = wf
        # a TaskList records the status of every row it reads, also of rows read later
        self.loaded_status = wf.tasks.loaded_status if isinstance(wf.tasks, TaskList) \
            else {t.task_id: t.status for t in wf.tasks}
        self.definition = wf.definition
        self.workflow_status = wf.status
        self.action: dict | None = None

    def note(self, action: str, *, reason: str | None = None, **params) -> None:
        """Name the operator action this change applies (``restart``, ``rerun``...), with
        its parameters (camelCase) and reason: ``save`` records it as an ``action`` event
        of the execution's history, with who acted (``history.acting``)."""
        self.action = {"action": action, "reason": reason,
                       "params": {k: v for k, v in params.items() if v is not None}}


# --- cursors ---------------------------------------------------------------------------------

class _BoundCursor:
    """A cursor that sends its parameters apart from the SQL (PostgreSQL's extended
    protocol, psycopg's ``Cursor``) on the connection and transaction Django uses, with
    Django's error translation (``OperationalError``, ``IntegrityError``...). Django's
    own cursors quote every parameter into the SQL text on the client, which is costly
    for the large JSON values of the hot path and never lets PostgreSQL reuse a plan;
    this one is prepared by psycopg after ``OPTIONS["prepare_threshold"]`` executions
    of the same statement on a connection (settings). Only ``execute``,
    ``executemany``, ``fetchone``, ``fetchall`` and ``rowcount``."""

    __slots__ = ("_cursor", "_db")

    def __init__(self, db):
        import psycopg

        db.ensure_connection()
        self._db = db  # this thread's DatabaseWrapper, looked up once (``connection`` is a proxy)
        self._cursor = psycopg.Cursor(db.connection)

    def __enter__(self) -> _BoundCursor:
        return self

    def __exit__(self, *exc) -> None:
        self._cursor.close()

    def execute(self, sql: str, params=None) -> None:
        db = self._db
        if db.execute_wrappers:
            return self._wrapped(sql, params, False)
        with db.wrap_database_errors:
            self._cursor.execute(sql, params)

    def executemany(self, sql: str, seq_of_params) -> None:
        db = self._db
        if db.execute_wrappers:
            return self._wrapped(sql, seq_of_params, True)
        with db.wrap_database_errors:
            self._cursor.executemany(sql, seq_of_params)

    def _wrapped(self, sql: str, params, many: bool) -> None:
        """Through the connection's execute wrappers (``connection.execute_wrapper``, as
        Django's cursors do: the API's audit row is written by one, apps.api.audit)."""
        db = self._db

        def run(sql, params, many, context):
            with db.wrap_database_errors:
                (self._cursor.executemany if many else self._cursor.execute)(sql, params)

        executor = run
        for wrapper in reversed(db.execute_wrappers):
            executor = partial(wrapper, executor)
        executor(sql, params, many, {"connection": db, "cursor": self})

    def copy_rows(self, table: str, columns: tuple[str, ...], rows: list) -> None:
        """PostgreSQL: ``COPY table (columns) FROM STDIN`` of ``rows`` (sequences in the
        order of ``columns``; JSON columns as JSON text), with Django's error translation.
        The connection's execute wrappers see it as ``INSERT INTO table (columns) /* COPY
        */`` (no parameters: the API's audit row is written before a call's first write,
        ``apps.api.audit``). Any number of rows in one statement that psycopg need not
        parse: a multi-row VALUES list is a new text for each number of rows, longer than
        psycopg's 4 kB cache of parsed statements (measured in process, 6 task rows:
        0.06-0.11 ms of client CPU against 0.45 for a VALUES list, 0.38 for unnest arrays)."""
        db = self._db
        names = ", ".join(columns)

        def run(sql, params, many, context):
            with db.wrap_database_errors:
                with self._cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)

        executor = run
        for wrapper in reversed(db.execute_wrappers):
            executor = partial(wrapper, executor)
        executor(f"INSERT INTO {table} ({names}) /* COPY FROM STDIN */", None, False, {"connection": db, "cursor": self})

    def fetchone(self):
        return self._cursor.fetchone()

    def fetchall(self):
        return self._cursor.fetchall()

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount


@lru_cache(maxsize=1024)
def _qmark(sql: str) -> str:
    """``%s`` placeholders -> SQLite's ``?`` (and ``%%`` -> ``%``), as Django's SQLite
    cursor converts every statement on every execute, here once per statement text."""
    return _FORMAT_PLACEHOLDER.sub("?", sql).replace("%%", "%")


_FORMAT_PLACEHOLDER = re.compile(r"(?<!%)%s")


class _SqliteCursor(_BoundCursor):
    """The engine's cursor on SQLite: the ``sqlite3`` cursor of the connection and
    transaction Django uses, each statement text converted to ``?`` placeholders once
    (``_qmark``) instead of on every execute, without the layers of Django's cursor
    wrapper (a thread check, the debug wrapper) on the hot path; Django's error
    translation and the connection's execute wrappers kept (``_BoundCursor``). Measured
    in process: 0.2 ms of a worker update's 1.7 ms of CPU were the placeholder
    conversion of its ~8 statements."""

    __slots__ = ()

    def __init__(self, db):
        db.ensure_connection()
        self._db = db
        self._cursor = db.connection.cursor()

    def execute(self, sql: str, params=None) -> None:
        if params is None:  # as Django: a statement without parameters is sent as written
            return super().execute(sql, ())
        return super().execute(_qmark(sql), params)

    def executemany(self, sql: str, seq_of_params) -> None:
        return super().executemany(_qmark(sql), seq_of_params)


def sql_cursor():
    """``with sql_cursor() as cursor:`` the cursor of the engine's hand-written SQL (``%s``
    placeholders): on PostgreSQL parameters bound on the server and statements prepared
    once per connection (``_BoundCursor``); on SQLite the driver's cursor with the
    statements converted once (``_SqliteCursor``), or Django's own cursor while it
    records queries (``connection.queries_logged``: DEBUG, ``CaptureQueriesContext``), so
    what it records stays complete; elsewhere Django's cursor."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor == "postgresql":
        return _BoundCursor(db)
    if db.vendor == "sqlite" and not db.queries_logged:
        return _SqliteCursor(db)
    return db.cursor()


# --- SQL, built once per vendor ---------------------------------------------------------------

def _placeholder(field: str, json_fields: frozenset) -> str:
    return "%s::jsonb" if field in json_fields and connection.vendor == "postgresql" else "%s"


@lru_cache(maxsize=8)
def _sql(vendor: str) -> dict[str, str]:
    lock = " FOR UPDATE" if vendor == "postgresql" else ""
    wf_cols = ", ".join(WORKFLOW_FIELDS)
    task_cols = ", ".join(TASK_FIELDS)
    task_cols_text = ", ".join(f"{f}::text" if f in TASK_JSON and vendor == "postgresql" else f for f in TASK_FIELDS)
    task_ph = ", ".join(_placeholder(f, TASK_JSON) for f in TASK_FIELDS)
    task_set = ", ".join(f"{f} = {_placeholder(f, TASK_JSON)}" for f in _TASK_UPDATE_FIELDS)
    wf_set = ", ".join(f"{f} = {_placeholder(f, WF_JSON)}" for f in _WORKFLOW_UPDATE_FIELDS)
    wf_ph = ", ".join(_placeholder(f, WF_JSON) for f in WORKFLOW_FIELDS)
    return {
        "lock": f"SELECT {wf_cols} FROM {WF_TABLE} WHERE workflow_id = %s{lock}",
        # JSON columns as text on PostgreSQL too: decoded lazily (LoadedTask)
        "tasks": f"SELECT {task_cols_text} FROM {TASK_TABLE} WHERE workflow_id = %s ORDER BY seq",
        # the unsettled tasks, what a decide starts from: the partial index task_active,
        # whose condition SQLite's planner only matches when written as Django writes it
        # (``NOT executed AND NOT retried``; ``executed = 0`` walked every task row)
        "active_tasks": f"SELECT {task_cols_text} FROM {TASK_TABLE} WHERE workflow_id = %s "
                        "AND NOT executed AND NOT retried AND status <> 'SKIPPED' ORDER BY seq",
        # ... with the highest seq of the execution's tasks in a last column, read after the
        # lock (the lock's own statement may read an older snapshot on PostgreSQL)
        "active_tasks_seq": f"SELECT {task_cols_text}, (SELECT MAX(seq) FROM {TASK_TABLE} WHERE workflow_id = %s) "
                            f"FROM {TASK_TABLE} WHERE workflow_id = %s "
                            "AND NOT executed AND NOT retried AND status <> 'SKIPPED' ORDER BY seq",
        # the workflow row with its tasks' highest seq (the index task_workflow_seq, read
        # backwards): how many tasks there can be, so a small execution is read whole. On
        # PostgreSQL a statement that waited for the row lock still reads the rest of the
        # database as of its start (READ COMMITTED): the figure only chooses how to read the
        # tasks, whose statements come after the lock
        "lock_sized": f"SELECT {wf_cols}, (SELECT MAX(seq) FROM {TASK_TABLE} WHERE workflow_id = %s) "
                      f"FROM {WF_TABLE} WHERE workflow_id = %s{lock}",
        # PostgreSQL, the fused batch: several rows locked at once, in one order (no
        # deadlock between two batches), then their tasks
        "lock_many": f"SELECT {wf_cols}, (SELECT MAX(t.seq) FROM {TASK_TABLE} t WHERE t.workflow_id = w.workflow_id) "
                     f"FROM {WF_TABLE} w WHERE w.workflow_id = ANY(%s) ORDER BY w.workflow_id{lock}",
        "tasks_many": f"SELECT {task_cols_text} FROM {TASK_TABLE} WHERE workflow_id = ANY(%s) ORDER BY workflow_id, seq",
        "tasks_by_ref": f"SELECT {task_cols_text} FROM {TASK_TABLE} WHERE workflow_id = %s "
                        "AND reference_task_name IN ",
        "task_by_id": f"SELECT {task_cols_text} FROM {TASK_TABLE} WHERE task_id = %s AND workflow_id = %s",
        "max_seq": f"SELECT MAX(seq) FROM {TASK_TABLE} WHERE workflow_id = %s",
        "last_task": f"SELECT {task_cols_text} FROM {TASK_TABLE} WHERE workflow_id = %s ORDER BY seq DESC LIMIT 1",
        "matching": f"SELECT {task_cols_text} FROM {TASK_TABLE} WHERE workflow_id = %s",
        "outputs": "SELECT task_id, reference_task_name, seq, retry_count, iteration, status, task_def_name, "
                   "task_type, reason_for_incompletion, "
                   + ", ".join(f"{f}::text" if vendor == "postgresql" else f for f in ("output_data", "workflow_task"))
                   + f" FROM {TASK_TABLE} WHERE workflow_id = %s ORDER BY seq",
        "insert_task_row": f"({task_ph})",
        "insert_task": f"INSERT INTO {TASK_TABLE} ({task_cols}) VALUES ",
        "update_task": f"UPDATE {TASK_TABLE} SET {task_set} WHERE task_id = %s AND status = %s",
        "update_wf": f"UPDATE {WF_TABLE} SET {wf_set} WHERE workflow_id = %s",
        "update_wf_definition": f"UPDATE {WF_TABLE} SET definition = {_placeholder('definition', WF_JSON)} "
                                "WHERE workflow_id = %s",
        "insert_wf": f"INSERT INTO {WF_TABLE} ({wf_cols}) VALUES ({wf_ph})",
        "children": f"SELECT workflow_id, status, output, reason_for_incompletion, workflow_name, workflow_version "
                    f"FROM {WF_TABLE} WHERE workflow_id IN ",
    }


def _s() -> dict[str, str]:
    return _sql(connection.vendor)


def loads(text: str | bytes | bytearray | memoryview):
    """JSON text -> Python value, with orjson (several times faster than ``json``: a decide
    decodes three JSON columns of every task it loads); what orjson refuses and ``json``
    accepts (NaN/Infinity, integers beyond 64 bits) falls back to ``json.loads``.
    Errors: ``json.JSONDecodeError`` (a ``ValueError``) on invalid JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(bytes(text) if isinstance(text, memoryview) else text)


def _load_json(value):
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return loads(value)
    return value


def _dump(value) -> str:
    """Python value -> compact JSON text (orjson; ``json`` for what orjson refuses, such
    as integers beyond 64 bits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value, separators=(",", ":"))


class _Raw:
    """JSON text of a column not decoded yet (see ``LoadedTask``)."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


def _lazy_json(name: str, cls: type = TaskState) -> property:
    slot = cls.__dict__[name]  # the dataclass's slot descriptor

    def get(self):
        value = slot.__get__(self, None)
        if type(value) is _Raw:
            value = loads(value.text)
            slot.__set__(self, value)
        return value

    def put(self, value):
        slot.__set__(self, value)

    return property(get, put, doc=f"``{name}``, decoded from its JSON text on first access")


class LoadedTask(TaskState):
    """A TaskState read from a row: its JSON columns (``input_data``, ``output_data``,
    ``workflow_task``) are decoded on first access (a decide reads the JSON of few of the
    tasks it loads), and the row as read is kept (``_row``) so that ``save`` writes only
    the columns that changed. Behaves as a TaskState in every other way (fields,
    equality, copies)."""

    __slots__ = ("_row",)
    input_data = _lazy_json("input_data")
    output_data = _lazy_json("output_data")
    workflow_task = _lazy_json("workflow_task")


class LoadedWorkflow(WorkflowState):
    """A WorkflowState read from a row: JSON columns decoded on first access, the row as
    read kept (``_row``) so that ``save`` writes only the columns that changed (a large
    workflow input is neither decoded nor rewritten by a task update)."""

    __slots__ = ("_row",)


for _name in WF_JSON:
    setattr(LoadedWorkflow, _name, _lazy_json(_name, WorkflowState))


def _workflow_from_row(row: tuple) -> WorkflowState:
    values = list(row)
    for i in _WF_JSON_AT:
        value = values[i]
        if isinstance(value, (str, bytes, bytearray, memoryview)):
            values[i] = _Raw(value)
    wf = LoadedWorkflow(*values)  # WORKFLOW_FIELDS is WorkflowState's field order (then tasks)
    wf._row = values
    return wf


def task_from_row(row: tuple) -> TaskState:
    """A TaskState from a row of ``SELECT <TASK_FIELDS>`` (booleans decoded; JSON columns,
    given as text or already decoded by the driver, decoded on first access)."""
    values = list(row)
    for i in _TASK_JSON_AT:
        value = values[i]
        if isinstance(value, (str, bytes, bytearray, memoryview)):
            values[i] = _Raw(value)
    for i in _TASK_BOOL_AT:
        values[i] = bool(values[i])
    task = LoadedTask(*values)  # TASK_FIELDS is TaskState's field order
    task._row = values
    return task


def _raw_text(raw: _Raw) -> str:
    text = raw.text
    return text if isinstance(text, str) else bytes(text).decode()


def _output_size(task: LoadedTask) -> int:
    """Characters of a loaded task's output as JSON text (0 when empty), without decoding
    it when it was never read."""
    value = TaskState.__dict__["output_data"].__get__(task, None)
    if type(value) is _Raw:
        text = _raw_text(value)
        return 0 if text in ("{}", "null") else len(text)
    return len(_dump(value)) if value else 0


def _same_json(value, raw: _Raw) -> bool:
    """Whether ``value`` is the JSON document ``raw`` holds, when their texts differ: a
    column read back from PostgreSQL's ``jsonb`` has its keys reordered and ``", "``
    separators, so a payload decoded and left as it was would otherwise be written again.
    Compared as key-sorted JSON, so 1, 1.0 and true stay different values."""
    option = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    try:
        return orjson.dumps(value, option=option) == orjson.dumps(loads(_raw_text(raw)), option=option)
    except (TypeError, ValueError):
        return False


def _changed(obj, fields: tuple[str, ...], json_fields: frozenset, slots: dict,
             index: dict[str, int]) -> tuple[list[str], list]:
    """The columns of ``obj`` (a LoadedTask/LoadedWorkflow) that differ from the row it was
    read from (``obj._row``, which is then brought up to date), and their new values as
    parameters. A JSON column never decoded is unchanged; a decoded one is written when
    its JSON text differs from the text read."""
    row = obj._row
    names: list[str] = []
    values: list = []
    for f in fields:
        current = slots[f].__get__(obj, None)
        i = index[f]
        before = row[i]
        if current is before:
            continue
        if f in json_fields:
            if type(current) is _Raw:
                continue
            text = _dump(current)
            if type(before) is _Raw and (text == _raw_text(before) or _same_json(current, before)):
                continue
            names.append(f)
            values.append(text)
        elif current == before and type(current) is type(before):
            continue
        else:
            names.append(f)
            values.append(current)
        row[i] = current
    return names, values



def task_from_values(values: dict) -> TaskState:
    """A TaskState from an ORM ``.values(*TASK_FIELDS)`` dict (the ORM decoded the JSON)."""
    return TaskState(**values)


def workflow_from_values(values: dict) -> WorkflowState:
    """A WorkflowState (without tasks) from an ORM ``.values(*WORKFLOW_FIELDS)`` dict."""
    return WorkflowState(**values)


def _task_params(task: TaskState, fields: tuple[str, ...]) -> list:
    return [_dump(getattr(task, f)) if f in TASK_JSON else getattr(task, f) for f in fields]


def _workflow_params(wf: WorkflowState, fields: tuple[str, ...]) -> list:
    return [_dump(getattr(wf, f)) if f in WF_JSON else getattr(wf, f) for f in fields]


# --- reads -------------------------------------------------------------------------------------

def _summaries(cursor, ids: list[str]) -> dict[str, dict]:
    """``{workflow_id: summary}`` of these executions (see ``workflow_summary``)."""
    cursor.execute(_s()["children"] + "(" + ", ".join(["%s"] * len(ids)) + ")", ids)
    return {workflow_id: {"workflow_id": workflow_id, "status": status, "output": _load_json(output),
                          "reason_for_incompletion": reason, "workflow_name": name, "workflow_version": version}
            for workflow_id, status, output, reason, name, version in cursor.fetchall()}


def _attach_sub_workflows(wf: WorkflowState, cursor) -> None:
    ids = [t.sub_workflow_id for t in active_tasks(wf.tasks)
           if t.task_type == "SUB_WORKFLOW" and t.sub_workflow_id and not t.terminal]
    if ids:
        wf.sub_workflows.update(_summaries(cursor, ids))


def workflow_summary(workflow_id: str) -> dict | None:
    """``{workflow_id, status, output, reason_for_incompletion, workflow_name,
    workflow_version}`` of one execution (what a parent sees of its child), or None."""
    with sql_cursor() as cursor:
        return _summaries(cursor, [workflow_id]).get(workflow_id)


class NarrowTask:
    """A task row read for its output (``TaskSource.outputs``): the fields a reader of
    many finished tasks needs (``params.loop_output``, a JOIN that ends), its JSON columns
    decoded on first access. Read-only: nothing saves it."""

    __slots__ = ("task_id", "reference_task_name", "seq", "retry_count", "iteration", "status", "task_def_name",
                 "task_type", "reason_for_incompletion", "_output", "_workflow_task")

    def __init__(self, task_id, reference_task_name, seq, retry_count, iteration, status, task_def_name,
                 task_type, reason_for_incompletion, output, workflow_task):
        self.task_id = task_id
        self.reference_task_name = reference_task_name
        self.seq = seq
        self.retry_count = retry_count
        self.iteration = iteration
        self.status = status
        self.task_def_name = task_def_name
        self.task_type = task_type
        self.reason_for_incompletion = reason_for_incompletion
        self._output = output
        self._workflow_task = workflow_task

    @property
    def output_data(self):
        value = self._output = _load_json(self._output)
        return value

    @property
    def workflow_task(self):
        value = self._workflow_task = _load_json(self._workflow_task)
        return value

    terminal = TaskState.terminal
    successful = TaskState.successful


class _RowSource:
    """The ``state.TaskSource`` of one locked execution: reads its task rows on demand."""

    __slots__ = ("workflow_id",)

    def __init__(self, workflow_id: str):
        self.workflow_id = workflow_id

    def _rows(self, sql: str, params: list) -> list[TaskState]:
        with sql_cursor() as cursor:
            cursor.execute(sql, params)
            return [task_from_row(r) for r in cursor.fetchall()]

    def by_refs(self, refs: list[str]) -> list[TaskState]:
        rows = self._rows(_s()["tasks_by_ref"] + "(" + ", ".join(["%s"] * len(refs)) + ")",
                          [self.workflow_id, *refs])
        rows.sort(key=lambda t: t.seq)
        return rows

    def by_id(self, task_id: str) -> TaskState | None:
        rows = self._rows(_s()["task_by_id"], [task_id, self.workflow_id])
        return rows[0] if rows else None

    def all(self) -> list[TaskState]:
        return self._rows(_s()["tasks"], [self.workflow_id])

    def matching(self, statuses: frozenset[str] | None, task_type: str | None) -> list[TaskState]:
        if statuses is not None and not statuses:
            return []
        sql, args = _s()["matching"], [self.workflow_id]
        if statuses is not None:
            sql += " AND status IN (" + ", ".join(["%s"] * len(statuses)) + ")"
            args += sorted(statuses)
        if task_type is not None:
            sql += " AND task_type = %s"
            args.append(task_type)
        return self._rows(sql + " ORDER BY seq", args)

    def last(self) -> TaskState | None:
        rows = self._rows(_s()["last_task"], [self.workflow_id])
        return rows[0] if rows else None

    def outputs(self) -> list[NarrowTask]:
        with sql_cursor() as cursor:
            cursor.execute(_s()["outputs"], [self.workflow_id])
            return [NarrowTask(*r) for r in cursor.fetchall()]

    def max_seq(self) -> int:
        with sql_cursor() as cursor:
            cursor.execute(_s()["max_seq"], [self.workflow_id])
            row = cursor.fetchone()
        return int(row[0] or 0) if row else 0


def _read(workflow_id: str, *, lock: bool, include_tasks: bool = True, lazy: bool = False) -> WorkflowState | None:
    batch = _fused.batch
    if lock and batch is not None:
        if workflow_id in batch.locked:
            # its first service's writes are held: a second one would read without them
            raise FusedConflict(workflow_id)
        batch.locked.add(workflow_id)
        if include_tasks and workflow_id in batch.prefetched:
            return batch.take(workflow_id)
    sql = _s()
    with sql_cursor() as cursor:
        if include_tasks and (lock or lazy):
            # A decide reads the unsettled tasks now and the others when asked for (a
            # TaskList); an execution of at most TaskList.LOAD_ALL_UP_TO tasks is read
            # whole at once, one statement instead of the several look-ups a decide makes
            # (the references its inputs name; at the end TERMINATE, the failed tasks, the
            # last task).
            statement = sql["lock_sized"]
            cursor.execute(statement if lock else statement.replace(" FOR UPDATE", ""), [workflow_id, workflow_id])
            row = cursor.fetchone()
            if row is None:
                return None
            wf = _workflow_from_row(row[:-1])
            highest = int(row[-1] or 0)
            if highest <= TaskList.LOAD_ALL_UP_TO:
                cursor.execute(sql["tasks"], [workflow_id])
                wf.tasks = TaskList([task_from_row(r) for r in cursor.fetchall()], None)
            else:
                cursor.execute(sql["active_tasks_seq"], [workflow_id, workflow_id])
                rows = cursor.fetchall()
                wf.tasks = TaskList([task_from_row(r[:-1]) for r in rows], _RowSource(workflow_id),
                                    max_seq=int(rows[0][-1] or 0) if rows else None)
            _attach_sub_workflows(wf, cursor)
            return wf
        cursor.execute(sql["lock"] if lock else sql["lock"].replace(" FOR UPDATE", ""), [workflow_id])
        row = cursor.fetchone()
        if row is None:
            return None
        wf = _workflow_from_row(row)
        if include_tasks:
            cursor.execute(sql["tasks"], [workflow_id])
            wf.tasks = [task_from_row(r) for r in cursor.fetchall()]
            _attach_sub_workflows(wf, cursor)
            params.fill_loop_outputs(wf)
    return wf


def lock_workflow(workflow_id: str) -> WorkflowState | None:
    """Lock the workflow row (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite's IMMEDIATE
    transaction already holds the write lock) and load it with the status of its running
    sub-workflows and its tasks as a ``state.TaskList``: the unsettled tasks are read now,
    the others when asked for (by reference, by id, or all of them when the list is
    iterated), all within this transaction; an execution of at most
    ``TaskList.LOAD_ALL_UP_TO`` tasks (by its highest seq) is read whole at once. Must run inside ``transaction.atomic()``.
    Returns None if the workflow does not exist."""
    return _read(workflow_id, lock=True)


def snapshot_workflow(workflow_id: str) -> WorkflowState | None:
    """Read a workflow without a lock, its tasks as a ``state.TaskList`` (the unsettled ones
    now, the others when asked for): a snapshot to decide in memory and throw away (the
    evaluations' run-ahead), which never reads every task of a large execution. None if
    absent."""
    return _read(workflow_id, lock=False, lazy=True)


def load_workflow(workflow_id: str, include_tasks: bool = True) -> WorkflowState | None:
    """Read a workflow (no lock) with its tasks ordered by seq; None if absent. A running
    DO_WHILE gets its whole output, as Conductor shows it (``params.loop_output``): read
    to show, not to save."""
    return _read(workflow_id, lock=False, include_tasks=include_tasks)


# --- writes ------------------------------------------------------------------------------------

def insert_workflow(wf: WorkflowState) -> None:
    """Insert a new workflow row (without its tasks; ``wf.tasks`` are the tasks the start
    inserts, handed with it to the transition recorders of ``events``); in a fused batch
    held for its flush, with its events."""
    with sql_cursor() as cursor:
        if _fused.batch is not None:
            insert_rows(WF_TABLE, WORKFLOW_FIELDS, [_workflow_params(wf, WORKFLOW_FIELDS)])
        else:
            cursor.execute(_s()["insert_wf"], _workflow_params(wf, WORKFLOW_FIELDS))
        history.record_start(wf).write(cursor)
    notify.transitions(wf, None, [(t, None) for t in wf.tasks])


def insert_rows(table: str, columns: tuple[str, ...], rows: list) -> None:
    """New rows of ``table`` (names quoted as needed; sequences of values in the order of
    ``columns``, as the database stores them; JSON as JSON text), in the current
    transaction: in a fused batch held for its flush (one COPY per table with the batch's
    other rows), else one COPY on PostgreSQL or one ``executemany`` INSERT on SQLite. The
    rows written with a service's change that have no statement of their own: a fused
    start's execution (``insert_workflow``), the API's audit row (``apps.api.audit``)."""
    if not rows:
        return
    batch = _fused.batch
    if batch is not None:
        batch.rows.setdefault((table, tuple(columns)), []).extend(rows)
        return
    _write_rows(table, tuple(columns), rows)


def delete_for_workflow(table: str, workflow_id: str) -> None:
    """``DELETE FROM table WHERE workflow_id = %s`` in the current transaction; in a fused
    batch held for its flush, one statement for all the batch's workflows (the rows other
    layers drop with an execution's end: its workflow message queue, ``apps.wmq``)."""
    batch = _fused.batch
    if batch is not None:
        batch.deletes.setdefault(table, set()).add(workflow_id)
        return
    with sql_cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE workflow_id = %s", [workflow_id])


def _write_rows(table: str, columns: tuple[str, ...], rows: list) -> None:
    with sql_cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.copy_rows(table, columns, rows)
        else:
            cursor.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})",
                               rows)


def insert_tasks(tasks: list[TaskState]) -> None:
    """Insert new task rows in one statement (in a fused batch: held for its flush)."""
    if not tasks:
        return
    if _fused.batch is not None:
        _fused.batch.inserts.extend(_task_params(task, TASK_FIELDS) for task in tasks)
        return
    _insert_task_rows([_task_params(task, TASK_FIELDS) for task in tasks])


def _insert_task_rows(rows: list[list]) -> None:
    """New task rows: one COPY on PostgreSQL (``copy_rows``), one multi-row INSERT on SQLite."""
    sql = _s()
    with sql_cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.copy_rows(TASK_TABLE, TASK_FIELDS, rows)
        else:
            cursor.execute(sql["insert_task"] + ", ".join([sql["insert_task_row"]] * len(rows)),
                           [v for row in rows for v in row])


def _prior_state(cursor, workflow_id: str) -> dict:
    """The execution's tasks and row as stored, before a save overwrites them, for the
    history (``history.prior_snapshot``); read only when tasks are removed or revived."""
    sql = _s()
    cursor.execute(sql["tasks"], [workflow_id])
    tasks = [task_from_row(r) for r in cursor.fetchall()]
    cursor.execute(sql["lock"].replace(" FOR UPDATE", ""), [workflow_id])
    row = cursor.fetchone()
    return history.prior_snapshot(tasks, _workflow_from_row(row) if row else None)


def _fields_before(names: list[str], params: list, row_before: list) -> dict[str, tuple] | None:
    """The workflow fields of the history's ``workflow.updated`` (``TRACKED_COLUMNS``)
    among the changed columns ``names`` (new values ``params``): ``{column: (value
    before, its JSON text or None, bytes of the new JSON or None)}``; None when none
    changed. A payload read from its row is handed as its text, not decoded."""
    out = {}
    for name, new in zip(names, params):
        if name not in history.TRACKED_COLUMNS:
            continue
        before = row_before[_WF_INDEX[name]]
        if name in WF_JSON:
            text = _raw_text(before) if type(before) is _Raw else None
            out[name] = (None if text is not None else before, text, len(new))
        else:
            out[name] = (before, None, None)
    return out or None


def save(loaded: Loaded, outcome: DeciderOutcome, *, workflow_changed: bool = True,
         extra_task_ids: set[str] | None = None) -> None:
    """Persist a decided state: delete removed tasks, insert new tasks, update changed ones
    (compare-and-set on the loaded status) and the workflow row, and append what changed
    to the execution's history (``apps.engine.history``, one INSERT). Raises StaleState on
    a lost race (the caller's transaction is rolled back and the operation re-run)."""
    wf = loaded.wf
    sql = _s()
    new_ids = {t.task_id for t in outcome.new_tasks}
    removed_ids = set(outcome.removed_task_ids)
    updated = dict(outcome.updated_tasks)
    if extra_task_ids:
        for task_id in extra_task_ids:
            task = task_by_id(wf.tasks, task_id)
            if task is not None:
                updated[task_id] = task
    status_of = loaded.loaded_status
    # an ended attempt revived in place (rerun, retry of a JOIN, a parent reopened)
    revived = any(status_of.get(task_id) in TERMINAL_TASK and task.status not in TERMINAL_TASK
                  for task_id, task in updated.items() if task_id not in new_ids)
    definition_replaced = wf.definition is not loaded.definition
    output_sizes: dict[str, int] = {}
    fields_before: dict[str, tuple] | None = None
    with sql_cursor() as cursor:
        # what a rerun/restart/retry overwrites is kept in the history (the rare paths only)
        prior = _prior_state(cursor, wf.workflow_id) if removed_ids or revived or definition_replaced else None
        removed = []
        if removed_ids:
            ids = list(outcome.removed_task_ids)
            cursor.execute(f"DELETE FROM {TASK_TABLE} WHERE task_id IN (" + ", ".join(["%s"] * len(ids)) + ")"
                           " RETURNING task_id, reference_task_name, status, seq", ids)
            removed = sorted(cursor.fetchall(), key=lambda r: r[3])
    insert_tasks(outcome.new_tasks)
    out_at = _TASK_UPDATE_FIELDS.index("output_data")
    with sql_cursor() as cursor:
        for task_id, task in updated.items():
            if task_id in new_ids or task_id in removed_ids:
                continue
            expected = status_of.get(task_id, task.status)
            if isinstance(task, LoadedTask):
                # only the columns that changed (compare-and-set on the loaded status)
                names, params = _changed(task, _TASK_UPDATE_FIELDS, TASK_JSON, _TASK_SLOTS, _TASK_INDEX)
                if not names:
                    continue
                _cas(cursor, f"UPDATE {TASK_TABLE} SET "
                     + ", ".join(f"{f} = {_placeholder(f, TASK_JSON)}" for f in names)
                     + " WHERE task_id = %s AND status = %s", params + [task_id, expected], task_id)
                if expected != task.status:  # the history records the output size of a status change
                    output_sizes[task_id] = (len(params[names.index("output_data")]) if "output_data" in names
                                             else _output_size(task))
            else:
                params = _task_params(task, _TASK_UPDATE_FIELDS)
                _cas(cursor, sql["update_task"], params + [task_id, expected], task_id)
                output_sizes[task_id] = len(params[out_at]) if task.output_data else 0
        if workflow_changed or outcome.workflow_changed or outcome.new_tasks or updated or removed_ids:
            if isinstance(wf, LoadedWorkflow):
                row_before = list(wf._row)  # _changed brings the row up to date
                names, params = _changed(wf, _WORKFLOW_UPDATE_FIELDS, WF_JSON, _WF_SLOTS, _WF_INDEX)
                if names:
                    _update_workflow(cursor, f"UPDATE {WF_TABLE} SET "
                                     + ", ".join(f"{f} = {_placeholder(f, WF_JSON)}" for f in names)
                                     + " WHERE workflow_id = %s", params + [wf.workflow_id])
                    fields_before = _fields_before(names, params, row_before)
            else:
                _update_workflow(cursor, sql["update_wf"], _workflow_params(wf, _WORKFLOW_UPDATE_FIELDS) + [wf.workflow_id])
        if definition_replaced:
            cursor.execute(sql["update_wf_definition"], [_dump(wf.definition), wf.workflow_id])
        # tasks that moved before the tasks they led to
        changed = [(t, status_of.get(task_id)) for task_id, t in updated.items()
                   if task_id not in new_ids and task_id not in removed_ids
                   and status_of.get(task_id) != t.status]
        history.record_save(cursor, wf, previous_status=loaded.workflow_status, note=loaded.action,
                            new_tasks=outcome.new_tasks, changed=changed, removed=removed, prior=prior,
                            old_definition=loaded.definition if definition_replaced else None,
                            output_sizes=output_sizes, fields_before=fields_before)
    changed += [(t, None) for t in outcome.new_tasks]
    if changed or wf.status != loaded.workflow_status:
        notify.transitions(wf, loaded.workflow_status, changed)


def _cas(cursor, sql: str, params: list, task_id: str) -> None:
    """A task's compare-and-set UPDATE (``... WHERE task_id = %s AND status = %s``):
    StaleState when it changed no row; in a fused batch held for its flush, which checks."""
    batch = _fused.batch
    if batch is not None:
        batch.updates.setdefault(sql, []).append(params)
        return
    cursor.execute(sql, params)
    if cursor.rowcount != 1:
        raise StaleState(task_id)


def _update_workflow(cursor, sql: str, params: list) -> None:
    batch = _fused.batch
    if batch is not None:
        batch.workflow_updates.setdefault(sql, []).append(params)
        return
    cursor.execute(sql, params)


# --- the fused batch ---------------------------------------------------------------------------

class FusedBatch:
    """The statements of several services (task updates of distinct workflows and starts,
    run one after the other by a committer, ``apps.engine.groupcommit``) made as one set,
    on PostgreSQL: the workflows locked and read with two statements (``fused``), each
    service's writes held (new executions, new tasks, the compare-and-set task UPDATEs,
    the workflow UPDATEs, the history events, the queue notifications, other layers'
    rows) and sent by ``flush`` as one COPY per table and one pipelined ``executemany``
    per UPDATE shape.

    ``prefetched`` maps a workflow id to its locked row (with its highest task seq) and
    its task rows, or None when it does not exist (a large execution is not in it);
    ``lock_workflow`` takes it from there once (a second service of the same workflow reads the database: the batch's own
    writes must be flushed before, which ``groupcommit`` ensures by fusing only distinct
    workflows; a workflow locked a second time in the batch, by a side effect of another
    workflow's update, raises FusedConflict: the batch is run again call by call).
    Whatever the services wrote themselves (logs, listeners' rows, a rare
    DELETE) went to the database at once, inside the same transaction."""

    __slots__ = ("prefetched", "locked", "inserts", "updates", "workflow_updates", "rows", "deletes",
                 "savepoint_rolled_back")

    def __init__(self):
        self.prefetched: dict[str, tuple | None] = {}
        self.locked: set[str] = set()  # every workflow a service of the batch locked
        # a savepoint rolled back inside the batch: writes held inside it would survive
        self.savepoint_rolled_back = False
        self.rows: dict[tuple[str, tuple[str, ...]], list] = {}  # ``insert_rows``: new executions, audit rows
        self.inserts: list[list] = []  # new tasks
        self.updates: dict[str, list[list]] = {}
        self.workflow_updates: dict[str, list[list]] = {}
        self.deletes: dict[str, set[str]] = {}  # ``delete_for_workflow``: table -> workflow ids

    def take(self, workflow_id: str) -> WorkflowState | None:
        """The prefetched workflow (locked by ``fused``), as ``lock_workflow`` reads it."""
        got = self.prefetched.pop(workflow_id)
        if got is None:
            return None
        row, task_rows = got
        wf = _workflow_from_row(row[:-1])
        wf.tasks = TaskList([task_from_row(r) for r in task_rows], None)
        if any(t.task_type == "SUB_WORKFLOW" for t in wf.tasks):
            with sql_cursor() as cursor:
                _attach_sub_workflows(wf, cursor)
        return wf

    def flush(self) -> None:
        """Send what the services held, one statement per table or shape: the rows of
        ``insert_rows`` (new executions, audit rows; one COPY per table), new tasks (COPY),
        the task UPDATEs (StaleState when one of them changed no row: the caller rolls the
        whole batch back) and the workflow UPDATEs (one pipelined ``executemany`` per
        shape), the DELETEs of ``delete_for_workflow``, the history events, then the queue
        notifications. FusedConflict, nothing sent, when a savepoint was rolled back inside
        the batch (a service that failed and whose caller went on: the writes it held are
        not undone by the rollback)."""
        if self.savepoint_rolled_back:
            raise FusedConflict("a savepoint was rolled back inside the batch")
        rows, self.rows = self.rows, {}
        inserts, self.inserts = self.inserts, []
        updates, self.updates = self.updates, {}
        workflow_updates, self.workflow_updates = self.workflow_updates, {}
        deletes, self.deletes = self.deletes, {}
        for (table, columns), values in rows.items():  # executions before their tasks
            _write_rows(table, columns, values)
        if inserts:
            _insert_task_rows(inserts)
        with sql_cursor() as cursor:
            for sql, values in updates.items():
                cursor.executemany(sql, values)
                if cursor.rowcount != len(values):
                    raise StaleState(f"{len(values) - cursor.rowcount} of {len(values)} task updates")
            for sql, values in workflow_updates.items():
                cursor.executemany(sql, values)
            for table, ids in deletes.items():
                cursor.execute(f"DELETE FROM {table} WHERE workflow_id = ANY(%s)", [sorted(ids)])
            history.write_deferred(cursor)
        notify.publish_held()


class _Fused(threading.local):
    def __init__(self):
        self.batch: FusedBatch | None = None


_fused = _Fused()


def fusable() -> bool:
    """Whether ``fused`` can run on this connection (PostgreSQL)."""
    return connection.vendor == "postgresql"


@contextlib.contextmanager
def fused(workflow_ids: list[str], fresh: tuple[str, ...] | list[str] = ()):
    """``with store.fused(ids, fresh) as batch: ...; batch.flush()``: lock the distinct
    ``workflow_ids`` (``SELECT ... ORDER BY workflow_id FOR UPDATE``) and read their tasks
    (an execution of at most ``TaskList.LOAD_ALL_UP_TO`` tasks whole; a larger one reads
    its unsettled tasks when its service locks it), then hold the writes of the services
    run in the block until ``flush`` (``FusedBatch``). ``fresh``: the ids of executions
    the block's starts insert (nothing to lock; a service locking one of them before the
    flush raises FusedConflict, as it would not see the held row). Must run inside
    ``transaction.atomic()`` on PostgreSQL; leaving the block without ``flush`` drops
    the held writes (the caller rolls the transaction back). Not reentrant."""
    if _fused.batch is not None:
        raise RuntimeError("store.fused is not reentrant")
    batch = FusedBatch()
    sql = _s()
    rows, tasks = [], {}
    if workflow_ids:  # none: a batch of starts only
        with sql_cursor() as cursor:
            cursor.execute(sql["lock_many"], [list(workflow_ids)])
            rows = cursor.fetchall()
            small = [r[0] for r in rows if int(r[-1] or 0) <= TaskList.LOAD_ALL_UP_TO]
            tasks = {workflow_id: [] for workflow_id in small}
            if small:
                cursor.execute(sql["tasks_many"], [small])
                at = TASK_FIELDS.index("workflow_id")
                for r in cursor.fetchall():
                    tasks[r[at]].append(r)
    # None: no such workflow; a large execution is left out (``lock_workflow`` reads it as
    # alone: its unsettled tasks, the others when asked for; its row is locked already)
    batch.prefetched = dict.fromkeys(workflow_ids)
    batch.locked.update(fresh)
    for r in rows:
        if r[0] in tasks:
            batch.prefetched[r[0]] = (r, tasks[r[0]])
        else:
            del batch.prefetched[r[0]]
    db = connections[DEFAULT_DB_ALIAS]
    rollback = db._savepoint_rollback

    def savepoint_rollback(sid):  # this thread's connection only, for the batch's time
        batch.savepoint_rolled_back = True
        return rollback(sid)

    with history.deferring(), notify.holding_publications():
        _fused.batch = batch
        db._savepoint_rollback = savepoint_rollback
        try:
            yield batch
        finally:
            _fused.batch = None
            del db._savepoint_rollback  # the class's own again


def fusing() -> bool:
    """Whether this thread is inside ``fused``: a service must not retry there (its
    earlier attempt's writes are held), the batch is rolled back and run again instead."""
    return _fused.batch is not None


def workflow_task_of(task: TaskState, definition: dict | None = None) -> dict:
    """The WorkflowTask ``task`` was made from: the one it stores (a dynamic task's, or
    one that differs from its definition), else its entry in ``definition`` (the
    execution's definition snapshot; read with one query when not given), else ``{}``.
    ``run_async`` reads settings such as ``asyncComplete`` from it, and the secrets a task
    may be given are the ones its ``inputParameters`` write (``secrets.template_names``)."""
    from apps.engine.blueprint import Blueprint
    from apps.engine.models import WorkflowExecution

    if task.workflow_task:
        return task.workflow_task
    if definition is None:
        definition = (WorkflowExecution.objects.filter(pk=task.workflow_id)
                      .values_list("definition", flat=True).first())
    if not isinstance(definition, dict):
        return {}
    return Blueprint(definition).get(params.definition_ref(task)) or {}
