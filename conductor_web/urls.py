"""Top-level routes: Conductor's REST API under /api, admin, health, metrics, operator pages."""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from apps.api.views.health import HealthApi, ReadyApi
from apps.api.views.metrics import metrics_view

urlpatterns = [
    path("api/scheduler/", include("apps.scheduler.urls")),
    path("api/", include("apps.files.urls")),
    path("api/alerts/", include("apps.alerts.urls")),
    path("api/agent/", include("apps.agents.urls")),
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
    path("alerts/", include("apps.alerts.ui_urls")),
    path("", include("apps.problems.urls")),  # before the UI's: /definitions/<name>/grid
    path("", include("apps.ui.urls")),
]


def _wants_html(request) -> bool:
    """Whether the client names HTML in its ``Accept`` header (browsers do); SDKs, the CLI
    and curl send ``application/json``, ``text/plain`` or ``*/*``."""
    return any(str(t.main_type) in ("text", "application") and str(t.sub_type) in ("html", "xhtml+xml")
               for t in request.accepted_types)


def _not_found(request, exception=None):
    """404 for a path no route matches, or a view's ``Http404``.

    * Under /api: Conductor's JSON error body (the SDK reads its ``message``).
    * Elsewhere, a path no route matches, for a client that does not ask for HTML (an SDK
      or the CLI given the server's address without ``/api``): the same JSON body, saying
      the API is under /api and where this path would be.
    * Elsewhere, for a browser: ``404.html`` with the page's usual context (the nav the
      user's permissions allow) and a sentence, never an exception's class name.
    """
    from django.http import JsonResponse
    from django.shortcuts import render
    from django.urls import Resolver404

    from apps.api.exceptions import error_body

    if request.path.startswith("/api/"):
        return JsonResponse(error_body(404, f"No endpoint {request.method} {request.path}"), status=404)
    no_route = exception is None or isinstance(exception, Resolver404)
    if no_route and not _wants_html(request):
        api_url = request.build_absolute_uri("/api")
        message = (f"No endpoint {request.method} {request.path}: the API is under /api, so point the client "
                   f"at {api_url} (this path would be {api_url}{request.path})")
        return JsonResponse(error_body(404, message), status=404)
    detail = None
    if not no_route and exception.args \
            and isinstance(exception.args[0], str):
        detail = exception.args[0].rstrip(".")  # the view's own sentence ("No such workflow found by id: x")
    return render(request, "404.html", {"request_path": request.path, "detail": detail}, status=404)


def _server_error(request):
    from django.views.defaults import server_error

    if request.path.startswith("/api/"):
        from django.http import JsonResponse

        from apps.api.exceptions import error_body

        return JsonResponse(error_body(500, "Internal server error"), status=500)
    return server_error(request)


handler404 = _not_found
handler500 = _server_error
