"""WorkflowAndTaskConfigurationSpec: permissive tasks. A permissive task that fails for
good does not stop the workflow: the next tasks run, and when nothing is left the workflow
FAILS naming it (DeciderService: permissiveTasksTerminalNonSuccessful). permissive with
optional: the optional rule wins (COMPLETED_WITH_ERRORS, the workflow completes)."""
from __future__ import annotations

from tests.specs.definitions import PERMISSIVE_OPTIONAL_TASK_WF, PERMISSIVE_TASK_WF

INPUT = {"param1": "p1 value", "param2": "p2 value"}


def test_permissive_task_fails_the_workflow_only_at_its_end(conductor):
    """"Test simple workflow which has a permissive task"."""
    conductor.task_defs("task_permissive", "integration_task_2")
    conductor.workflow_defs(PERMISSIVE_TASK_WF)
    wid = conductor.start("permissive_task_wf", INPUT, correlationId="integration_test_permissive")
    assert conductor.statuses(wid) == [("task_permissive", "SCHEDULED")]
    conductor.fail("task_permissive", "NETWORK ERROR")
    conductor.decide(wid)
    assert conductor.wf(wid)["status"] == "RUNNING"
    assert conductor.statuses(wid) == [("task_permissive", "FAILED"), ("task_permissive", "SCHEDULED")]
    conductor.fail("task_permissive", "NETWORK ERROR")
    conductor.decide(wid)
    assert conductor.wf(wid)["status"] == "RUNNING"
    assert conductor.statuses(wid) == [("task_permissive", "FAILED"), ("task_permissive", "FAILED"),
                                       ("integration_task_2", "SCHEDULED")]
    conductor.decide(wid)
    conductor.complete("integration_task_2")
    wf = conductor.wf(wid)
    assert wf["status"] == "FAILED"
    assert wf["reasonForIncompletion"] == \
        f"Task {wf['tasks'][1]['taskId']} failed with status: FAILED and reason: 'NETWORK ERROR'"
    assert len(wf["tasks"]) == 3
    assert (wf["tasks"][2]["taskType"], wf["tasks"][2]["status"]) == ("integration_task_2", "COMPLETED")


def test_permissive_optional_task_ends_completed_with_errors(conductor):
    """"Test simple workflow which has a permissive optional task": task_optional has
    timeoutSeconds 5 with timeoutPolicy RETRY and retryCount 1; the second attempt is
    polled and left to time out."""
    conductor.task_defs("task_optional", timeoutSeconds=5, retryCount=1, timeoutPolicy="RETRY",
                        responseTimeoutSeconds=5)
    conductor.task_defs("integration_task_2")
    conductor.workflow_defs(PERMISSIVE_OPTIONAL_TASK_WF)
    wid = conductor.start("permissive_optional_task_wf", INPUT)
    assert conductor.statuses(wid) == [("task_optional", "SCHEDULED")]
    conductor.fail("task_optional", "NETWORK ERROR")
    conductor.decide(wid)
    assert conductor.statuses(wid) == [("task_optional", "FAILED"), ("task_optional", "SCHEDULED")]
    conductor.poll("task_optional")
    conductor.tick(5.5)
    conductor.decide(wid)
    wf = conductor.wf(wid)
    assert wf["status"] == "RUNNING"
    assert conductor.statuses(wid) == [("task_optional", "FAILED"), ("task_optional", "COMPLETED_WITH_ERRORS"),
                                       ("integration_task_2", "SCHEDULED")]
    conductor.complete("integration_task_2")
    assert conductor.wf(wid)["status"] == "COMPLETED"
    assert conductor.statuses(wid)[2] == ("integration_task_2", "COMPLETED")
