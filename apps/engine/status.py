"""Workflow and task statuses: the one home of every status set the engine, the API and
the operator pages use (the pages' JavaScript gets them from ``page_sets`` through the
template, never from a copy).

Values and flags are Conductor's: ``Workflow.WorkflowStatus`` (terminal, successful) and
``TaskModel.Status`` (terminal, successful, retriable).
"""
from __future__ import annotations

WORKFLOW_STATUSES = ("RUNNING", "COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED", "PAUSED")
TERMINAL_WORKFLOW = frozenset({"COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED"})
# Executions the sweeper still decides (the others are terminal).
ACTIVE_WORKFLOW = ("RUNNING", "PAUSED")

TASK_STATUSES = ("SCHEDULED", "IN_PROGRESS", "COMPLETED", "COMPLETED_WITH_ERRORS", "FAILED",
                 "FAILED_WITH_TERMINAL_ERROR", "TIMED_OUT", "CANCELED", "SKIPPED")
TERMINAL_TASK = frozenset({"COMPLETED", "COMPLETED_WITH_ERRORS", "FAILED", "FAILED_WITH_TERMINAL_ERROR",
                           "TIMED_OUT", "CANCELED", "SKIPPED"})
SUCCESSFUL_TASK = frozenset({"SCHEDULED", "IN_PROGRESS", "COMPLETED", "COMPLETED_WITH_ERRORS", "SKIPPED"})
RETRIABLE_TASK = frozenset({"SCHEDULED", "IN_PROGRESS", "COMPLETED", "COMPLETED_WITH_ERRORS", "FAILED", "TIMED_OUT"})
# Ended without success (shown as failures on the graph).
FAILED_TASK = frozenset({"FAILED", "FAILED_WITH_TERMINAL_ERROR", "TIMED_OUT"})
# Worst first: a status strip cell (loop iteration, fan-out member) shows the worst status of
# the tasks in it, in this order; every task status appears once.
TASK_SEVERITY = ("FAILED", "FAILED_WITH_TERMINAL_ERROR", "TIMED_OUT", "CANCELED", "COMPLETED_WITH_ERRORS",
                 "IN_PROGRESS", "SCHEDULED", "SKIPPED", "COMPLETED")
# Ended short of plain success: the strips' "next failure" jumps to cells in these.
STRIP_FAILURE_TASK = frozenset({"FAILED", "FAILED_WITH_TERMINAL_ERROR", "TIMED_OUT", "CANCELED",
                                "COMPLETED_WITH_ERRORS"})
# What a worker may report in a TaskResult (ExecutionService.updateTask).
TASK_RESULT_STATUSES = ("IN_PROGRESS", "FAILED", "FAILED_WITH_TERMINAL_ERROR", "COMPLETED", "CANCELED")
# Latest attempts that a workflow retry (POST /workflow/{id}/retry) attempts again.
RETRY_FROM_STATUSES = ("FAILED", "FAILED_WITH_TERMINAL_ERROR", "TIMED_OUT", "CANCELED")


def page_sets() -> dict[str, list[str]]:
    """The sets the operator pages' JavaScript needs, as JSON-ready sorted lists:
    ``{"terminalWorkflow": [...], "terminalTask": [...], "taskSeverity": [worst first],
    "stripFailure": [...]}``."""
    return {"terminalWorkflow": sorted(TERMINAL_WORKFLOW), "terminalTask": sorted(TERMINAL_TASK),
            "taskSeverity": list(TASK_SEVERITY), "stripFailure": sorted(STRIP_FAILURE_TASK)}
