"""A NUL character or a lone UTF-16 surrogate written as a JSON escape (``\\u0000``,
``\\ud800``) inside the JSON the UI takes (the start page's input fields and input JSON,
the definitions editor's text) is a 400 naming the field, as the API answers for the same
JSON (issue #10): PostgreSQL cannot store NUL in JSON, and a lone surrogate is not Unicode
text, so the escape passed the form check and then failed the save with a 500."""
from __future__ import annotations

import json

import pytest

from apps.engine.models import WorkflowExecution
from apps.metadata.models import WorkflowDef

pytestmark = pytest.mark.django_db

ESCAPES = [r"\u0000", r"\ud800"]


@pytest.mark.parametrize("field", ["input_json", "input.x"])
def test_start_page_refuses_a_number_beyond_a_double(operator_client, chain, field):
    """``1e999`` (infinity to Python) started the workflow with null, then failed the audit
    row's JSON check: a 500 after the action had happened."""
    value = '{"x": 1e999}' if field == "input_json" else "1e999"
    resp = operator_client.post("/start/", {"name": chain, "version": "1", field: value})
    assert resp.status_code == 400, (resp.status_code, resp.content[:300])
    assert "out of range" in resp.content.decode()
    assert not WorkflowExecution.objects.exists()


@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("field", ["input_json", "input.x"])
def test_start_page_refuses_bad_text_inside_json(operator_client, chain, escape, field):
    value = '{"x": "a%sb"}' % escape if field == "input_json" else '{"nested": "a%sb"}' % escape
    resp = operator_client.post("/start/", {"name": chain, "version": "1", field: value})
    assert resp.status_code == 400, (resp.status_code, resp.content[:300])
    page = resp.content.decode()
    assert "NUL character" in page or "surrogate" in page, page[:500]
    assert not WorkflowExecution.objects.exists()


@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("action", ["check", "save"])
def test_editor_refuses_bad_text_inside_the_definition(operator_client, chain, escape, action):
    v1 = WorkflowDef.objects.get(name=chain, version=1).definition
    text = json.dumps({**v1, "description": "PLACEHOLDER"}, indent=2).replace("PLACEHOLDER", f"a{escape}b")
    resp = operator_client.post(f"/definitions/{action}/workflow", json.dumps({"text": text, "mode": "new_version"}),
                                content_type="application/json")
    assert resp.status_code == 400, (resp.status_code, resp.content[:300])
    message = json.dumps(resp.json())
    assert "NUL" in message or "surrogate" in message, message
    assert WorkflowDef.objects.filter(name=chain).count() == 1


@pytest.mark.parametrize("values", [["a\u0000", "b"], ["a", "\ud800"], [2**70, "b"]])
@pytest.mark.parametrize("url,param", [("/executions/", "after"), ("/executions/", "before"), ("/audit/", "before")])
def test_a_hand_made_page_marker_the_database_cannot_compare_opens_the_first_page(operator_client, chain, url,
                                                                                   param, values):
    """Page markers are base64 JSON from the URL; one holding a NUL, a lone surrogate or an
    integer beyond 64 bits is malformed (the first page), not a 500 on PostgreSQL."""
    from apps.ui.selectors import decode_marker, encode_marker

    marker = encode_marker(values)
    assert decode_marker(marker, 2) is None
    assert decode_marker(encode_marker(["x", "y"]), 2) == ["x", "y"]
    resp = operator_client.get(url, {param: marker, "page": "2"})
    assert resp.status_code == 200, (resp.status_code, resp.content[:300])


@pytest.mark.parametrize("method", ["get", "post"])
def test_start_page_refuses_a_version_that_is_not_a_number(operator_client, chain, method):
    """``version=abc`` was taken as the latest version (and started it)."""
    resp = getattr(operator_client, method)("/start/", {"name": chain, "version": "abc"})
    assert resp.status_code == 400, (resp.status_code, resp.content[:300])
    assert "&#x27;version&#x27; must be a version number" in resp.content.decode()
    assert not WorkflowExecution.objects.exists()


def test_start_page_lists_each_schema_error_once(operator_client):
    """Two missing required properties were listed four times (each twice)."""
    from apps.metadata import services
    from tests.factories import unique, workflow_def

    name = unique("ui_schema")
    services.workflow_def_register(workflow_def=workflow_def(
        name, [{"name": "w", "taskReferenceName": "w", "type": "WAIT"}], enforceSchema=True,
        inputSchema={"name": "s", "type": "JSON", "data": {"type": "object", "required": ["a", "b"]}}))
    resp = operator_client.post("/start/", {"name": name, "version": "1", "input_json": "{}"})
    assert resp.status_code == 400
    page = resp.content.decode()
    assert page.count("input.a:") == 1 and page.count("input.b:") == 1, page
    assert not WorkflowExecution.objects.exists()
