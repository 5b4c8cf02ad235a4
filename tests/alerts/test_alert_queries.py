"""Alert evaluation reads the engine's tables through their indexes only: every query an
evaluation of each condition makes on the executions or tasks table is explained and none
walks the table (SQLite: a ``SEARCH``, never a ``SCAN``; PostgreSQL, with sequential scans
discouraged so that a usable index shows: an index condition, no ``Seq Scan``). So its cost follows the rows it needs,
not the number of executions stored."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.alerts import evaluation
from apps.alerts.models import AlertRule
from tests.alerts.test_alert_rules import definition, run

TABLES = ("engine_workflow_execution", "engine_task_execution")


def plan(sql: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
        return "\n".join(str(row[-1]) for row in cursor.fetchall())


def full_scans(text: str) -> list[str]:
    """The plan's lines that walk a whole engine table: SQLite's ``SCAN`` (with or without
    an index: a ``SEARCH`` is a range), PostgreSQL's ``Seq Scan``, or an index scan with
    no index condition (the whole index read in order)."""
    bad = []
    for table in TABLES:
        if connection.vendor == "sqlite":
            bad += [line for line in text.splitlines() if f"SCAN {table}" in line]
        else:
            bad += [line for line in text.splitlines() if f"Seq Scan on {table}" in line]
            if f" on {table}" in text and "Index Cond" not in text and "Recheck Cond" not in text:
                bad.append(f"{table}: no index condition")
    return bad


@pytest.mark.django_db(transaction=False)
def test_every_condition_reads_through_indexes(api, clock):
    wf, task = definition(api)
    run(api, wf, task, "FAILED")
    run(api, wf, task, "COMPLETED")
    api.start(wf)
    common = {"webhook_url": "http://127.0.0.1:9/h", "create_time": 0, "update_time": 0}
    rules = [AlertRule.objects.create(name=f"r{i}", condition=c, workflow_name=name, threshold_seconds=1,
                                      window_seconds=60, failure_rate=0.5, **common)
             for i, (c, name) in enumerate([("FAILURE", wf), ("FAILURE_RATE", ""), ("LONG_RUN", wf),
                                            ("QUEUE_AGE", wf), ("NO_POLLER", "")])]
    clock.advance(5)
    with CaptureQueriesContext(connection) as queries:
        for rule in rules:
            evaluation.evaluate(rule, clock.ms)
    engine = [q["sql"] for q in queries.captured_queries
              if q["sql"].lstrip().upper().startswith("SELECT") and any(t in q["sql"] for t in TABLES)]
    assert len(engine) >= 7, engine  # FAILURE 2, FAILURE_RATE 1, LONG_RUN 2, QUEUE_AGE 1, NO_POLLER 1
    for sql in engine:
        assert full_scans(plan(sql)) == [], (sql, plan(sql))


def _incidents_queries(count: int) -> int:
    """The queries ``services.incidents`` makes when ``count`` incidents, each with two
    notifications, are stored (and listed)."""
    from apps.alerts import services
    from apps.alerts.models import AlertIncident, AlertNotification

    rule = AlertRule.objects.get_or_create(name="listed", defaults={"condition": "FAILURE", "create_time": 0,
                                                                     "update_time": 0, "webhook_url": "http://h/"})[0]
    while AlertIncident.objects.filter(rule=rule).count() < count:
        n = AlertIncident.objects.filter(rule=rule).count()
        incident = AlertIncident.objects.create(rule=rule, subject=f"s{n}", state="RESOLVED", opened_at=n,
                                                summary="x", details={})
        AlertNotification.objects.bulk_create([
            AlertNotification(incident=incident, event=event, channel="webhook", target="http://h/",
                              next_attempt_at=0) for event in ("OPENED", "RESOLVED")])
    with CaptureQueriesContext(connection) as queries:
        listed = services.incidents(size=100)
    assert len(listed) == count and all(len(i["notifications"]) == 2 for i in listed)
    assert [n["event"] for n in listed[0]["notifications"]] == ["OPENED", "RESOLVED"]  # in the order written
    return len(queries.captured_queries)


@pytest.mark.django_db
def test_the_incident_history_reads_the_notifications_in_one_query_not_one_per_incident():
    assert _incidents_queries(2) == _incidents_queries(6)


@pytest.mark.django_db(transaction=False)
def test_a_rule_on_every_definition_does_not_query_once_per_definition(api, clock):
    """FAILURE_RATE and LONG_RUN over every registered definition read the executions in
    one grouped query, whatever the number of definitions."""
    common = {"webhook_url": "http://127.0.0.1:9/h", "create_time": 0, "update_time": 0, "threshold_seconds": 3600,
              "window_seconds": 60, "failure_rate": 0.5}
    rules = [AlertRule.objects.create(name=f"every-{c}", condition=c, **common) for c in ("FAILURE_RATE", "LONG_RUN")]

    def engine_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            for rule in rules:
                evaluation.evaluate(rule, clock.ms)
        return sum(1 for q in queries.captured_queries if any(t in q["sql"] for t in TABLES))

    wf, task = definition(api)
    run(api, wf, task, "FAILED")
    one = engine_queries()
    for _ in range(3):
        definition(api)
    assert engine_queries() == one == 2
