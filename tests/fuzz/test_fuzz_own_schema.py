"""Fuzzing the API with its own OpenAPI document (``/api-docs``, issue #10): schemathesis
sends ``FUZZ_OWN_EXAMPLES`` generated requests per operation (default 5: the 101
operations took 9.5 minutes at 5 on a loaded 2-core machine) to Django's WSGI
application in-process, and no answer may be a 5xx or break the document (a response
whose body does not match the schema declared for its status and media type).

The document is fetched from the running application, so it is the one users get,
the fast-path operations included (in-process they are answered by the Django views
that share their code with ``apps.api.fastpath``). Marked ``fuzz`` (``make test-fuzz``).
"""
from __future__ import annotations

import json
import os

import pytest
from django.test import Client
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.fuzz.conftest import bounded, wsgi_schema

EXAMPLES = int(os.environ.get("FUZZ_OWN_EXAMPLES", "5"))


schema = wsgi_schema(json.loads(Client().get("/api-docs").content))


@pytest.mark.fuzz
@schema.parametrize()
@bounded(EXAMPLES)
def test_own_document_no_server_error_and_no_schema_break(case, in_test_transaction):
    case.call_and_validate(checks=[not_a_server_error, response_schema_conformance])
