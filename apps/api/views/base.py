"""Shared bits of the API views: no auth, no CSRF (the SDK sends neither), plain-text
answers where Conductor answers text."""
from __future__ import annotations

from django.http import HttpResponse
from rest_framework.views import APIView


class ConductorApi(APIView):
    """Base of every DRF view: open access, CSRF-exempt (APIView is, without
    SessionAuthentication), Conductor error bodies via the exception handler."""

    authentication_classes: list = []
    permission_classes: list = []
    # Bodies are Conductor's JSON models, not DRF serializers: /api-docs describes them
    # from Conductor's document (apps.api.openapi), or with extend_schema on the view.
    serializer_class = None


def text(value: str | None, status: int = 200) -> HttpResponse:
    """A ``text/plain`` answer (ids, as Conductor returns them)."""
    return HttpResponse(value or "", content_type="text/plain", status=status)


def empty(status: int = 200) -> HttpResponse:
    """An empty answer (Conductor's void endpoints: 200, or 204 for restart/retry)."""
    return HttpResponse(status=status)
