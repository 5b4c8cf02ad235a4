"""``GET /metrics`` (and Conductor's ``/actuator/prometheus``): Prometheus exposition of
``apps.engine.metrics`` (text format 0.0.4, or OpenMetrics when asked via ``Accept``)."""
from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET

from apps.engine import metrics


@require_GET
def metrics_view(request):
    """Scrape endpoint: gauges, counters and histograms computed from the database."""
    body, content_type = metrics.exposition(request.headers.get("Accept"))
    return HttpResponse(body, content_type=content_type)
