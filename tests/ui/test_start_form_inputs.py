"""The start form of a definition without inputParameters (#32): it offers the workflow
inputs the definition's tasks read (``${workflow.input.x}``), and with none of those an
empty JSON editor with an example, never a hint about "fields above" that are not there."""
from __future__ import annotations

import re

from apps.engine.models import WorkflowExecution
from apps.metadata import services
from apps.ui.selectors import workflow_input_references
from tests.factories import simple_task, task_def, unique, workflow_def


def register(name: str, tasks: list[dict], **extra) -> str:
    services.task_defs_register(task_defs=[task_def(t["name"]) for t in tasks if t.get("type") == "SIMPLE"])
    services.workflow_def_register(workflow_def=workflow_def(name, tasks, **extra), overwrite=True)
    return name


def fields(page: str) -> list[str]:
    return re.findall(r'name="input\.([^"]+)"', page)


def test_the_inputs_tasks_read_are_offered_when_none_are_declared(operator_client):
    name = unique("undeclared")
    register(name, [
        simple_task(f"{name}_fetch", "fetch", {"order_id": "${workflow.input.order_id}"}),
        simple_task(f"{name}_ship", "ship", {"order_id": "${workflow.input.order_id}",
                                             "address": {"line": "${workflow.input.address.line1}"},
                                             "note": "for ${workflow.input.customer} by ${fetch.output.x}"}),
    ])
    page = operator_client.get("/start/", {"name": name}).content.decode()
    assert fields(page) == ["order_id", "address", "customer"]
    assert 'id="read-inputs-hint"' in page and "declares no inputParameters; these are the workflow inputs" in page
    resp = operator_client.post("/start/", {"name": name, "version": "1", "input.order_id": "ORD-9",
                                            "input.customer": "", "input.address": '{"line1": "1 Main St"}'})
    assert resp.status_code == 302, resp.content.decode()[-800:]
    wf = WorkflowExecution.objects.get(pk=resp["Location"].rsplit("/", 1)[1])
    assert wf.input == {"order_id": "ORD-9", "address": {"line1": "1 Main St"}}


def test_declared_input_parameters_win_over_the_references(operator_client):
    name = unique("declared")
    register(name, [simple_task(f"{name}_a", "a", {"v": "${workflow.input.other}"})], inputParameters=["wanted"])
    page = operator_client.get("/start/", {"name": name}).content.decode()
    assert fields(page) == ["wanted"] and 'id="read-inputs-hint"' not in page


def test_nothing_declared_nor_read_gives_a_json_editor_with_an_example(operator_client):
    name = unique("inputless")
    register(name, [simple_task(f"{name}_a", "a", {"fixed": 1})])
    page = operator_client.get("/start/", {"name": name}).content.decode()
    assert fields(page) == [] and 'id="no-inputs-hint"' in page
    assert "fields above" not in page
    assert re.search(r'<textarea name="input_json"[^>]*placeholder=\'\{"orderId"', page)


def test_references_are_found_at_any_depth_in_order_of_first_appearance():
    definition = {"name": "w", "inputParameters": ["ignored"], "tasks": [
        {"type": "SWITCH", "expression": "${workflow.input.kind}", "decisionCases": {
            "a": [{"inputParameters": {"x": ["${workflow.input.alpha}", {"y": "${ workflow.input.beta.deep }"}]}}]},
         "defaultCase": [{"inputParameters": {"x": "${workflow.input.kind}"}}]},
        {"type": "DO_WHILE", "loopCondition": "$.i < ${workflow.input.limit}", "loopOver": []},
    ], "outputParameters": {"o": "${workflow.input.out_key}", "not": "${workflow.output.x} $workflow.input.no"}}
    assert workflow_input_references(definition) == ["kind", "alpha", "beta", "limit", "out_key"]
