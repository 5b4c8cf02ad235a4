"""Every API write lands in the audit log (``apps.ui.models.AuditLog``, shown at
``/audit/`` and in the admin) with the application that made it.

One row per write call once it is answered: ``username`` is ``app:<application>`` (the
access key's application, ``apps.api.auth.Principal``) or ``anonymous`` when API
authentication is off; ``action`` is ``api:<METHOD> <route>`` (e.g. ``api:POST
/api/workflow``, ``api:DELETE /api/metadata/taskdefs/{name}``), ``target`` the path,
``params`` the query parameters and the key id, ``ok`` whether the answer was below 400
and ``message`` the status code (with Conductor's error message on a refusal).

Writes are every call but GET/HEAD/OPTIONS, plus the GETs that act (the scheduler's
pause/resume and admin switches). Polls are reads of a queue and are not recorded. A
worker's task results and log lines (the calls only the ``worker`` role needs) are the
data plane, several per second per worker, and are already recorded on the task
(``workerId``, ``updateTime``, its logs): they are audited only with
``CONDUCTOR_AUDIT_WORKER_WRITES=on``.

The row is as durable as the change it records: ``AuditedCall`` inserts it inside the
transaction of the call's first write (so a crash keeps both or neither), as a success;
``record_api_write`` corrects it once the call is answered with another status, or writes
it then when the call changed nothing (that last kind commits on PostgreSQL without
waiting for the WAL flush: nothing it records can be lost with it).
"""
from __future__ import annotations

import logging
import re
from functools import lru_cache

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.engine.store import insert_rows, sql_cursor

log = logging.getLogger(__name__)
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_NOT_AUDITED = frozenset({"/api/token"})


def is_audited(method: str, path: str) -> bool:
    """Whether ``method path`` (path with ``/api``) is a write the audit log records."""
    from apps.api.auth import required_role
    from apps.api.models import ROLE_READ_ONLY, ROLE_WORKER

    if not path.startswith("/api/") or path in _NOT_AUDITED or path.startswith("/api/tasks/poll"):
        return False
    needed = required_role(method, path)
    if method in _READS and needed == ROLE_READ_ONLY:
        return False
    if needed == ROLE_WORKER:
        return bool(settings.CONDUCTOR.get("AUDIT_WORKER_WRITES", False))
    return True


# the first statement of a call that changes something: where its audit row goes in
_WRITE = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


def _row_fields(principal, method: str, path: str, route: str | None, query: dict, status: int,
                message: str = "") -> dict:
    params = {k: (v[0] if len(v) == 1 else v) for k, v in query.items()}
    if principal is not None:
        params["keyId"] = principal.key_id
    return {"user": None, "username": f"app:{principal.name}"[:150] if principal is not None else "anonymous",
            "action": f"api:{method} {route or path}"[:64], "target": path[:255], "params": params,
            "ok": status < 400, "message": (f"{status} {message}".strip())[:2000]}


@lru_cache(maxsize=4)
def _insert_statement(vendor: str) -> tuple[str, tuple]:
    """``INSERT INTO <AuditLog's table> (<its columns but the auto pk>) VALUES (...)
    RETURNING <pk>`` and the fields of its values, in order: built once per vendor."""
    from apps.ui.models import AuditLog

    table, pk_column, fields = AuditLog.insert_layout()
    quote = connection.ops.quote_name
    return (f"INSERT INTO {quote(table)} ({', '.join(quote(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))}) RETURNING {quote(pk_column)}", fields)


def _insert_row(db, row: dict) -> int:
    """Insert the audit row ``row`` (``_row_fields``: values by field name) on ``db`` (this
    thread's default connection, the one ``sql_cursor`` writes on, in its current
    transaction) with one hand-written statement (``_insert_statement``; prepared on
    PostgreSQL by the engine's cursor) instead of the ORM's ``create`` (a model instance
    and a compiled query per row), as ``create`` would write it: ``auto_now``/``auto_now_add`` fields get the current time, fields not
    in ``row`` their default, each value converted by its field (``get_db_prep_save``:
    JSON and datetime columns as the vendor stores them). Returns the row's id."""
    sql, fields = _insert_statement(db.vendor)
    values = _values(fields, row, db)
    with transaction.mark_for_rollback_on_error(), sql_cursor() as cursor:
        cursor.execute(sql, values)
        return cursor.fetchone()[0]


def record_with_change(principal, method: str, path: str) -> None:
    """The audit row of a write call that changes something in the current transaction,
    as a success (``200``): written with the change (inside a fused batch held for its
    flush, ``store.insert_rows``), so a crash keeps both or neither; rolled back with it
    when the call fails (its caller then records the refusal with ``record_api_write``
    of a fresh ``AuditedCall``). The group-committed start of ``apps.api.fastpath``, whose
    answer is the success once its transaction commits."""
    table, columns, fields = _copy_layout(connection.vendor)
    insert_rows(table, columns, [_values(fields, _row_fields(principal, method, path, None, {}, 200), connection)])


@lru_cache(maxsize=4)
def _copy_layout(vendor: str) -> tuple[str, tuple[str, ...], tuple]:
    """AuditLog's quoted table, quoted columns (all but the auto pk) and their fields, for
    ``store.insert_rows``: built once per vendor."""
    from apps.ui.models import AuditLog

    table, _pk, fields = AuditLog.insert_layout()
    quote = connection.ops.quote_name
    return quote(table), tuple(quote(f.column) for f in fields), fields


def _values(fields: tuple, row: dict, db) -> list:
    """The values of ``fields`` for the audit row ``row`` (``_row_fields``), as ``create``
    would write them on ``db``: ``auto_now``/``auto_now_add`` fields the current time,
    fields not in ``row`` their default, each converted by its field (``get_db_prep_save``)."""
    now = timezone.now()
    return [f.get_db_prep_save(now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
                               else row[f.name] if f.name in row else f.get_default(), db)
            for f in fields]


class AuditedCall:
    """The audit row of one API write, written in the transaction of the change it records.

    Used as ``with AuditedCall(...) as call: <the view>`` then ``record_api_write(call, ...)``.
    While the view runs, a database execute wrapper (``connection.execute_wrapper``, this
    thread's connection only) inserts the row (``_insert_row``, on a cursor of that
    connection) just before the call's first INSERT, UPDATE or DELETE, inside the same
    transaction: committed with the change (at the change's own durability), or rolled
    back with it. It is written as a success (``200``); a call that ends otherwise has it
    corrected once answered. ``route`` is a callable giving the URL pattern (known once
    the URL is resolved)."""

    def __init__(self, principal, method: str, path: str, query: dict, route=None):
        self.principal, self.method, self.path, self.query = principal, method, path, query
        self.route = route or (lambda: None)
        self.row_id: int | None = None
        self._committed = False
        self._transaction = None  # the outermost atomic block the row was written in
        self._writing = False
        self._wrapping = None

    def __enter__(self) -> "AuditedCall":
        self._wrapping = connection.execute_wrapper(self)
        self._wrapping.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._wrapping.__exit__(*exc)

    def _mark_committed(self) -> None:
        self._committed = True

    @property
    def committed(self) -> bool:
        """Whether the row was written and its transaction has committed."""
        return self.row_id is not None and self._committed

    def _needs_row(self) -> bool:
        if self.row_id is None:
            return True
        # written in a transaction that was rolled back (a retried service): again, here
        outer = connection.atomic_blocks[0] if connection.atomic_blocks else None
        return not self._committed and outer is not self._transaction

    def __call__(self, execute, sql, params, many, context):
        if not self._writing and _WRITE.match(sql) and self._needs_row():
            self._writing = True  # the row's own INSERT passes through this wrapper as is
            try:
                self.row_id = _insert_row(context["connection"], _row_fields(
                    self.principal, self.method, self.path, self.route(), self.query, 200))
                self._transaction = connection.atomic_blocks[0] if connection.atomic_blocks else None
                self._committed = self._transaction is None  # autocommit: committed already
                if not self._committed:
                    transaction.on_commit(self._mark_committed)
            finally:
                self._writing = False
        return execute(sql, params, many, context)


def record_api_write(call: AuditedCall, status: int, message: str = "") -> None:
    """Finish the audit row of one answered API write (see the module doc and
    ``AuditedCall``): the row written with the change gets the answer's status and
    message when they are not the success it was written with; a call that wrote nothing
    (a refusal, a no-op), or whose row was rolled back with its change, gets its row now.
    That row commits on PostgreSQL without waiting for the WAL flush (there is no change
    it must be as durable as). Never raises: a failure to audit is logged."""
    from apps.ui.models import AuditLog

    if call.committed and status == 200 and not message:
        return  # the common case: written as it is, with the change
    fields = _row_fields(call.principal, call.method, call.path, call.route(), call.query, status, message)
    own_commit = not connection.in_atomic_block
    try:
        with transaction.atomic():
            if own_commit and connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL synchronous_commit = off")
            row = AuditLog.objects.filter(pk=call.row_id) if call.row_id is not None else None
            # committed with the change, or still in a transaction around this call
            if row is not None and (call.committed or row.exists()):
                if status != 200 or message:
                    row.update(ok=fields["ok"], message=fields["message"])
                return
            AuditLog.objects.create(**fields)
    except Exception:  # noqa: BLE001 - the call was answered; a failure to audit is logged
        log.exception("could not audit %s %s", call.method, call.path)


def route_of(request) -> str | None:
    """The URL pattern a Django request matched, as ``/api/workflow/{name_or_id}``."""
    match = getattr(request, "resolver_match", None)
    if match is None or not match.route:
        return None
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", match.route)
