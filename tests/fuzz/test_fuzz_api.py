"""Fuzzing the API with Conductor's own OpenAPI description (schemathesis): no generated
request, valid or not, gets a 5xx (issue #10).

``apps/api/conductor-openapi.json`` is Conductor's description of its REST API (86
operations, with its ``x-fuzz-patch`` corrections; /api-docs describes our operations
from it, and ``test_fuzz_own_schema`` fuzzes that document). Every operation gets
``FUZZ_EXAMPLES`` generated requests (default 15; bounded so the run stays short), sent
in-process to Django's WSGI application inside the test's transaction. Marked ``fuzz``:
``pytest -m fuzz`` runs it alone, ``FUZZ_EXAMPLES=200 pytest -m fuzz`` runs it harder.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fuzz.conftest import bounded, wsgi_schema

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "apps" / "api" / "conductor-openapi.json"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))


schema = wsgi_schema(json.loads(SCHEMA_PATH.read_text()))


@pytest.mark.fuzz
@schema.parametrize()
@bounded(EXAMPLES)
def test_no_server_error(case, in_test_transaction):
    response = case.call()
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} answered {response.status_code}: {response.text[:500]}\n"
        f"query={case.query} body={str(case.body)[:500]}")
