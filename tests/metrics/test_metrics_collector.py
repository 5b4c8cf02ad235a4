"""``GET /metrics``: Conductor's metric names and labels, values computed from the database
for a small known data set, windows counted once (``apps.engine.metrics``)."""
from __future__ import annotations

import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from apps.engine import metrics
from apps.engine.models import WorkflowExecution
from apps.metadata.models import TaskDef, WorkflowDef
from tests.factories import FakeClock
from tests.search.builders import T0, make_task, make_workflow

pytestmark = pytest.mark.django_db

NOW = T0 + 600_000  # ten minutes after the first row


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    return FakeClock(NOW).install(monkeypatch)


@pytest.fixture(autouse=True)
def fresh_collector():
    metrics.reset()
    yield
    metrics.reset()


def scrape(client) -> dict[tuple[str, tuple], float]:
    resp = client.get("/metrics")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(resp.content.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def names(samples) -> set[str]:
    return {name for name, _ in samples}


@pytest.fixture
def data(db, clock):
    """Definitions with owners plus executions in every state (see the assertions)."""
    TaskDef.objects.create(name="charge", definition={"name": "charge", "ownerApp": "payments"},
                           create_time=T0, update_time=T0)
    TaskDef.objects.create(name="idle_task", definition={"name": "idle_task"}, create_time=T0, update_time=T0)
    WorkflowDef.objects.create(name="order", version=1, definition={"name": "order", "ownerApp": "shop"},
                               create_time=T0, update_time=T0)
    WorkflowDef.objects.create(name="order", version=2, definition={"name": "order", "ownerApp": "shop2"},
                               create_time=T0, update_time=T0)
    WorkflowDef.objects.create(name="idle_wf", version=1, definition={"name": "idle_wf"}, create_time=T0,
                               update_time=T0)
    r1 = make_workflow("order", status="RUNNING", create_time=T0)
    make_workflow("order", status="RUNNING", create_time=T0 + 1_000, version=2)
    make_workflow("order", status="PAUSED", create_time=T0 + 2_000)
    make_workflow("order", status="COMPLETED", create_time=T0 + 3_000, end_time=T0 + 6_000)        # 3 s
    make_workflow("order", status="FAILED", create_time=T0 + 4_000, end_time=T0 + 5_000)
    make_workflow("shipping", status="TERMINATED", create_time=T0 + 5_000, end_time=T0 + 7_000)
    make_workflow("shipping", status="COMPLETED", create_time=T0 + 6_000, end_time=T0 + 96_000)   # 90 s
    make_task(r1, task_def_name="charge", status="SCHEDULED", scheduled_time=T0)
    make_task(r1, task_def_name="charge", status="SCHEDULED", scheduled_time=T0, queue_name="eu:charge", domain="eu")
    make_task(r1, task_def_name="charge", status="IN_PROGRESS", scheduled_time=T0, start_time=T0 + 200)
    make_task(r1, task_def_name="notify", task_type="HTTP", status="IN_PROGRESS", scheduled_time=T0,
              start_time=T0 + 10)
    make_task(r1, task_def_name="charge", status="COMPLETED", scheduled_time=T0 + 1_000, start_time=T0 + 1_200,
              end_time=T0 + 2_700)                                                                  # 1.5 s, waited 0.2 s
    make_task(r1, task_def_name="charge", status="FAILED", scheduled_time=T0 + 3_000, start_time=T0 + 3_004,
              end_time=T0 + 3_024)                                                                  # 0.02 s, waited 4 ms
    make_task(r1, task_def_name="ship", status="TIMED_OUT", scheduled_time=T0 + 4_000, start_time=T0 + 9_000,
              end_time=T0 + 69_000)                                                                 # 60 s, waited 5 s
    make_task(r1, task_def_name="inline", task_type="INLINE", status="COMPLETED", scheduled_time=T0 + 5_000,
              start_time=T0 + 5_000, end_time=T0 + 5_001)                                           # system task
    return r1


def test_gauges(client, data):
    s = scrape(client)
    # charge: two SCHEDULED (any domain), one IN_PROGRESS; owner from its TaskDef
    assert value(s, "task_queue_depth", taskType="charge", ownerApp="payments") == 2
    assert value(s, "task_in_progress", taskType="charge", ownerApp="payments") == 1
    # system tasks are labelled by type, owner "system"
    assert value(s, "task_in_progress", taskType="HTTP", ownerApp="system") == 1
    assert value(s, "task_queue_depth", taskType="HTTP", ownerApp="system") == 0
    # registered but idle definitions report 0
    assert value(s, "task_queue_depth", taskType="idle_task", ownerApp="unknown") == 0
    assert value(s, "workflow_running", workflowName="idle_wf", ownerApp="unknown") == 0
    # RUNNING and PAUSED; the owner of the latest version
    assert value(s, "workflow_running", workflowName="order", ownerApp="shop2") == 3
    assert value(s, "workflow_running", workflowName="shipping", ownerApp="unknown") is None


def test_counters(client, data):
    s = scrape(client)
    assert value(s, "workflow_start_success_total", workflowName="order", version="1", ownerApp="shop2") == 4
    assert value(s, "workflow_start_success_total", workflowName="order", version="2", ownerApp="shop2") == 1
    assert value(s, "workflow_start_success_total", workflowName="shipping", version="1", ownerApp="unknown") == 2
    assert value(s, "workflow_failure_total", workflowName="order", status="FAILED", ownerApp="shop2") == 1
    assert value(s, "workflow_failure_total", workflowName="shipping", status="TERMINATED", ownerApp="unknown") == 1
    assert value(s, "workflow_failure_total", workflowName="shipping", status="COMPLETED", ownerApp="unknown") is None
    assert value(s, "task_timeout_total", taskType="ship") == 1
    # worker tasks handed out by a poll (started): charge x3 (one still IN_PROGRESS) and ship
    assert value(s, "task_poll_total", taskType="charge") == 3
    assert value(s, "task_poll_total", taskType="ship") == 1
    assert value(s, "task_poll_total", taskType="HTTP") is None


def test_histograms(client, data):
    s = scrape(client)
    wf = dict(workflowName="shipping", ownerApp="unknown")
    assert value(s, "workflow_execution_seconds_count", **wf) == 1
    assert value(s, "workflow_execution_seconds_sum", **wf) == 90.0
    assert value(s, "workflow_execution_seconds_bucket", le="60.0", **wf) == 0
    assert value(s, "workflow_execution_seconds_bucket", le="120.0", **wf) == 1
    assert value(s, "workflow_execution_seconds_bucket", le="+Inf", **wf) == 1
    order = dict(workflowName="order", ownerApp="shop2")
    assert value(s, "workflow_execution_seconds_count", **order) == 1  # only COMPLETED ones are timed
    assert value(s, "workflow_execution_seconds_sum", **order) == 3.0

    ok = dict(taskType="charge", includeRetries="false", status="COMPLETED")
    assert value(s, "task_execution_seconds_count", **ok) == 1
    assert value(s, "task_execution_seconds_sum", **ok) == 1.5
    assert value(s, "task_execution_seconds_bucket", le="1.0", **ok) == 0
    assert value(s, "task_execution_seconds_bucket", le="2.5", **ok) == 1
    failed = dict(taskType="charge", includeRetries="false", status="FAILED")
    assert value(s, "task_execution_seconds_bucket", le="0.01", **failed) == 0
    assert value(s, "task_execution_seconds_bucket", le="0.025", **failed) == 1
    assert value(s, "task_completed_seconds_count", taskType="charge", status="COMPLETED") == 1
    assert value(s, "task_completed_seconds_sum", taskType="ship", status="TIMED_OUT") == 60.0
    assert value(s, "task_completed_seconds_count", taskType="INLINE", status="COMPLETED") == 1

    for name in ("task_queue_wait_seconds", "task_queue_wait_time_seconds"):
        assert value(s, f"{name}_count", taskType="charge") == 3
        assert value(s, f"{name}_sum", taskType="charge") == pytest.approx(0.2 + 0.2 + 0.004)
        assert value(s, f"{name}_bucket", taskType="charge", le="0.005") == 1
        assert value(s, f"{name}_bucket", taskType="charge", le="0.25") == 3
        assert value(s, f"{name}_bucket", taskType="ship", le="2.5") == 0
        assert value(s, f"{name}_bucket", taskType="ship", le="5.0") == 1


def test_every_conductor_name_is_exposed_with_its_labels(client, data):
    s = scrape(client)
    expected = {
        "task_queue_depth": {"taskType", "ownerApp"},
        "task_in_progress": {"taskType", "ownerApp"},
        "workflow_running": {"workflowName", "ownerApp"},
        "workflow_start_success_total": {"workflowName", "version", "ownerApp"},
        "workflow_failure_total": {"workflowName", "status", "ownerApp"},
        "task_poll_total": {"taskType"},
        "task_timeout_total": {"taskType"},
        "workflow_execution_seconds_count": {"workflowName", "ownerApp"},
        "task_execution_seconds_count": {"taskType", "includeRetries", "status"},
        "task_completed_seconds_count": {"taskType", "status"},
        "task_queue_wait_seconds_count": {"taskType"},
        "task_queue_wait_time_seconds_count": {"taskType"},
    }
    for name, labels in expected.items():
        label_sets = [dict(lbl) for n, lbl in s if n == name]
        assert label_sets, name
        assert all(set(lbl) == labels for lbl in label_sets), (name, label_sets)


def test_events_are_counted_once_and_removals_do_not_lower_counters(client, data, clock):
    first = scrape(client)
    again = scrape(client)
    key = ("workflow_start_success_total", (("ownerApp", "unknown"), ("version", "1"), ("workflowName", "shipping")))
    assert first[key] == again[key] == 2
    # a new execution ends now: not counted until it is older than the settle delay
    make_workflow("shipping", status="FAILED", create_time=NOW - 1_000, end_time=NOW)
    s = scrape(client)
    assert s[key] == 2
    clock.advance(seconds=settings.CONDUCTOR["METRICS_SETTLE_MS"] / 1000 + 1)
    s = scrape(client)
    assert s[key] == 3
    assert value(s, "workflow_failure_total", workflowName="shipping", status="FAILED", ownerApp="unknown") == 1
    # removing executions never lowers a counter
    WorkflowExecution.objects.filter(workflow_name="shipping").delete()
    clock.advance(seconds=30)
    s = scrape(client)
    assert s[key] == 3
    assert value(s, "workflow_execution_seconds_count", workflowName="shipping", ownerApp="unknown") == 1


def test_first_scrape_counts_only_the_lookback(client, db, clock, settings):
    settings.CONDUCTOR = {**settings.CONDUCTOR, "METRICS_LOOKBACK_SECONDS": 60}
    make_workflow("old", status="COMPLETED", create_time=NOW - 3_600_000, end_time=NOW - 3_500_000)
    make_workflow("recent", status="COMPLETED", create_time=NOW - 30_000, end_time=NOW - 20_000)
    s = scrape(client)
    assert value(s, "workflow_start_success_total", workflowName="old", version="1", ownerApp="unknown") is None
    assert value(s, "workflow_start_success_total", workflowName="recent", version="1", ownerApp="unknown") == 1
    assert value(s, "workflow_execution_seconds_sum", workflowName="recent", ownerApp="unknown") == 10.0


def test_scrape_cost_is_a_fixed_number_of_queries(client, data, clock, django_assert_num_queries):
    scrape(client)  # definition owners are now cached
    for i in range(20):
        wf = make_workflow(f"bulkload{i % 3}", status="COMPLETED", create_time=NOW - 1_000 + i, end_time=NOW)
        make_task(wf, task_def_name=f"t{i % 4}", status="COMPLETED", scheduled_time=NOW - 500, start_time=NOW - 400,
                  end_time=NOW)
    clock.advance(seconds=10)
    # 2 gauge queries + 3 operator gauges (sweeper lease, most overdue execution, broker
    # queue) + 4 window queries + 1 event outbox backlog (apps.brokers.metrics) + the
    # Overview's 4 (oldest pending task, evaluations, listener and event backlogs:
    # apps.overview.gauges), however many rows and label sets
    with django_assert_num_queries(14):
        s = scrape(client)
    assert value(s, "workflow_execution_seconds_count", workflowName="bulkload0", ownerApp="unknown") == 7


def test_actuator_alias_and_openmetrics(client, data):
    assert client.get("/actuator/prometheus").status_code == 200
    resp = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("application/openmetrics-text")
    assert resp.content.decode().rstrip().endswith("# EOF")
    assert client.post("/metrics").status_code == 405


def test_operator_signals_sweeper_and_cluster_queue(client, data, clock):
    """The sweeper's last tick (from its lease), how far behind it is, and the broker's
    queue depth."""
    from apps.engine.cluster import LEASE_NAME
    from apps.engine.models import SweeperLease

    s = scrape(client)
    assert value(s, "sweeper_last_run_age_seconds") == float("inf")
    assert value(s, "cluster_queue_depth") == 0
    SweeperLease.objects.create(name=LEASE_NAME, holder="h:1:x", expires_at=NOW + settings.CONDUCTOR["SWEEPER_LEASE_MS"] - 3_000)
    overdue = make_workflow("late", status="RUNNING", create_time=NOW - 60_000)
    WorkflowExecution.objects.filter(pk=overdue.pk).update(next_decide_at=NOW - 12_000)
    s = scrape(client)
    assert value(s, "sweeper_last_run_age_seconds") == pytest.approx(3.0)
    assert value(s, "sweeper_due_lag_seconds") == pytest.approx(12.0)
