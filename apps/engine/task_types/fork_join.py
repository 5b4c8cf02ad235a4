"""FORK_JOIN, FORK_JOIN_DYNAMIC, JOIN and EXCLUSIVE_JOIN.

A fork creates a ``FORK`` task (COMPLETED at once), the first task of every branch and the
JOIN that must follow it. A JOIN completes when every ``joinOn`` task is terminal, with
``{ref: output}`` of each; a non-optional failure fails it; optional failures make it
COMPLETED_WITH_ERRORS once all are terminal. In a DO_WHILE the joinOn references get the
loop's ``__N`` scope. A joinOn reference inside a SWITCH case that was not taken counts as
satisfied (cases/10: the workflow must not hang).
Sources: ForkJoinTaskMapper, ForkJoinDynamicTaskMapper, JoinTaskMapper, Join,
ExclusiveJoin (conductor-reference §5).
"""
from __future__ import annotations

import copy

from apps.engine import params
from apps.engine.decider import TerminateWorkflow
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType


def _fork_task(d, workflow_task: dict, retry_count: int) -> TaskState:
    task = d.new_task(workflow_task, task_type="FORK", retry_count=retry_count)
    task.task_def_name = "FORK"
    task.status = "COMPLETED"
    task.start_time = task.end_time = d.now
    return task


def _join_after(d, workflow_task: dict, retry_count: int, message: str, join_on: list | None = None) -> list[TaskState]:
    join_wt = d.blueprint.next_task(workflow_task["taskReferenceName"])
    if join_wt is None or join_wt.get("type") != "JOIN":
        raise TerminateWorkflow(message, "FAILED")
    join = Join.build(d, join_wt, retry_count, join_on)
    return [join]


@register
class Fork(TaskType):
    """The ``FORK`` marker task created by fork operators; already COMPLETED."""

    type_name = "FORK"
    has_task_def = False


@register
class ForkJoin(TaskType):
    type_name = "FORK_JOIN"
    has_task_def = False

    def map(self, d, workflow_task, retry_count):
        tasks = [_fork_task(d, workflow_task, retry_count)]
        for branch in workflow_task.get("forkTasks") or []:
            if branch:
                tasks.extend(d.tasks_to_schedule(branch[0], retry_count))
        tasks.extend(_join_after(d, workflow_task, retry_count,
                                 "Fork task definition is not followed by a join task.  Check the blueprint"))
        return tasks


@register
class ForkJoinDynamic(TaskType):
    """Branches from input: ``dynamicForkTasksParam`` (a list of WorkflowTask JSON) with
    ``dynamicForkTasksInputParamName`` (``{ref: input}``), or ``forkTaskName`` /
    ``forkTaskType`` / ``forkTaskWorkflow`` with a ``forkTaskInputs`` list. An empty list
    gives a FORK and a JOIN that completes at once; unreadable input fails the workflow."""

    type_name = "FORK_JOIN_DYNAMIC"
    has_task_def = False

    def map(self, d, workflow_task, retry_count):
        task_input = params.resolve_task_input(workflow_task.get("inputParameters") or {}, d.wf)
        branches = self._simple_form(d, workflow_task, task_input)
        if branches is None:
            branches = self._list_form(d, workflow_task, task_input)
        fork = _fork_task(d, workflow_task, retry_count)
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
        tasks.extend(_join_after(d, workflow_task, retry_count,
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


def _untaken_case(d, ref: str, suffix: str) -> bool:
    """True when ``ref`` sits in a SWITCH/DECISION case that was not chosen (the switch
    task of the same loop scope is terminal and selected another case)."""
    slot = d.blueprint.case_of(ref)
    if slot is None:
        return False
    switch_ref, case_name = slot
    switch = d.wf.task_by_ref(switch_ref + suffix)
    if switch is None or not switch.terminal:
        return False
    chosen = switch.input_data.get("case")
    cases = d.blueprint.get(switch_ref).get("decisionCases") or {}
    if case_name == "__default__":
        return chosen in cases
    return chosen != case_name


@register
class Join(TaskType):
    type_name = "JOIN"
    has_task_def = False

    @staticmethod
    def build(d, workflow_task: dict, retry_count: int, join_on: list | None = None) -> TaskState:
        task = d.new_task(workflow_task, retry_count=retry_count)
        task.task_def_name = "JOIN"
        task.input_data = {**task.input_data, "joinOn": list(join_on if join_on is not None else (workflow_task.get("joinOn") or []))}
        task.status = "IN_PROGRESS"
        task.start_time = d.now
        return task

    def map(self, d, workflow_task, retry_count):
        return [self.build(d, workflow_task, retry_count)]

    def execute(self, d, task: TaskState) -> bool:
        """Conductor's Join.execute: a failed non-optional task fails the JOIN at once,
        unless it is ``permissive``, which fails it only once every joinOn task has ended.
        The JOIN is CANCELED instead of FAILED when every such failure is a CANCELED task
        (a sub-workflow terminated by hand), so the workflow ends TERMINATED."""
        suffix = params.loop_scope(task)
        join_on = task.input_data.get("joinOn") or []
        forked_tasks: list[tuple[str, TaskState | None]] = []
        all_done = True
        for ref in join_on:
            runtime_ref = ref if (not suffix or ref.endswith(suffix)) else ref + suffix
            forked = d.wf.task_by_ref(runtime_ref)
            if forked is None:
                if not _untaken_case(d, ref, suffix):
                    all_done = False
                continue
            if not forked.terminal:
                all_done = False
            forked_tasks.append((ref, forked))
        failed_now = False
        optional_failures: list[str] = []
        output: dict = {}
        for ref, forked in forked_tasks:
            wt = d.workflow_task_of(forked)
            if forked.output_data:
                output[ref] = forked.output_data
            if forked.terminal and not forked.successful and not wt.get("optional") \
                    and (not wt.get("permissive") or all_done):
                failed_now = True
                break
            if forked.status == "COMPLETED_WITH_ERRORS":
                optional_failures.append(f"{forked.task_def_name}/{forked.task_id}")
        before = (task.status, task.output_data)
        task.output_data = output
        if failed_now:
            unsuccessful = [(r, t) for r, t in forked_tasks if t.terminal and not t.successful]
            task.reason_for_incompletion = " ".join(t.reason_for_incompletion or f"{r} {t.status}"
                                                    for r, t in unsuccessful)
            real_failure = any(t.status != "CANCELED" for _r, t in unsuccessful
                               if not d.workflow_task_of(t).get("optional"))
            task.status = "FAILED" if real_failure else "CANCELED"
        elif all_done and optional_failures:
            task.status = "COMPLETED_WITH_ERRORS"
            task.reason_for_incompletion = " ".join(optional_failures) + " completed with errors"
        elif all_done:
            task.status = "COMPLETED"
        if task.terminal:
            task.end_time = d.now
        return (task.status, task.output_data) != before


@register
class ExclusiveJoin(TaskType):
    """Completes with the output of the first joinOn task that ran (else of the first
    ``defaultExclusiveJoinTask`` that ran); fails if that task failed."""

    type_name = "EXCLUSIVE_JOIN"
    has_task_def = False

    def map(self, d, workflow_task, retry_count):
        return [Join.build(d, workflow_task, retry_count)]

    def execute(self, d, task: TaskState) -> bool:
        suffix = params.loop_scope(task)
        wt = d.workflow_task_of(task)
        found = None
        for group in (task.input_data.get("joinOn") or [], wt.get("defaultExclusiveJoinTask") or []):
            for ref in group:
                candidate = d.wf.task_by_ref(ref + suffix if suffix and not ref.endswith(suffix) else ref)
                if candidate is None or candidate.status == "SKIPPED":
                    continue
                found = candidate
                break
            if found is not None:
                break
        if found is None or not found.terminal:
            return False
        if not found.successful:
            task.status = "FAILED"
            task.reason_for_incompletion = found.reason_for_incompletion
        else:
            task.status = "COMPLETED"
            task.output_data = found.output_data
        task.end_time = d.now
        return True
