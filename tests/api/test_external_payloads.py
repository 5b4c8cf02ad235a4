"""External payload storage (Conductor's ExternalPayloadStorage) and GET /api/version.

``GET /api/{workflow,tasks}/externalstoragelocation`` hands out a path and a signed URI of
this server; the SDKs PUT the JSON there and send the path in place of the data, which the
engine reads back (``apps/engine/payloads.py``). The Java SDK's own large-payload path runs
end to end in tests/java (ExternalPayloadTest).
"""
from __future__ import annotations

import json
from importlib import metadata
from urllib.parse import urlsplit

import pytest

from tests.factories import simple_task, task_def, unique, workflow_def


def location(api, resource: str, operation: str, payload_type: str, path: str = "") -> dict:
    return api.ok(api.get(f"/{resource}/externalstoragelocation",
                          {"path": path, "operation": operation, "payloadType": payload_type})).json()


def relative(uri: str) -> str:
    parts = urlsplit(uri)
    return f"{parts.path}?{parts.query}"


def upload(api, loc: dict, payload) -> object:
    body = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
    return api.client.put(relative(loc["uri"]), data=body, content_type="application/json")


def stored(api, payload_type: str, payload: dict, resource: str = "workflow") -> str:
    loc = location(api, resource, "WRITE", payload_type)
    api.ok(upload(api, loc, payload))
    return loc["path"]


def test_version_is_the_servers_version_as_text(api):
    resp = api.ok(api.get("/version"))
    assert resp["Content-Type"].startswith("text/plain")
    assert resp.content.decode() == metadata.version("conductor-web")


def test_write_then_read_through_signed_uris(api):
    loc = location(api, "tasks", "WRITE", "TASK_OUTPUT", path="ignored-for-write")
    assert loc["path"].startswith("task_output/") and loc["path"].endswith(".json")
    assert loc["uri"].startswith(f"http://testserver/api/external-payloads/{loc['path']}?token=")
    api.ok(upload(api, loc, {"rows": list(range(100))}))

    read = location(api, "tasks", "READ", "TASK_OUTPUT", path=loc["path"])
    assert read["path"] == loc["path"] and read["uri"] != loc["uri"]
    got = api.client.get(relative(read["uri"]))
    assert got.status_code == 200 and got["Content-Type"] == "application/json"
    assert got.json() == {"rows": list(range(100))}


@pytest.mark.parametrize("resource,params,field", [
    ("workflow", {"operation": "DELETE", "payloadType": "WORKFLOW_INPUT"}, "operation"),
    ("workflow", {"operation": "WRITE", "payloadType": "BLOB"}, "payloadType"),
    ("workflow", {"operation": "WRITE"}, "payloadType"),
    ("workflow", {"operation": "WRITE", "payloadType": "TASK_OUTPUT"}, "payloadType"),
    ("tasks", {"operation": "READ", "payloadType": "TASK_INPUT"}, "path"),
])
def test_bad_location_requests_name_the_field(api, resource, params, field):
    body = api.refused(api.get(f"/{resource}/externalstoragelocation", params), 400)
    assert body["message"].startswith(field + ":"), body


def test_uris_only_work_for_what_they_were_signed_for(api, settings):
    write = location(api, "workflow", "WRITE", "WORKFLOW_INPUT")
    other = location(api, "workflow", "WRITE", "WORKFLOW_INPUT")
    path = urlsplit(write["uri"]).path
    assert api.client.put(path, data="{}", content_type="application/json").status_code == 403  # no token
    token = urlsplit(other["uri"]).query
    assert api.client.put(f"{path}?{token}", data="{}", content_type="application/json").status_code == 403
    assert api.client.get(relative(write["uri"])).status_code == 403  # a WRITE URI does not read
    settings.CONDUCTOR_PAYLOAD_URI_TTL_SECONDS = -1  # every signature is already expired
    body = upload(api, write, {"a": 1})
    assert body.status_code == 403 and "expired" in body.json()["message"]


def test_upload_checks(api, settings):
    settings.CONDUCTOR = {**settings.CONDUCTOR, "MAX_TASK_OUTPUT_PAYLOAD_KB": 2}  # the one task output max
    loc = location(api, "tasks", "WRITE", "TASK_OUTPUT")
    too_big = upload(api, loc, {"blob": "x" * 3000})
    assert too_big.status_code == 413
    assert "greater than the permissible limit: 2048 bytes" in too_big.json()["message"]
    assert upload(api, loc, [1, 2]).status_code == 400
    assert upload(api, loc, "not json").status_code == 400
    api.ok(upload(api, loc, {"a": 1}))
    assert upload(api, loc, {"a": 2}).status_code == 409  # written once
    missing = location(api, "tasks", "READ", "TASK_OUTPUT", path="task_output/nothing.json")
    assert api.client.get(relative(missing["uri"])).status_code == 404


@pytest.fixture
def one_task_flow(api) -> tuple[str, str]:
    name, task = unique("payload_wf"), unique("payload_task")
    api.register_task_defs(task_def(task))
    definition = workflow_def(name, [simple_task(task, "t1", {"text": "${workflow.input.text}"})])
    definition["outputParameters"] = {"out": "${t1.output.out}", "inLength": "${t1.output.inLength}"}
    api.register_workflow(definition)
    return name, task


def test_workflow_input_from_storage(api, one_task_flow):
    name, task = one_task_flow
    path = stored(api, "WORKFLOW_INPUT", {"text": "y" * 5000})
    # the Java SDK sends "input": null beside the path
    wf_id = api.ok(api.post("/workflow", {"name": name, "input": None,
                                          "externalInputPayloadStoragePath": path})).content.decode()
    assert api.workflow(wf_id)["input"] == {"text": "y" * 5000}
    polled = api.poll_one(task)
    assert polled["inputData"]["text"] == "y" * 5000

    body = api.refused(api.post("/workflow", {"name": name, "externalInputPayloadStoragePath": "workflow_input/x.json"}))
    assert body["message"].startswith("externalInputPayloadStoragePath:")


def test_task_output_from_storage(api, one_task_flow):
    name, task = one_task_flow
    wf_id = api.start(name, {"text": "abc"})
    polled = api.poll_one(task)
    path = stored(api, "TASK_OUTPUT", {"out": "z" * 4000, "inLength": 3}, resource="tasks")
    api.complete(polled, output={}, externalOutputPayloadStoragePath=path)
    wf = api.workflow(wf_id, include_tasks=True)
    assert wf["status"] == "COMPLETED", wf
    assert wf["output"] == {"out": "z" * 4000, "inLength": 3}
    assert wf["tasks"][0]["outputData"]["out"] == "z" * 4000

    missing = api.refused(api.update(polled, output={},
                                     externalOutputPayloadStoragePath="task_output/none.json"))
    assert missing["message"].startswith("externalOutputPayloadStoragePath:")


def test_task_output_above_the_max_fails_the_task_terminally(api, settings, one_task_flow):
    settings.CONDUCTOR = {**settings.CONDUCTOR, "MAX_TASK_OUTPUT_PAYLOAD_KB": 1}
    name, task = one_task_flow
    wf_id = api.start(name, {"text": "abc"})
    polled = api.poll_one(task)
    api.complete(polled, output={"out": "w" * 2000})
    wf = api.workflow(wf_id, include_tasks=True)
    [t1] = wf["tasks"]
    assert t1["status"] == "FAILED_WITH_TERMINAL_ERROR" and t1["outputData"] == {}
    assert t1["reasonForIncompletion"].startswith("The payload size: ")
    assert t1["reasonForIncompletion"].endswith("is greater than the permissible limit: 1024 bytes")
    assert wf["status"] == "FAILED"


def test_workflow_input_above_the_max_is_refused(api, settings, one_task_flow):
    settings.CONDUCTOR_PAYLOAD_THRESHOLDS_KB = {**settings.CONDUCTOR_PAYLOAD_THRESHOLDS_KB, "WORKFLOW_INPUT": (1, 1)}
    name, _task = one_task_flow
    body = api.refused(api.post("/workflow", {"name": name, "input": {"text": "v" * 2000}}))
    assert "greater than the permissible limit: 1024 bytes" in body["message"]
