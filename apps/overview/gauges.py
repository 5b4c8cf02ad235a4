"""The Overview's live figures that ``/metrics`` lacked, as a prometheus-client collector
registered next to ``apps.engine.metrics``' (``OverviewConfig.ready``), computed from the
database at scrape time like the others:

* ``task_pending_time{workflowName,taskType}`` (Conductor's gauge name): milliseconds
  since the oldest SCHEDULED task of that workflow and type was scheduled (Conductor sets
  it to the pending time of the task it last handed out; the oldest waiting is what the
  Overview shows as "oldest pending");
* ``event_queue_depth{queueType="conductor"}`` (Conductor's): unprocessed messages of
  the internal event queue;
* ``status_listener_pending``: status-listener notifications not delivered yet;
* ``evaluation_pending``: script and jq tasks waiting for their evaluation.

The per-interval counts and durations of the page are the increase of counters
``/metrics`` already has: ``workflow_start_success_total``, ``workflow_failure_total{status}``,
``workflow_execution_seconds``, ``task_execution_seconds{status}``,
``task_queue_wait_seconds``, with ``task_queue_depth`` and ``sweeper_due_lag_seconds``
(docs/ui.md#overview has the table).
"""
from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


class OverviewGauges(Collector):
    """The collector of the module doc."""

    def collect(self) -> Iterator[Metric]:
        from apps.core.clock import now_ms
        from apps.overview import selectors

        now = now_ms()
        pending = GaugeMetricFamily("task_pending_time", "Milliseconds the oldest SCHEDULED task has waited",
                                    labels=["workflowName", "taskType"])
        for wf_type, task_type, def_name, _n, oldest in selectors.scheduled_tasks(by_workflow=True):
            pending.add_metric([wf_type, def_name if task_type == "SIMPLE" else task_type], float(now - oldest))
        yield pending
        evaluations, listener, event_messages = selectors.backlogs()
        events = GaugeMetricFamily("event_queue_depth", "Unprocessed messages of the internal event queue",
                                   labels=["queueType"])
        events.add_metric(["conductor"], float(event_messages["n"]))
        yield events
        yield GaugeMetricFamily("status_listener_pending", "Status-listener notifications not delivered yet",
                                value=float(listener["n"]))
        yield GaugeMetricFamily("evaluation_pending", "Script and jq tasks waiting for their evaluation",
                                value=float(evaluations))

