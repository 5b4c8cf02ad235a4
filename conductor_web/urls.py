"""Top-level routes: Conductor's REST API under /api, admin, health, metrics, operator pages."""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from apps.api.views.health import HealthApi, ReadyApi
from apps.api.views.metrics import metrics_view

urlpatterns = [
    path("api/scheduler/", include("apps.scheduler.urls")),
    path("api/", include("apps.api.urls")),
    path("health", HealthApi.as_view()),
    path("health/ready", ReadyApi.as_view()),
    # Prometheus scrape endpoint (Conductor serves it at /actuator/prometheus)
    path("metrics", metrics_view),
    path("actuator/prometheus", metrics_view),
    # the OpenAPI 3 document of the API and Swagger UI over it (apps/api/openapi.py), at
    # Conductor's addresses; the UI's assets come from drf-spectacular-sidecar (local)
    path("api-docs", SpectacularJSONAPIView.as_view(), name="api-docs"),
    path("swagger-ui/index.html", SpectacularSwaggerView.as_view(url_name="api-docs"), name="swagger-ui"),
    path("admin/", admin.site.urls),
    path("schedules/", include("apps.scheduler.ui_urls")),
    path("", include("apps.ui.urls")),
]


def _not_found(request, exception=None):
    """Unknown paths under /api answer Conductor's JSON error body (the SDK reads its
    ``message``); other paths get Django's page."""
    from django.views.defaults import page_not_found

    if request.path.startswith("/api/"):
        from django.http import JsonResponse

        from apps.api.exceptions import error_body

        return JsonResponse(error_body(404, f"No endpoint {request.method} {request.path}"), status=404)
    return page_not_found(request, exception)


def _server_error(request):
    from django.views.defaults import server_error

    if request.path.startswith("/api/"):
        from django.http import JsonResponse

        from apps.api.exceptions import error_body

        return JsonResponse(error_body(500, "Internal server error"), status=500)
    return server_error(request)


handler404 = _not_found
handler500 = _server_error
