"""Top-level routes: Conductor's REST API under /api, admin, health, operator pages."""
from django.contrib import admin
from django.urls import include, path

from apps.api.views.health import HealthApi

urlpatterns = [
    path("api/", include("apps.api.urls")),
    path("health", HealthApi.as_view()),
    path("admin/", admin.site.urls),
    path("", include("apps.ui.urls")),
]
