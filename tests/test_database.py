"""The test database is the one DATABASE_URL selects, with the migrations applied."""
import os

import pytest
from django.db import connection

from apps.metadata.models import WorkflowDef


@pytest.mark.django_db
def test_database_url_selects_the_engine_and_migrations_ran():
    url = os.environ.get("DATABASE_URL", "")
    expected = "postgresql" if url.startswith(("postgres://", "postgresql://")) else "sqlite"

    assert connection.vendor == expected
    assert WorkflowDef.objects.filter(name="no such workflow").first() is None


@pytest.mark.postgres
@pytest.mark.django_db
def test_postgres_marker_runs_only_on_postgresql():
    assert connection.vendor == "postgresql"
