"""The engine's pure layer, tested as plain Python: the decider, the task types, parameter
resolution, retries, evaluators, status sets, in-process notifications (``sim.py`` drives
the decider in memory for the operator tests).

No database here: a test that asks for one (a ``db``/``transactional_db`` fixture, the
``django_db`` mark, the API client) fails, and any ORM query is refused by pytest-django,
which blocks the database for tests without the mark. What needs rows belongs in
``tests/engine/`` (services, both databases), ``tests/api/`` or ``tests/e2e/``.
"""
from __future__ import annotations

import pytest

DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
                               "live_server", "api", "client", "admin_client"})


@pytest.fixture(autouse=True)
def _no_database(request):
    """Fail a pure test that asks for the database."""
    asked = sorted(DATABASE_FIXTURES & set(request.fixturenames))
    if asked or request.node.get_closest_marker("django_db"):
        pytest.fail(f"a pure engine test may not use the database (asked for {asked or 'django_db'}): "
                    "move it to tests/engine/ or tests/api/")
