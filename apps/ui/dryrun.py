"""Dry runs of the recovery actions: what retry, rerun, restart (current or latest
definition) and skip would do to an execution, read from its current state without
changing anything, for the confirmation page.

The rules mirror ``apps.engine.recovery`` (Conductor's WorkflowExecutorOps): retry gives
each reference whose latest attempt is FAILED, FAILED_WITH_TERMINAL_ERROR, TIMED_OUT or
CANCELED a new attempt (JOIN, DO_WHILE, FORK, EXCLUSIVE_JOIN are reset in place) and,
resuming sub-workflows, retries a failed child instead; rerun from a task removes every
task scheduled after it and schedules it again; restart removes every task and starts
from the first one; skip marks a task that has not been scheduled SKIPPED.
"""
from __future__ import annotations

from apps.engine.recovery import RESET_IN_PLACE, latest_by_ref
from apps.engine.state import TaskState, WorkflowState
from apps.engine.status import RETRY_FROM_STATUSES, TERMINAL_WORKFLOW

# Task types that only compute or steer inside the engine: running them again repeats no
# effect outside it. Every other type (worker tasks, HTTP, EVENT, Kafka, sub-workflows,
# AI calls, ...) may repeat one.
NO_OUTSIDE_EFFECT = frozenset({
    "INLINE", "LAMBDA", "JSON_JQ_TRANSFORM", "SET_VARIABLE", "SWITCH", "DECISION", "FORK_JOIN", "FORK",
    "FORK_JOIN_DYNAMIC", "JOIN", "EXCLUSIVE_JOIN", "DO_WHILE", "WAIT", "HUMAN", "TERMINATE", "NOOP",
})
ACTIONS = ("retry", "retry_resume", "restart", "restart_latest", "rerun", "skip")


def _row(t: TaskState) -> dict:
    return {"ref": t.reference_task_name, "type": t.task_type, "status": t.status, "task_id": t.task_id,
            "attempt": t.retry_count + 1, "sub_workflow_id": t.sub_workflow_id}


def _effects(tasks: list[TaskState]) -> list[dict]:
    """Tasks among ``tasks`` that ran (started or ended) and may act outside the engine."""
    return [_row(t) for t in tasks
            if t.task_type not in NO_OUTSIDE_EFFECT and (t.start_time or t.status == "COMPLETED")]


def plan(action: str, wf: WorkflowState, *, task_id: str | None = None, ref: str | None = None,
         latest_version: int | None = None) -> dict:
    """What ``action`` would do to ``wf`` (loaded with its tasks), as
    ``{"summary": str, "again": [task rows scheduled again], "removed": int (task
    executions deleted), "sub_workflows": [{"ref", "child", "what"}], "side_effects":
    [task rows that ran and may repeat an outside effect], "refused": str | None (the
    engine's refusal, when it would refuse)}``. Task rows: ``ref, type, status, task_id,
    attempt, sub_workflow_id``. ``task_id`` is the rerun target, ``ref`` the skipped
    reference, ``latest_version`` the latest definition version (restart_latest)."""
    out = {"summary": "", "again": [], "removed": 0, "sub_workflows": [], "side_effects": [], "refused": None}
    terminal = wf.status in TERMINAL_WORKFLOW
    if action in ("retry", "retry_resume"):
        if not terminal:
            out["refused"] = f"Workflow is still running.  status={wf.status}"
            return out
        failed = [t for t in latest_by_ref(wf).values() if t.status in RETRY_FROM_STATUSES]
        if not failed and wf.status != "TIMED_OUT":
            out["refused"] = ("There are no retryable tasks! Use restart if you want to attempt entire workflow "
                              "execution again.")
            return out
        out["again"] = [_row(t) for t in failed]
        for t in failed:
            if t.task_type == "SUB_WORKFLOW":
                if action == "retry_resume" and t.sub_workflow_id:
                    out["sub_workflows"].append({"ref": t.reference_task_name, "child": t.sub_workflow_id,
                                                 "what": "the failed child execution is retried (resumed)"})
                else:
                    out["sub_workflows"].append({"ref": t.reference_task_name, "child": t.sub_workflow_id,
                                                 "what": "a new child execution is started"})
        out["side_effects"] = _effects([t for t in failed if t.task_type not in RESET_IN_PLACE])
        out["summary"] = (f"{len(failed)} failed task reference(s) get a new attempt; completed tasks are kept "
                          "and not run again.")
        return out
    if action in ("restart", "restart_latest"):
        if not terminal:
            out["refused"] = f"Workflow: {wf.workflow_id} is not in terminal state, unable to restart."
            return out
        if wf.status == "COMPLETED" and wf.definition.get("restartable") is False:
            out["refused"] = f"Workflow: {wf.workflow_id} is non-restartable"
            return out
        out["removed"] = len(wf.tasks)
        out["again"] = [_row(t) for t in latest_by_ref(wf).values()]
        out["sub_workflows"] = [{"ref": t.reference_task_name, "child": t.sub_workflow_id,
                                 "what": "a new child execution is started when reached; this one stays as it is"}
                                for t in latest_by_ref(wf).values() if t.task_type == "SUB_WORKFLOW"]
        out["side_effects"] = _effects(list(latest_by_ref(wf).values()))
        version = (f" with the latest definition (v{wf.workflow_version} → v{latest_version})"
                   if action == "restart_latest" and latest_version is not None else "")
        out["summary"] = (f"All {len(wf.tasks)} task executions are removed and the execution starts again from its "
                          f"first task{version}, under the same id.")
        return out
    if action == "rerun":
        if not terminal:
            out["refused"] = f"Workflow: {wf.workflow_id} is not in terminal state, unable to rerun."
            return out
        target = next((t for t in wf.tasks if t.task_id == task_id), None)
        if target is None:
            out["refused"] = f"Task {task_id} not found"
            return out
        later = [t for t in wf.tasks if t.seq > target.seq]
        out["removed"] = len(later)
        out["again"] = [_row(target)]
        rerun_refs = {target.reference_task_name} | {t.reference_task_name for t in later}
        touched = [t for t in [target, *later] if t.task_type == "SUB_WORKFLOW"]
        out["sub_workflows"] = [{"ref": t.reference_task_name, "child": t.sub_workflow_id,
                                 "what": "a new child execution is started when reached"} for t in touched]
        out["side_effects"] = _effects([target, *later])
        out["summary"] = (f"{target.reference_task_name} is scheduled again in place; the {len(later)} task "
                          f"execution(s) scheduled after it are removed and run again as the workflow reaches "
                          f"them ({len(rerun_refs)} reference(s)).")
        return out
    if action == "skip":
        done = next((t for t in wf.tasks if t.reference_task_name == ref), None)
        if wf.status != "RUNNING":
            out["refused"] = (f"The workflow {wf.workflow_id} is not running so the task referenced by {ref} "
                              "cannot be skipped")
        elif done is not None:
            out["refused"] = f"The task referenced {ref} has already been processed, cannot be skipped"
        out["summary"] = f"{ref} is marked SKIPPED when the workflow reaches it and is never run; nothing runs again."
        return out
    raise ValueError(f"no dry run for {action}")
