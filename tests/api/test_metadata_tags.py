"""Orkes's metadata tags (``/api/metadata/{workflow,task}/{name}/tags``, ``/api/metadata/tags``),
which the Java SDK's OrkesMetadataClient sends: add (POST one, PUT a list), list, delete."""
from __future__ import annotations

from tests.factories import simple_task, task_def, unique, workflow_def


def tag(key, value):
    return {"key": key, "type": "METADATA", "value": value}


def test_workflow_tags(api):
    name = unique("tagged_wf")
    api.register_workflow(workflow_def(name, [simple_task("t", "t1")]))
    assert api.ok(api.get(f"/metadata/workflow/{name}/tags")).json() == []
    api.ok(api.post(f"/metadata/workflow/{name}/tags", tag("team", "payments")))
    api.ok(api.put(f"/metadata/workflow/{name}/tags", [tag("tier", "gold"), tag("team", "payments")]))
    assert api.ok(api.get(f"/metadata/workflow/{name}/tags")).json() == [tag("team", "payments"), tag("tier", "gold")]
    api.ok(api.delete(f"/metadata/workflow/{name}/tags", tag("team", "payments")))
    assert api.ok(api.get(f"/metadata/workflow/{name}/tags")).json() == [tag("tier", "gold")]
    assert tag("tier", "gold") in api.ok(api.get("/metadata/tags")).json()


def test_task_tags_and_a_tag_string_delete(api):
    name = unique("tagged_task")
    api.register_task_defs(task_def(name))
    api.ok(api.put(f"/metadata/task/{name}/tags", [tag("owner", "ops"), tag("cost", 3)]))
    api.ok(api.delete(f"/metadata/task/{name}/tags", {"key": "cost", "type": "METADATA", "value": "3"}))
    assert api.ok(api.get(f"/metadata/task/{name}/tags")).json() == [tag("owner", "ops")]


def test_unknown_definitions_and_bad_bodies(api):
    assert api.refused(api.get("/metadata/workflow/nope_nope/tags"), 404)["message"].startswith("No such workflow")
    assert api.refused(api.post("/metadata/task/nope_nope/tags", tag("a", "b")), 404)
    name = unique("tagged_task")
    api.register_task_defs(task_def(name))
    assert api.refused(api.put(f"/metadata/task/{name}/tags", {"key": "a"}))["message"].startswith("tags:")
    assert api.refused(api.post(f"/metadata/task/{name}/tags", {"value": "a"}))["message"].startswith("tags:")
