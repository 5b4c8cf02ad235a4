"""FORK_JOIN_DYNAMIC: a fork whose branches come from the task input.

Source: ForkJoinDynamicTaskMapper.
"""
from __future__ import annotations

import copy

from apps.engine import params
from apps.engine.outcome import TerminateWorkflow
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType
from apps.engine.task_types.fork import fork_task, join_after


@register
class ForkJoinDynamic(TaskType):
    """Branches from input: ``dynamicForkTasksParam`` (a list of WorkflowTask JSON) with
    ``dynamicForkTasksInputParamName`` (``{ref: input}``), or ``forkTaskName`` /
    ``forkTaskType`` / ``forkTaskWorkflow`` with a ``forkTaskInputs`` list. An empty list
    gives a FORK and a JOIN that completes at once; unreadable input fails the workflow."""

    type_name = "FORK_JOIN_DYNAMIC"
    has_task_def = False

    def map(self, d, workflow_task, retry_count):
        task_input = params.resolve_task_input(workflow_task.get("inputParameters") or {}, d.wf, doc=d.document())
        branches = self._simple_form(d, workflow_task, task_input)
        if branches is None:
            branches = self._list_form(d, workflow_task, task_input)
        fork = fork_task(d, workflow_task, retry_count)
        fork.task_type = "FORK"
        fork.input_data = {**task_input, "forkedTasks": [b["taskReferenceName"] for b in branches]}
        tasks = [fork]
        join_on = []
        for branch in branches:
            if branch.get("taskDefinition") is None and branch.get("name"):
                branch["taskDefinition"] = d.task_def_lookup(branch["name"]) or d.adhoc_task_def(branch)
            mapped = d.tasks_to_schedule(branch, retry_count)
            if not mapped:
                raise TerminateWorkflow(
                    f"No dynamic tasks could be created for the Workflow: {d.wf.workflow_name}.{d.wf.workflow_version}"
                    f"/{d.wf.workflow_id}, Dynamic Fork Task: {branch.get('taskReferenceName')} attempted to create "
                    f"a duplicate task reference name: {branch.get('taskReferenceName')}", "FAILED")
            tasks.extend(mapped)
            join_on.append(mapped[-1].reference_task_name)
        tasks.extend(join_after(d, workflow_task, retry_count,
                                 "Dynamic join definition is not followed by a join task.  Check the workflow definition.",
                                 join_on))
        return tasks

    def _simple_form(self, d, workflow_task, task_input) -> list[dict] | None:
        inputs = task_input.get("forkTaskInputs")
        if not isinstance(inputs, list):
            return None
        sub_workflow = task_input.get("forkTaskWorkflow")
        try:
            sub_version = int(task_input.get("forkTaskWorkflowVersion"))
        except (TypeError, ValueError):
            sub_version = None
        fork_type = task_input.get("forkTaskType") or "SIMPLE"
        fork_name = task_input.get("forkTaskName") or (fork_type if fork_type != "SIMPLE" else None) \
            or workflow_task["taskReferenceName"]
        several = sum(1 for t in d.wf.tasks if (d.workflow_task_of(t).get("type") == "FORK_JOIN_DYNAMIC")) >= 1
        branches = []
        for i, item in enumerate(inputs):
            inp = dict(item) if isinstance(item, dict) else {"input": item}
            inp["__index"] = i
            if sub_workflow:
                wt = {"name": sub_workflow, "type": "SUB_WORKFLOW", "inputParameters": inp,
                      "subWorkflowParam": {"name": sub_workflow, "version": sub_version,
                                           **({"taskToDomain": inp["taskToDomain"]} if isinstance(inp.get("taskToDomain"), dict) else {})}}
                name = sub_workflow
            else:
                wt = {"name": fork_name, "type": fork_type, "inputParameters": inp}
                name = fork_name
            prefix = f"_{workflow_task['taskReferenceName']}_{name}" if several else f"_{name}"
            wt["taskReferenceName"] = f"{prefix}_{i}"
            if workflow_task.get("optional"):
                wt["optional"] = True
            branches.append(wt)
        return branches

    def _list_form(self, d, workflow_task, task_input) -> list[dict]:
        param = workflow_task.get("dynamicForkTasksParam")
        raw = task_input.get(param) if param else None
        if not isinstance(raw, list) or not all(isinstance(t, dict) and t.get("taskReferenceName") for t in raw):
            raise TerminateWorkflow(
                f"Input '{param}' is invalid. Cannot deserialize a list of Workflow Tasks from '{raw}'", "FAILED")
        inputs = task_input.get(workflow_task.get("dynamicForkTasksInputParamName"))
        if not isinstance(inputs, dict):
            raise TerminateWorkflow("Input to the dynamically forked tasks is not a map -> expecting a map of K,V  "
                                    f"but found {params.java_string(inputs)}", "FAILED")
        branches = []
        for item in raw:
            wt = copy.deepcopy(item)
            wt.setdefault("type", "SIMPLE")
            branch_input = inputs.get(wt["taskReferenceName"])
            if branch_input is not None and not isinstance(branch_input, dict):
                raise TerminateWorkflow(f"Tasks could not be dynamically forked due to invalid input: "
                                        f"{params.java_string(branch_input)}", "FAILED")
            wt["inputParameters"] = {**(wt.get("inputParameters") or {}), **(branch_input or {})}
            branches.append(wt)
        return branches
