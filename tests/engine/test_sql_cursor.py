"""The engine's SQL cursor (``apps.engine.store.sql_cursor``): on PostgreSQL its parameters
are bound on the server and a statement run often is prepared, in Django's transaction and
with Django's error classes (the retries and the idempotent start rely on them)."""
from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from apps.engine import store

pytestmark = pytest.mark.django_db


def test_the_cursor_runs_in_djangos_transaction_and_raises_djangos_errors():
    with transaction.atomic():
        with store.sql_cursor() as cursor:
            cursor.execute("INSERT INTO engine_poll_data (queue_name, domain, worker_id, last_poll_time) "
                           "VALUES (%s, %s, %s, %s)", ["q_cursor", "", "w", 1])
        with pytest.raises(IntegrityError), transaction.atomic():
            with store.sql_cursor() as cursor:  # the same row again: poll_data_unique
                cursor.execute("INSERT INTO engine_poll_data (queue_name, domain, worker_id, last_poll_time) "
                               "VALUES (%s, %s, %s, %s)", ["q_cursor", "", "w", 2])
        with store.sql_cursor() as cursor:
            cursor.execute("SELECT last_poll_time FROM engine_poll_data WHERE queue_name = %s", ["q_cursor"])
            assert cursor.fetchall() == [(1,)]
            cursor.execute("UPDATE engine_poll_data SET last_poll_time = %s WHERE queue_name = %s", [3, "q_cursor"])
            assert cursor.rowcount == 1
        transaction.set_rollback(True)
    with store.sql_cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM engine_poll_data WHERE queue_name = %s", ["q_cursor"])
        assert cursor.fetchone() == (0,)


def test_postgresql_binds_on_the_server_and_prepares_a_repeated_statement():
    if connection.vendor != "postgresql":
        pytest.skip("server-side binding is PostgreSQL's")
    import psycopg

    sql = "SELECT %s::text || 'x'"
    for _ in range(6):  # prepare_threshold is 5
        with store.sql_cursor() as cursor:
            cursor.execute(sql, ["a'b"])  # quoting is the server's business, not the SQL text's
            assert cursor.fetchone() == ("a'bx",)
    assert type(cursor._cursor) is psycopg.Cursor
    with connection.cursor() as django_cursor:
        django_cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                              ["%$1::text || 'x'%"])
        assert django_cursor.fetchone()[0] == 1


def test_sqlite_sends_the_driver_its_placeholders_and_djangos_recorder_still_sees_every_statement():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's cursor")
    import sqlite3

    from django.test.utils import CaptureQueriesContext

    with store.sql_cursor() as cursor:
        assert isinstance(cursor._cursor, sqlite3.Cursor)  # the driver's, not Django's wrapper
        cursor.execute("SELECT %s || '%%', 'x' LIKE 'x%%'", ["a"])
        assert cursor.fetchone() == ("a%", 1)
        cursor.execute("SELECT '%'")  # no parameters: sent as written, as Django does
        assert cursor.fetchone() == ("%",)
    with CaptureQueriesContext(connection) as captured, store.sql_cursor() as cursor:
        cursor.execute("SELECT %s + 1", [41])
        assert cursor.fetchone() == (42,)
    assert [q["sql"] for q in captured.captured_queries] == ["SELECT 41 + 1"]
