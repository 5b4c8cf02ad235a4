"""Workflow definitions of Conductor's integration specs (test-harness/src/test/resources),
rewritten as Python data with Conductor's names and values."""
from __future__ import annotations


def simple(name: str, ref: str, **input_parameters) -> dict:
    return {"name": name, "taskReferenceName": ref, "type": "SIMPLE", "inputParameters": input_parameters}


# simple_workflow_1_integration_test.json
LINEAR_WORKFLOW_T1_T2 = {
    "name": "integration_test_wf",
    "tasks": [
        simple("integration_task_1", "t1", p1="${workflow.input.param1}", p2="${workflow.input.param2}",
               p3="${CPEWF_TASK_ID}", someNullKey=None),
        simple("integration_task_2", "t2", tp1="${workflow.input.param1}", tp2="${t1.output.op}",
               tp3="${CPEWF_TASK_ID}"),
    ],
    "inputParameters": ["param1", "param2"],
    "outputParameters": {"o1": "${workflow.input.param1}", "o2": "${t2.output.uuid}", "o3": "${t1.output.op}"},
    "failureWorkflow": "$workflow.input.failureWfName",
    "restartable": True,
    "timeoutPolicy": "ALERT_ONLY",
    "timeoutSeconds": 0,
}

# simple_one_task_sub_workflow_integration_test.json
SUB_WORKFLOW = {"name": "sub_workflow", "tasks": [simple("simple_task_in_sub_wf", "t1")],
                "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0}

# workflow_with_sub_workflow_1_integration_test.json: the child's name is an expression
WORKFLOW_WITH_SUBWORKFLOW = {
    "name": "integration_test_wf_with_sub_wf",
    "tasks": [
        simple("integration_task_1", "t1", p1="${workflow.input.param1}", p2="${workflow.input.param2}",
               someNullKey=None),
        {"name": "sub_workflow_task", "taskReferenceName": "t2", "type": "SUB_WORKFLOW",
         "inputParameters": {"param1": "${workflow.input.param1}", "param2": "${workflow.input.param2}",
                             "subwf": "${workflow.input.nextSubwf}"},
         "subWorkflowParam": {"name": "${workflow.input.subwf}", "version": 1}},
    ],
    "inputParameters": ["param1", "param2"],
    "failureWorkflow": "$workflow.input.failureWfName",
    "timeoutPolicy": "ALERT_ONLY",
    "timeoutSeconds": 0,
}
