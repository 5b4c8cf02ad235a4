"""The Overview page (``/``, the UI's home) and its data (``/overview.json``): read-only,
for any user who may view executions (``ui.view_executions``); nothing on it changes state."""
from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.overview import selectors
from apps.ui.permissions import ui_context, view_required

REFRESH_SECONDS = 5  # the live refresh's period


def _params(request) -> tuple[selectors.Window, bool, list[str]]:
    window, errors = selectors.parse_window(request.GET)
    return window, request.GET.get("by_version") in ("1", "true", "on"), errors


@view_required
@require_GET
def page(request):
    """``/``: the Overview. The figures are fetched by ``static/ui/overview.js`` from
    ``overview.json`` with the same query string, and again every ``refresh`` seconds."""
    window, by_version, errors = _params(request)
    ctx = ui_context(request)
    ctx.update({"window": window, "by_version": by_version, "errors": errors, "ranges": list(selectors.RANGES),
                "overview_config": {"dataUrl": reverse("ui:overview_data"), "refreshSeconds": REFRESH_SECONDS,
                                    "executionsUrl": reverse("ui:executions")}})
    return render(request, "ui/overview.html", ctx)


@view_required
@require_GET
def data(request):
    """``/overview.json``: ``selectors.overview`` for the query string's window (``range``,
    ``from``, ``to``, ``by_version``); 400 with ``{"errors": [...]}`` for a bad window."""
    window, by_version, errors = _params(request)
    if errors:
        return JsonResponse({"errors": errors}, status=400)
    return JsonResponse(selectors.overview(window, by_version))
