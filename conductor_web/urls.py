"""Top-level routes: Conductor's REST API under /api, admin, health, metrics, operator pages."""
from django.contrib import admin
from django.urls import include, path

from apps.api.views.health import HealthApi
from apps.api.views.metrics import metrics_view

urlpatterns = [
    path("api/", include("apps.api.urls")),
    path("health", HealthApi.as_view()),
    # Prometheus scrape endpoint (Conductor serves it at /actuator/prometheus)
    path("metrics", metrics_view),
    path("actuator/prometheus", metrics_view),
    path("admin/", admin.site.urls),
    path("", include("apps.ui.urls")),
]
