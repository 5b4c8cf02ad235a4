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
        """Conductor's Join.execute: a failed non-optional task fails the JOIN at once,
        unless it is ``permissive``, which fails it only once every joinOn task has ended.
        The JOIN is CANCELED instead of FAILED when every such failure is a CANCELED task
        (a sub-workflow terminated by hand), so the workflow ends TERMINATED."""
        suffix = params.loop_scope(task)
        join_on = task.input_data.get("joinOn") or []
        # A joinOn task still pending (always among the loaded, unsettled tasks) means the
        # JOIN waits and nothing else can change it: its output is built once, when it
        # ends, instead of re-reading every finished branch on each update (Conductor
        # re-adds every branch output on each evaluation; the end result is the same).
        # Asked from the few pending tasks' side, in one C-level pass over a dynamic
        # fork's thousands of joinOn references (no list or set of them built per pass).
        pending = {t.reference_task_name for t in d.active_tasks() if t is not task and not t.terminal}
        if pending and not pending.isdisjoint(
                join_on if not suffix else (ref if ref.endswith(suffix) else ref + suffix for ref in join_on)):
            return False
        runtime_refs = [ref if (not suffix or ref.endswith(suffix)) else ref + suffix for ref in join_on]
        forked_tasks: list[tuple[str, TaskState | None]] = []
        all_done = True
        attempts = d.outputs_of(runtime_refs)  # read only: narrow rows when many
        for ref, runtime_ref in zip(join_on, runtime_refs):
            found = attempts[runtime_ref]
            forked = found[-1] if found else None  # the latest attempt wins
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
            if forked.output_data:
                output[ref] = forked.output_data
            if forked.terminal and not forked.successful:
                wt = d.workflow_task_of(forked)
                if not wt.get("optional") and (not wt.get("permissive") or all_done):
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
