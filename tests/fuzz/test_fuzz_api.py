"""Fuzzing the API with Conductor's own OpenAPI description (schemathesis): no generated
request, valid or not, gets a 5xx (issue #10).

``conductor-openapi.json`` is Conductor's description of its REST API (86 operations,
copied into this folder with its ``x-fuzz-patch`` corrections). Every operation gets
``FUZZ_EXAMPLES`` generated requests (default 15; bounded so the run stays short), sent
in-process to Django's WSGI application inside the test's transaction. Marked ``fuzz``:
``pytest -m fuzz`` runs it alone, ``FUZZ_EXAMPLES=200 pytest -m fuzz`` runs it harder.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

SCHEMA_PATH = Path(__file__).with_name("conductor-openapi.json")
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))


def _schema():
    from django.core.handlers.wsgi import WSGIHandler

    raw = json.loads(SCHEMA_PATH.read_text())
    raw["servers"] = [{"url": "http://testserver"}]  # the paths carry /api
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = WSGIHandler()
    return schema


schema = _schema()


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


@pytest.mark.fuzz
@schema.parametrize()
@hypothesis_settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                     suppress_health_check=list(HealthCheck))
def test_no_server_error(case, in_test_transaction):
    response = case.call()
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} answered {response.status_code}: {response.text[:500]}\n"
        f"query={case.query} body={str(case.body)[:500]}")
