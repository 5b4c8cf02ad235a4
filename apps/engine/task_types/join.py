"""JOIN: wait for the ``joinOn`` tasks of a fork.

A JOIN completes when every ``joinOn`` task is terminal, with ``{ref: output}`` of each; a
non-optional failure fails it; optional failures make it COMPLETED_WITH_ERRORS once all
are terminal. In a DO_WHILE the joinOn references get the loop's ``__N`` scope. A joinOn
reference inside a SWITCH case that was not taken counts as satisfied (cases/10: the
workflow must not hang).
Source: JoinTaskMapper, Join.
"""
from __future__ import annotations

from apps.engine import params
from apps.engine.state import TaskState
from apps.engine.task_types import register
from apps.engine.task_types.base import TaskType


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
        suffix = params.loop_scope(task)
        join_on = task.input_data.get("joinOn") or []
        all_done = True
        failures: list[str] = []
        optional_failures: list[str] = []
        output: dict = {}
        for ref in join_on:
            runtime_ref = ref if (not suffix or ref.endswith(suffix)) else ref + suffix
            forked = d.wf.task_by_ref(runtime_ref)
            if forked is None:
                if _untaken_case(d, ref, suffix):
                    continue
                all_done = False
                continue
            wt = d.workflow_task_of(forked)
            if forked.output_data:
                output[ref] = forked.output_data
            if not forked.terminal:
                all_done = False
                continue
            if not forked.successful and not wt.get("optional"):
                failures.append(forked.reason_for_incompletion or f"{ref} {forked.status}")
                break
            if forked.status == "COMPLETED_WITH_ERRORS":
                optional_failures.append(f"{forked.task_def_name}/{forked.task_id}")
        before = (task.status, task.output_data)
        task.output_data = output
        if failures:
            task.status = "FAILED"
            task.reason_for_incompletion = " ".join(failures)
        elif all_done and optional_failures:
            task.status = "COMPLETED_WITH_ERRORS"
            task.reason_for_incompletion = " ".join(optional_failures) + " completed with errors"
        elif all_done:
            task.status = "COMPLETED"
        if task.terminal:
            task.end_time = d.now
        return (task.status, task.output_data) != before
