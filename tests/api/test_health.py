"""GET /api/health and GET /health answer Conductor's HealthController body."""
import pytest

HEALTHY = {"healthResults": [], "suppressedHealthResults": [], "healthy": True}


@pytest.mark.parametrize("path", ["/api/health", "/health"])
def test_health_answers_conductors_body(client, path):
    response = client.get(path, HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == HEALTHY


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/health/ready", "/health/ready"])
def test_ready_checks_database_and_broker_and_reports_the_cluster(client, path):
    """Ready when the database and the broker answer; the cluster's heartbeat (the
    sweeper lease) is reported but suppressed: no sweeper yet does not make it 503."""
    body = client.get(path).json()
    assert body["healthy"] is True
    assert {r["name"]: r["healthy"] for r in body["healthResults"]} == {"database": True, "broker": True}
    [cluster] = body["suppressedHealthResults"]
    assert cluster["name"] == "cluster" and cluster["healthy"] is False


@pytest.mark.django_db
def test_ready_sees_a_ticking_sweeper(client, clock):  # frozen clock: no real seconds pass (#14)
    from apps.core.clock import now_ms
    from django.conf import settings

    from apps.engine.cluster import LEASE_NAME
    from apps.engine.models import SweeperLease

    SweeperLease.acquire(LEASE_NAME, "host:1:x", settings.CONDUCTOR["SWEEPER_LEASE_MS"])
    [cluster] = client.get("/health/ready").json()["suppressedHealthResults"]
    assert cluster["healthy"] is True and cluster["details"]["sweeperLastRunSecondsAgo"] == 0
    SweeperLease.objects.filter(name=LEASE_NAME).update(expires_at=now_ms() - 60_000)
    [cluster] = client.get("/health/ready").json()["suppressedHealthResults"]
    assert cluster["healthy"] is False and "ago" in cluster["details"]["error"]


@pytest.mark.django_db
def test_not_ready_when_the_broker_is_down(client, monkeypatch):
    """A broker that cannot be reached makes the process not ready (503), naming it."""
    from django_q import brokers

    class Down:
        def ping(self):
            raise ConnectionError("Connection refused")

    monkeypatch.setattr(brokers, "get_broker", lambda *a, **k: Down())
    response = client.get("/health/ready")
    assert response.status_code == 503
    body = response.json()
    assert body["healthy"] is False
    broker = next(r for r in body["healthResults"] if r["name"] == "broker")
    assert broker["healthy"] is False and "Connection refused" in broker["details"]["error"]


@pytest.mark.django_db
def test_version_answers_the_package_version_as_text(client):
    """GET /api/version: Conductor's VersionResource, a text/plain version string."""
    from importlib.metadata import version

    response = client.get("/api/version", HTTP_ACCEPT="text/plain")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == version("conductor-web")
