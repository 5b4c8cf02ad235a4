"""WorkflowDef/TaskDef validation (apps.metadata.validation) with Conductor's
bean-validation messages (docs/conductor-notes.md §1.1, §2)."""
from __future__ import annotations

from apps.metadata.validation import validate_task_def, validate_workflow_def
from tests.factories import simple_task, task_def, workflow_def


def messages(errors):
    return [e["message"] for e in errors]


def test_a_valid_definition_has_no_errors():
    assert validate_workflow_def(workflow_def("ok", [simple_task("t1", "a"), simple_task("t1", "b")])) == []


def test_empty_name():
    for name in ("", "   ", None):
        errors = validate_workflow_def(workflow_def(name, [simple_task("t1")]), "validateWorkflowDef.arg0")
        assert "WorkflowDef name cannot be null or empty" in messages(errors)
        assert any(e["path"] == "validateWorkflowDef.arg0.name" for e in errors)


def test_missing_name_key():
    d = workflow_def("x", [simple_task("t1")])
    del d["name"]
    assert "WorkflowDef name cannot be null or empty" in messages(validate_workflow_def(d))


def test_empty_tasks():
    errors = validate_workflow_def(workflow_def("w", []), "validateWorkflowDef.arg0")
    assert messages(errors) == ["WorkflowTask list cannot be empty"]
    assert errors[0]["path"] == "validateWorkflowDef.arg0.tasks"


def test_missing_tasks():
    d = workflow_def("w", [])
    del d["tasks"]
    assert messages(validate_workflow_def(d)) == ["WorkflowTask list cannot be empty"]


def test_schema_version_must_be_two():
    for version in (1, 3):
        errors = validate_workflow_def(workflow_def("w", [simple_task("t1")], schemaVersion=version))
        assert messages(errors) == ["workflowDef schemaVersion: 2 is only supported"]


def test_absent_schema_version_is_fine():
    d = workflow_def("w", [simple_task("t1")])
    del d["schemaVersion"]
    assert validate_workflow_def(d) == []


def test_duplicate_task_reference_name():
    d = workflow_def("dup_wf", [simple_task("t1", "same"), simple_task("t2", "same")])
    assert messages(validate_workflow_def(d)) == [
        "taskReferenceName: same should be unique across tasks for a given workflowDefinition: dup_wf"]


def test_several_errors_are_all_reported():
    errors = validate_workflow_def({"name": "", "tasks": [], "schemaVersion": 1})
    assert set(messages(errors)) == {"WorkflowDef name cannot be null or empty", "WorkflowTask list cannot be empty",
                                     "workflowDef schemaVersion: 2 is only supported"}


def test_task_def_response_timeout_longer_than_timeout():
    errors = validate_task_def(task_def("slow", timeoutSeconds=10, responseTimeoutSeconds=20))
    assert messages(errors) == ["TaskDef: slow responseTimeoutSeconds: 20 must be less than timeoutSeconds: 10"]


def test_task_def_response_timeout_equal_to_timeout_is_fine():
    assert validate_task_def(task_def("t", timeoutSeconds=10, responseTimeoutSeconds=10)) == []


def test_task_def_timeout_zero_means_no_timeout():
    assert validate_task_def(task_def("t", timeoutSeconds=0, responseTimeoutSeconds=3600)) == []


def test_task_def_response_timeout_zero_is_accepted():
    assert validate_task_def(task_def("t", timeoutSeconds=30, responseTimeoutSeconds=0)) == []
    assert validate_task_def(task_def("t", timeoutSeconds=0, responseTimeoutSeconds=0)) == []


def test_task_def_defaults_response_timeout_against_a_short_timeout():
    """responseTimeoutSeconds defaults to 3600, which is more than a 60 s timeout."""
    d = {"name": "t", "timeoutSeconds": 60}
    assert messages(validate_task_def(d)) == [
        "TaskDef: t responseTimeoutSeconds: 3600 must be less than timeoutSeconds: 60"]


def test_task_def_name_required():
    assert "TaskDef name cannot be null or empty" in messages(validate_task_def({"name": ""}))
    assert "TaskDef name cannot be null or empty" in messages(validate_task_def({}))
