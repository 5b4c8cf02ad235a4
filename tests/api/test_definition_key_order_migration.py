"""metadata 0003 (``definition`` becomes ``json`` on PostgreSQL, #32), forwards and
backwards on the test database (SQLite and PostgreSQL): rows stored before keep their
content, and rows written after it keep their key order."""
from __future__ import annotations

import pytest
from django.db import connection

from tests.support.migrations import migrate, migrate_to_latest

BEFORE = [("metadata", "0002_event_handlers")]
AFTER = [("metadata", "0003_definitions_keep_key_order")]
TABLES = ("metadata_task_def", "metadata_workflow_def", "metadata_event_handler")


@pytest.fixture
def at_0002(transactional_db):
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def test_0003_keeps_stored_definitions_and_makes_new_ones_keep_their_order(at_0002):
    old = {"name": "m_task", "retryCount": 2, "inputTemplate": {"b": 1}}
    at_0002.get_model("metadata", "TaskDef").objects.create(name="m_task", definition=old, create_time=1,
                                                            update_time=1)
    at_0002.get_model("metadata", "WorkflowDef").objects.create(name="m_wf", version=1, definition={"name": "m_wf"},
                                                                create_time=1, update_time=1)
    after = migrate(AFTER)
    assert after.get_model("metadata", "TaskDef").objects.get(name="m_task").definition == old
    assert after.get_model("metadata", "WorkflowDef").objects.get(name="m_wf").definition == {"name": "m_wf"}
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT table_name, data_type FROM information_schema.columns "
                           "WHERE column_name = 'definition' AND table_name = ANY(%s)", [list(TABLES)])
            assert dict(cursor.fetchall()) == dict.fromkeys(TABLES, "json")
    written = {"name": "m_task2", "timeoutSeconds": 5, "description": "d", "retryCount": 0}
    after.get_model("metadata", "TaskDef").objects.create(name="m_task2", definition=written, create_time=1,
                                                          update_time=1)
    assert list(after.get_model("metadata", "TaskDef").objects.get(name="m_task2").definition) == list(written)

    before = migrate(BEFORE)
    assert before.get_model("metadata", "TaskDef").objects.get(name="m_task").definition == old
    assert before.get_model("metadata", "TaskDef").objects.get(name="m_task2").definition == written
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT DISTINCT data_type FROM information_schema.columns "
                           "WHERE column_name = 'definition' AND table_name = ANY(%s)", [list(TABLES)])
            assert cursor.fetchall() == [("jsonb",)]
