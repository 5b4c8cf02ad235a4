"""A run grid per definition (as Airflow's grid view): the last N executions of a
workflow name as columns (oldest left), its tasks as rows, each cell the status of that
task in that run; above it, each run's duration and whether it failed.

Reads: the newest N executions through the ``wf_name_create`` index (workflow_name,
create_time), then their tasks through ``task_workflow_seq`` (N executions' tasks, not
the table). Rows follow the order tasks were first scheduled, newest run first, so a
task added in a later version appears where it runs.
"""
from __future__ import annotations

from apps.core.clock import now_ms
from apps.engine.models import TaskExecution, WorkflowExecution

RUNS = (10, 25, 50, 100)
DEFAULT_RUNS = 25
ROLLING = 5  # runs in the rolling failure rate
MAX_TASK_ROWS = 200
FAILED = ("FAILED", "TIMED_OUT", "TERMINATED", "FAILED_WITH_TERMINAL_ERROR", "CANCELED")


def run_grid(name: str, runs: int = DEFAULT_RUNS, now: int | None = None) -> dict:
    """``{"runs": [{"workflow_id", "status", "version", "create_time", "duration_ms",
    "failed", "running", "rolling_failure_pct" (failed % of the ended runs among this one and
    the ``ROLLING`` - 1 before it; None when none ended)}] oldest first, "rows": [{"ref", "type", "cells": [{"status", "task_id",
    "workflow_id", "attempts", "duration_ms"} or None per run]}], "max_duration_ms", "failure_rate"
    (0-1 over the runs that ended, None when none ended), "ended"}``. A cell shows the
    latest attempt of the task (its last iteration in a loop); ``attempts`` counts all."""
    now = now if now is not None else now_ms()
    rows = list(WorkflowExecution.objects.filter(workflow_name=name).order_by("-create_time", "-workflow_id")
                .values("workflow_id", "status", "workflow_version", "create_time", "end_time")[:runs])
    rows.reverse()
    index = {r["workflow_id"]: i for i, r in enumerate(rows)}
    out_runs = [{"workflow_id": r["workflow_id"], "status": r["status"], "version": r["workflow_version"],
                 "create_time": r["create_time"],
                 "duration_ms": (r["end_time"] or now) - r["create_time"], "running": not r["end_time"],
                 "failed": r["status"] in FAILED} for r in rows]
    grid: dict[str, dict] = {}
    first_seq: dict[tuple[str, int], int] = {}  # (ref, column) -> the task's first seq in that run
    for t in (TaskExecution.objects.filter(workflow_id__in=list(index)).order_by("seq")
              .values("workflow_id", "reference_task_name", "task_type", "status", "task_id", "seq", "start_time",
                      "end_time")):
        col = index[t["workflow_id"]]
        ref = t["reference_task_name"]
        if ref not in grid:
            if len(grid) >= MAX_TASK_ROWS:
                continue
            grid[ref] = {"ref": ref, "type": t["task_type"], "cells": [None] * len(rows)}
        first_seq.setdefault((ref, col), t["seq"])
        cell = grid[ref]["cells"][col]
        attempts = (cell["attempts"] if cell else 0) + 1
        grid[ref]["cells"][col] = {
            "status": t["status"], "task_id": t["task_id"], "workflow_id": t["workflow_id"], "attempts": attempts,
            "duration_ms": (t["end_time"] - t["start_time"]) if t["end_time"] and t["start_time"] else None}
    def order(ref: str) -> tuple[int, int]:
        """The newest run that has the task first, then its schedule order in that run."""
        col = max(c for c, cell in enumerate(grid[ref]["cells"]) if cell is not None)
        return -col, first_seq[(ref, col)]

    newest_first = sorted(grid, key=order)
    for i, r in enumerate(out_runs):  # the failure rate over time: of the ended runs among the last ROLLING
        window = [w for w in out_runs[max(0, i - ROLLING + 1):i + 1] if not w["running"]]
        r["rolling_failure_pct"] = round(100 * sum(w["failed"] for w in window) / len(window)) if window else None
    ended = [r for r in out_runs if not r["running"]]
    return {"runs": out_runs, "rows": [grid[ref] for ref in newest_first],
            "max_duration_ms": max((r["duration_ms"] for r in out_runs), default=0),
            "failure_rate": (sum(1 for r in ended if r["failed"]) / len(ended)) if ended else None,
            "ended": len(ended)}

