"""JsonJQTransformSpec (a JSON_JQ_TRANSFORM error, then a rerun from that task with new
task input) and WorkflowAndTaskConfigurationSpec "Test wait time out task based simple
workflow" (a WAIT whose TaskDef has timeoutSeconds 2, RETRY, retryCount 1,
retryDelaySeconds 10)."""
from __future__ import annotations

from tests.specs.definitions import simple

JQ_WF = {"name": "test_json_jq_transform_wf", "tasks": [{
    "name": "jq", "taskReferenceName": "jq_1", "type": "JSON_JQ_TRANSFORM",
    "inputParameters": {"input": "${workflow.input}",
                        "queryExpression": ".input as $_ | { out: ($_.in1.array + $_.in2.array) }"}}],
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0}

WAIT_TIMEOUT_WF = {"name": "test_wait_timeout",
                   "tasks": [{"name": "waitTimeout", "taskReferenceName": "wait0", "type": "WAIT"},
                             simple("integration_task_1", "t1")],
                   "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0}


def test_json_jq_transform_succeeds(conductor):
    conductor.workflow_defs(JQ_WF)
    wid = conductor.start("test_json_jq_transform_wf", {"in1": {"array": ["a", "b"]}, "in2": {"array": ["c", "d"]}})
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert conductor.statuses(wid) == [("JSON_JQ_TRANSFORM", "COMPLETED")]
    assert wf["tasks"][0]["outputData"]["result"] == {"out": ["a", "b", "c", "d"]}
    assert "resultList" in wf["tasks"][0]["outputData"]


def test_rerun_workflow_with_failed_json_jq_transform_task(conductor):
    """"Test workflow with json jq transform task fails" then "Test rerun workflow with
    failed json jq transform task"."""
    conductor.workflow_defs(JQ_WF)
    wid = conductor.start("test_json_jq_transform_wf", {"in1": "a", "in2": "b"})
    wf = conductor.wf(wid)
    assert wf["status"] == "FAILED"
    assert conductor.statuses(wid) == [("JSON_JQ_TRANSFORM", "FAILED")]
    # Conductor (jackson-jq): 'Cannot index string with string "array"'; our jq library
    # words the type of the key with parentheses: 'Cannot index string with string ("array")'
    assert wf["tasks"][0]["reasonForIncompletion"].startswith('Cannot index string with string ')
    assert '"array"' in wf["tasks"][0]["reasonForIncompletion"]
    valid = {"input": {"in1": {"array": ["a", "b"]}, "in2": {"array": ["c", "d"]}},
             "queryExpression": ".input as $_ | { out: ($_.in1.array + $_.in2.array) }"}
    conductor.call("post", f"/workflow/{wid}/rerun", {"reRunFromWorkflowId": wid,
                                                      "reRunFromTaskId": wf["tasks"][0]["taskId"], "taskInput": valid})
    wf = conductor.wf(wid)
    assert wf["status"] == "COMPLETED"
    assert conductor.statuses(wid) == [("JSON_JQ_TRANSFORM", "COMPLETED")]
    assert wf["tasks"][0]["outputData"]["result"] == {"out": ["a", "b", "c", "d"]}
    assert "resultList" in wf["tasks"][0]["outputData"]


def test_wait_retry_starts_after_its_retry_delay(conductor):
    """Our addition to the spec: left alone, the SCHEDULED retry starts (IN_PROGRESS) once
    retryDelaySeconds have passed, and times out again (no retries left) when 2 s have
    passed beyond startTime + startDelayInSeconds (DeciderService.checkTaskTimeout)."""
    conductor.task_defs("waitTimeout", timeoutSeconds=2, responseTimeoutSeconds=2, retryCount=1,
                        timeoutPolicy="RETRY", retryDelaySeconds=10)
    conductor.workflow_defs(WAIT_TIMEOUT_WF)
    wid = conductor.start("test_wait_timeout", {})
    conductor.tick(3)
    assert conductor.statuses(wid) == [("WAIT", "TIMED_OUT"), ("WAIT", "SCHEDULED")]
    conductor.tick(9.5)  # the retry was made 3 s after the start: its delay ends at 13 s
    assert conductor.statuses(wid) == [("WAIT", "TIMED_OUT"), ("WAIT", "SCHEDULED")]
    conductor.tick(1)
    assert conductor.statuses(wid) == [("WAIT", "TIMED_OUT"), ("WAIT", "IN_PROGRESS")]
    conductor.tick(11)
    assert conductor.statuses(wid) == [("WAIT", "TIMED_OUT"), ("WAIT", "IN_PROGRESS")]
    conductor.tick(1.5)
    assert conductor.wf(wid)["status"] == "TIMED_OUT"
    assert conductor.statuses(wid) == [("WAIT", "TIMED_OUT"), ("WAIT", "TIMED_OUT")]


def test_wait_with_a_task_definition_timeout_is_retried(conductor):
    conductor.task_defs("waitTimeout", timeoutSeconds=2, responseTimeoutSeconds=2, retryCount=1,
                        timeoutPolicy="RETRY", retryDelaySeconds=10)
    conductor.task_defs("integration_task_1")
    conductor.workflow_defs(WAIT_TIMEOUT_WF)
    wid = conductor.start("test_wait_timeout", {})
    assert conductor.statuses(wid) == [("WAIT", "IN_PROGRESS")]
    conductor.tick(3)
    conductor.decide(wid)
    assert conductor.wf(wid)["status"] == "RUNNING"
    # the new attempt stays SCHEDULED for its retryDelaySeconds (10 s) before the WAIT starts
    assert conductor.statuses(wid) == [("WAIT", "TIMED_OUT"), ("WAIT", "SCHEDULED")]
    assert conductor.wf(wid)["tasks"][1]["retriedTaskId"] == conductor.wf(wid)["tasks"][0]["taskId"]
    retry = conductor.wf(wid)["tasks"][1]
    conductor.result(retry, "COMPLETED")
    assert conductor.wf(wid)["status"] == "RUNNING"
    assert conductor.statuses(wid) == [("WAIT", "TIMED_OUT"), ("WAIT", "COMPLETED"), ("integration_task_1", "SCHEDULED")]
    conductor.complete("integration_task_1", {"op": "task1.done"})
    assert conductor.wf(wid)["status"] == "COMPLETED"
    assert conductor.statuses(wid)[2] == ("integration_task_1", "COMPLETED")
