"""Fixtures of the fuzz tests (schemathesis over Conductor's OpenAPI and over ours)."""
from __future__ import annotations

import pytest


def wsgi_schema(document: dict):
    """A schemathesis schema of an OpenAPI ``document`` whose calls go in-process to
    Django's WSGI application (the paths carry /api)."""
    import schemathesis
    from django.core.handlers.wsgi import WSGIHandler

    document["servers"] = [{"url": "http://testserver"}]
    schema = schemathesis.openapi.from_dict(document)
    schema.app = WSGIHandler()
    return schema


def bounded(examples: int):
    """Hypothesis settings of a fuzz test: ``examples`` requests per operation, no
    deadline, no example database, reproducible."""
    from hypothesis import HealthCheck, settings

    return settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture
def in_test_transaction(db, settings, monkeypatch):
    """Django's per-request connection closing off, so the WSGI app runs inside the
    test's transaction (as Django's test client does). Waits are cut short (a long poll
    to 50 ms, a synchronous execute or signal to 50 ms) so the run is bounded in time:
    the answers are the same, only sooner."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    from apps.engine import queue

    monkeypatch.setitem(settings.CONDUCTOR, "MAX_SYNC_WAIT_SECONDS", 0.05)
    real_poll = queue.poll

    async def short_poll(**kw):
        return await real_poll(**{**kw, "timeout_ms": min(kw.get("timeout_ms") or 0, 50)})

    monkeypatch.setattr(queue, "poll", short_poll)

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
