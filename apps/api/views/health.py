"""``GET /health`` (and ``/api/health``): liveness, always healthy as Conductor's
HealthController answers. ``GET /health/ready`` (and ``/api/health/ready``): readiness
of this server process, in the same body shape::

    {"healthy": bool,
     "healthResults": [{"name": "database"|"broker", "healthy": bool, "details": {...}}],
     "suppressedHealthResults": [{"name": "cluster", "healthy": bool, "details": {...}}]}

``database`` runs ``SELECT 1``; ``broker`` pings the django-q2 broker (Redis, or the
database broker's table). Either failing answers 503, so a load balancer or Kubernetes
stops sending traffic to this process. ``cluster`` says whether a cluster's sweeper
ticked within ``HEALTH_CLUSTER_STALE_SECONDS`` (its lease, renewed every tick): it is reported
but suppressed (never makes the answer 503), since the API keeps serving workers while
the clusters restart; alert on it instead (``deploy/alerts.yml``).

``GET /api/version``: the server's version as ``text/plain``, as Conductor's
VersionResource answers (the SDKs' version clients read it; a read like any other, so
behind the API key when auth is on).
"""
from __future__ import annotations

from django.conf import settings
from django.db import connection
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.api.views.base import ConductorApi, text
from apps.core.clock import now_ms



def server_version() -> str:
    """This server's package version (``conductor-web`` in pyproject.toml), ``UNKNOWN``
    when it is not installed as a package."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("conductor-web")
    except PackageNotFoundError:
        return "UNKNOWN"


class VersionApi(ConductorApi):
    """``GET /version`` -> ``text/plain`` version string (Conductor's ``VersionResource``)."""

    @extend_schema(operation_id="getVersion", tags=["version-resource"], summary="Get the server's version",
                   responses={(200, "text/plain"): OpenApiTypes.STR})
    def get(self, request):
        return text(server_version())


class HealthApi(ConductorApi):
    def get(self, request):
        return Response({"healthResults": [], "suppressedHealthResults": [], "healthy": True})


def _check(name: str, fn) -> dict:
    try:
        details = fn() or {}
        return {"name": name, "healthy": True, "details": details}
    except Exception as exc:  # noqa: BLE001 - the probe reports what failed
        return {"name": name, "healthy": False, "details": {"error": f"{type(exc).__name__}: {exc}"[:300]}}


def _database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"vendor": connection.vendor}


def _broker() -> dict:
    from django_q.brokers import get_broker

    broker = get_broker()
    if not broker.ping():
        raise ConnectionError("the broker did not answer")
    return {"broker": type(broker).__name__}


def _cluster() -> dict:
    from apps.engine.cluster import LEASE_NAME
    from apps.engine.models import SweeperLease

    expires = SweeperLease.objects.filter(name=LEASE_NAME).values_list("expires_at", flat=True).first()
    if expires is None:
        raise LookupError("no cluster's sweeper has run yet")
    age = max(0.0, (now_ms() - (expires - settings.CONDUCTOR["SWEEPER_LEASE_MS"])) / 1000)
    if age > settings.CONDUCTOR["HEALTH_CLUSTER_STALE_SECONDS"]:
        raise TimeoutError(f"the sweeper last ticked {age:.0f} s ago")
    return {"sweeperLastRunSecondsAgo": round(age, 1)}


class ReadyApi(ConductorApi):
    def get(self, request):
        results = [_check("database", _database), _check("broker", _broker)]
        suppressed = [_check("cluster", _cluster)]
        healthy = all(r["healthy"] for r in results)
        return Response({"healthy": healthy, "healthResults": results, "suppressedHealthResults": suppressed},
                        status=200 if healthy else 503)
