"""The populated WorkflowDef of a start by name (apps.engine.definitions): built once and then
handed out while the registered WorkflowDef and the TaskDefs it used are unchanged in the
database; any change (a TaskDef updated, registered for a task that had none, deleted; a new
latest version; the version itself overwritten) is in the next start's snapshot, while
running executions keep theirs. On SQLite and PostgreSQL."""
from __future__ import annotations

import pytest

from apps.engine import definitions, executor
from apps.engine.models import WorkflowExecution
from apps.metadata import services
from tests.factories import simple_task, unique, workflow_def

pytestmark = pytest.mark.django_db


@pytest.fixture
def builds(monkeypatch):
    """How many times a populated definition was built (a cache miss)."""
    calls = []
    real = definitions.with_task_definitions

    def counted(definition, registered):
        calls.append(definition["name"])
        return real(definition, registered)

    monkeypatch.setattr(definitions, "with_task_definitions", counted)
    definitions.clear()
    return calls


def task_def(name: str, retry_count: int) -> dict:
    return {"name": name, "retryCount": retry_count, "ownerEmail": "test@example.com",
            "timeoutSeconds": 0, "responseTimeoutSeconds": 0}


def snapshot_task_def(wf_id: str, ref: str) -> dict:
    definition = WorkflowExecution.objects.get(workflow_id=wf_id).definition
    return next(t for t in definition["tasks"] if t["taskReferenceName"] == ref)["taskDefinition"]


def start(name: str, version: int | None = None) -> str:
    return executor.workflow_start(name=name, version=version, input={})


def test_a_second_start_reuses_the_populated_definition(builds):
    name, task = unique("dc_wf"), unique("dc_task")
    services.task_defs_register(task_defs=[task_def(task, 4)])
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(task, "a")]))
    first, second = start(name), start(name, 1)
    again = start(name)
    assert builds == [name, name]  # latest and version 1 are two entries; the third start hits
    for wf_id in (first, second, again):
        assert snapshot_task_def(wf_id, "a")["retryCount"] == 4


def test_a_changed_task_def_is_in_the_next_start_only(builds):
    name, task = unique("dc_wf"), unique("dc_task")
    services.task_defs_register(task_defs=[task_def(task, 1)])
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(task, "a")]))
    before = start(name)
    services.task_def_update(task_def=task_def(task, 7))
    after = start(name)
    assert snapshot_task_def(before, "a")["retryCount"] == 1
    assert snapshot_task_def(after, "a")["retryCount"] == 7
    services.task_def_delete(name=task)
    adhoc = start(name)
    assert snapshot_task_def(adhoc, "a")["retryCount"] != 7  # the ad hoc TaskDef's defaults
    assert len(builds) == 3


def test_a_task_def_registered_for_an_adhoc_task_is_used(builds):
    name, task = unique("dc_wf"), unique("dc_task")
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(task, "a")]))
    adhoc = start(name)
    services.task_defs_register(task_defs=[task_def(task, 9)])
    registered = start(name)
    assert snapshot_task_def(adhoc, "a")["retryCount"] != 9
    assert snapshot_task_def(registered, "a")["retryCount"] == 9


def test_a_new_version_or_an_overwrite_is_started(builds):
    name, a, b = unique("dc_wf"), unique("dc_a"), unique("dc_b")
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(a, "a")]))
    start(name)
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(b, "b")], version=2))
    latest = start(name)
    assert WorkflowExecution.objects.get(workflow_id=latest).workflow_version == 2
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(a, "a2")], version=2), overwrite=True)
    overwritten = start(name)
    refs = [t["taskReferenceName"] for t in WorkflowExecution.objects.get(workflow_id=overwritten).definition["tasks"]]
    assert refs == ["a2"]


def test_each_start_owns_its_copy(builds):
    name, task = unique("dc_wf"), unique("dc_task")
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(task, "a")]))
    first = definitions.registered_populated(name, None)
    first["tasks"].clear()
    assert [t["taskReferenceName"] for t in definitions.registered_populated(name, None)["tasks"]] == ["a"]
    assert definitions.registered_populated(unique("dc_none"), None) is None


def test_a_version_given_as_text_is_the_number(builds):
    """Sub-workflow and event-handler starts may carry the version as a string."""
    name, task = unique("dc_wf"), unique("dc_task")
    services.workflow_def_register(workflow_def=workflow_def(name, [simple_task(task, "a")]))
    assert definitions.registered_populated(name, "1")["name"] == name
    with pytest.raises(ValueError):
        definitions.registered_populated(name, "one")
