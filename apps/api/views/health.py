"""``GET /health`` and ``GET /api/health``: always healthy, as Conductor's HealthController."""
from rest_framework.response import Response

from apps.api.views.base import ConductorApi


class HealthApi(ConductorApi):
    def get(self, request):
        return Response({"healthResults": [], "suppressedHealthResults": [], "healthy": True})
