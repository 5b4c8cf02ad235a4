"""GET /api/health and GET /health answer Conductor's HealthController body."""
import pytest

HEALTHY = {"healthResults": [], "suppressedHealthResults": [], "healthy": True}


@pytest.mark.parametrize("path", ["/api/health", "/health"])
def test_health_answers_conductors_body(client, path):
    response = client.get(path, HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == HEALTHY
