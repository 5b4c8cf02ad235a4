"""``/metrics`` gauges of the broker outbox (registered on the engine's registry by
``BrokersConfig.ready``), read from the database at scrape time like the engine's:

* ``event_outbox_pending{broker,queue}``: messages written but not yet accepted by the
  broker (a broker outage shows here);
* ``event_outbox_oldest_pending_seconds{broker,queue}``: age of the oldest of them.
"""
from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from apps.core.clock import now_ms


class OutboxCollector(Collector):
    """The prometheus-client collector of the outbox backlog (module docstring)."""

    def collect(self):
        from apps.brokers.outbox import backlog

        pending = GaugeMetricFamily("event_outbox_pending", "Broker messages waiting in the outbox",
                                    labels=["broker", "queue"])
        oldest = GaugeMetricFamily("event_outbox_oldest_pending_seconds",
                                   "Age of the oldest broker message waiting in the outbox", labels=["broker", "queue"])
        now = now_ms()
        for row in backlog():
            pending.add_metric([row["broker"], row["event"]], row["pending"])
            oldest.add_metric([row["broker"], row["event"]], max(0.0, (now - row["oldest"]) / 1000))
        yield pending
        yield oldest
