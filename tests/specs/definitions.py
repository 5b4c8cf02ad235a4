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

# simple_workflow_with_permissive_task_integration_test.json (retryCount 1 on both tasks)
PERMISSIVE_TASK_WF = {
    "name": "permissive_task_wf",
    "tasks": [
        {**simple("task_permissive", "t1", p1="${workflow.input.param1}", p2="${workflow.input.param2}"),
         "permissive": True, "retryCount": 1},
        {**simple("integration_task_2", "t2", tp1="${workflow.input.param1}", tp2="${t1.output.op}"),
         "permissive": True, "retryCount": 1},
    ],
    "inputParameters": ["param1", "param2"],
    "outputParameters": {"o1": "${workflow.input.param1}", "o2": "${t2.output.uuid}", "o3": "${t1.output.op}"},
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}

# simple_workflow_with_permissive_optional_task_integration_test.json
PERMISSIVE_OPTIONAL_TASK_WF = {
    "name": "permissive_optional_task_wf",
    "tasks": [
        {**simple("task_optional", "t1", p1="${workflow.input.param1}", p2="${workflow.input.param2}"),
         "optional": True, "permissive": True},
        {**simple("integration_task_2", "t2", tp1="${workflow.input.param1}", tp2="${t1.output.op}"),
         "permissive": True},
    ],
    "inputParameters": ["param1", "param2"],
    "outputParameters": {"o1": "${workflow.input.param1}", "o2": "${t2.output.uuid}", "o3": "${t1.output.op}"},
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}


def fork(ref: str, *branches: list) -> dict:
    return {"name": "fork", "taskReferenceName": ref, "type": "FORK_JOIN", "forkTasks": [list(b) for b in branches]}


def join(ref: str, *join_on: str) -> dict:
    return {"name": "join", "taskReferenceName": ref, "type": "JOIN", "joinOn": list(join_on)}


def permissive(task: dict) -> dict:
    return {**task, "permissive": True}


# fork_join_permissive_integration_test.json
FORK_JOIN_PERMISSIVE_WF = {
    "name": "FanInOutPermissiveTest",
    "tasks": [
        fork("fanouttask",
             [permissive(simple("integration_task_1", "t1", p1="workflow.input.param1", p2="workflow.input.param2"))],
             [permissive(simple("integration_task_2", "t2", tp1="workflow.input.param1"))]),
        join("fanouttask_join", "t1", "t2"),
        simple("integration_task_3", "t3", p1="workflow.input.param1", p2="workflow.input.param2"),
    ],
    "inputParameters": ["param1", "param2"],
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}

# fork_join_with_no_permissive_task_retry_integration_test.json
FORK_JOIN_PERMISSIVE_WF_2 = {
    "name": "FanInOutPermissiveTest_2",
    "tasks": [
        fork("fanouttask",
             [permissive(simple("integration_p_task_0_RT_1", "t1")), permissive(simple("integration_p_task_0_RT_3", "t3"))],
             [permissive(simple("integration_p_task_0_RT_2", "t2"))]),
        join("fanouttask_join", "t3", "t2"),
        permissive(simple("integration_p_task_0_RT_4", "t4")),
    ],
    "inputParameters": ["param1", "param2"],
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}

# fork_join_with_permissive_sub_workflow_forks_integration_test.json
WORKFLOW_FORK_JOIN_PERMISSIVE_SW = {
    "name": "integration_test_fork_join_permissive_sw",
    "tasks": [
        fork("fanouttask",
             [permissive({"name": "st1", "taskReferenceName": "st1", "type": "SUB_WORKFLOW",
                          "subWorkflowParam": {"name": "sub_workflow"}})],
             [permissive({"name": "st2", "taskReferenceName": "st2", "type": "SUB_WORKFLOW",
                          "subWorkflowParam": {"name": "sub_workflow"}})]),
        join("fanouttask_join", "st1", "st2"),
    ],
    "inputParameters": ["param1", "param2"],
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}

_LAMBDA_SCRIPT = ("var i = 10; if ($.lambdaValue == 1){ return {testvalue: 'Lambda value was 1', iValue: i} } "
                  "else { return {testvalue: 'Lambda value was NOT 1', iValue: i + 3} }")

# terminate_task_parent_workflow.json and terminate_task_sub_workflow.json
TERMINATE_TASK_SUB_WF = {"name": "test_terminate_task_sub_wf", "tasks": [simple("integration_task_3", "t3")]}
TERMINATE_TASK_PARENT_WF = {
    "name": "test_terminate_task_parent_wf",
    "tasks": [
        fork("forkx",
             [{"name": "test_lambda_task1", "taskReferenceName": "lambdaTask1", "type": "LAMBDA",
               "inputParameters": {"lambdaValue": "${workflow.input.lambdaValue}", "scriptExpression": _LAMBDA_SCRIPT}},
              {"name": "test_terminate_subworkflow", "taskReferenceName": "test_terminate_subworkflow",
               "type": "SUB_WORKFLOW", "inputParameters": {},
               "subWorkflowParam": {"name": "test_terminate_task_sub_wf"}}],
             [{"name": "test_lambda_task2", "taskReferenceName": "lambdaTask2", "type": "LAMBDA",
               "inputParameters": {"lambdaValue": "${workflow.input.lambdaValue}", "scriptExpression": _LAMBDA_SCRIPT}},
              {"name": "test_wait_task", "taskReferenceName": "basicJavaA", "type": "WAIT"},
              {"name": "terminate", "taskReferenceName": "terminate0", "type": "TERMINATE",
               "inputParameters": {"terminationStatus": "COMPLETED", "workflowOutput": "some output"}},
              {"name": "test_second_wait_task", "taskReferenceName": "basicJavaB", "type": "WAIT"}]),
        {**join("thejoin", "test_terminate_subworkflow", "basicJavaB"), "name": "join"},
    ],
}

# do_while_with_decision_task.json: INLINE -> SWITCH -> (WAIT, INLINE) over the list
DO_WHILE_WITH_DECISION_TASK = {
    "name": "DO_While_with_Decision_task",
    "tasks": [{
        "name": "LoopTask", "taskReferenceName": "LoopTask", "type": "DO_WHILE",
        "inputParameters": {"list": "${workflow.input.list}"},
        "loopCondition": "$.LoopTask['iteration'] < $.list.length",
        "loopOver": [
            {"name": "GetNumberAtIndex", "taskReferenceName": "GetNumberAtIndex", "type": "INLINE",
             "inputParameters": {"evaluatorType": "javascript", "list": "${workflow.input.list}",
                                 "iterator": "${LoopTask.output.iteration}",
                                 "expression": "function getElement() { return $.list.get($.iterator - 1); } getElement();"}},
            {"name": "SwitchTask", "taskReferenceName": "SwitchTask", "type": "SWITCH", "evaluatorType": "javascript",
             "inputParameters": {"param": "${GetNumberAtIndex.output.result}"}, "expression": "$.param > 0",
             "decisionCases": {"true": [
                 {"name": "WaitTask", "taskReferenceName": "WaitTask", "type": "WAIT"},
                 {"name": "ComputeNumber", "taskReferenceName": "ComputeNumber", "type": "INLINE",
                  "inputParameters": {"evaluatorType": "javascript",
                                      "number": "${GetNumberAtIndex.output.result.number}",
                                      "expression": "function compute() { return $.number+10; } compute();"}},
             ]}},
        ],
    }],
}

# do_while_iteration_fix_test.json
DO_WHILE_ITERATION_FIX = {
    "name": "Do_While_Workflow_Iteration_Fix",
    "tasks": [{
        "name": "loopTask", "taskReferenceName": "loopTask", "type": "DO_WHILE",
        "inputParameters": {"value": "${workflow.input.loop}"},
        "loopCondition": "if ($.loopTask['iteration'] < $.value) { true; } else { false;} ",
        "loopOver": [{"name": "form_uri", "taskReferenceName": "form_uri", "type": "LAMBDA",
                      "inputParameters": {"index": "${loopTask['iteration']}", "scriptExpression": "return $.index - 1;"}}],
    }],
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}

# do_while_set_variable_fix.json
DO_WHILE_SET_VARIABLE_FIX = {
    "name": "do_while_Set_variable_fix",
    "tasks": [{
        "name": "loopTask", "taskReferenceName": "loopTask", "type": "DO_WHILE",
        "inputParameters": {"value": "${workflow.variables.value}"},
        "loopCondition": "if ($.value > 0) { true; } else { false; } ",
        "loopOver": [{"name": "set_variable", "taskReferenceName": "set_variable", "type": "SET_VARIABLE",
                      "inputParameters": {"value": "0"}}],
    }],
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}

# fork_join_with_optional_sub_workflow_forks_integration_test.json
WORKFLOW_FORK_JOIN_OPTIONAL_SW = {
    "name": "integration_test_fork_join_optional_sw",
    "tasks": [
        fork("fanouttask",
             [{"name": "st1", "taskReferenceName": "st1", "type": "SUB_WORKFLOW", "optional": True,
               "subWorkflowParam": {"name": "sub_workflow"}}],
             [{"name": "st2", "taskReferenceName": "st2", "type": "SUB_WORKFLOW", "optional": True,
               "subWorkflowParam": {"name": "sub_workflow"}}]),
        join("fanouttask_join", "st1", "st2"),
    ],
    "inputParameters": ["param1", "param2"],
    "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0,
}
