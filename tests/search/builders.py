"""Rows of executions with chosen times and states, written straight to the tables, for
search and metrics tests (so every time, status and payload is known exactly).
Times are epoch ms."""
from __future__ import annotations

import itertools
import uuid

from apps.engine.models import TaskExecution, WorkflowExecution

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20.000Z

_seq = itertools.count(1)


def make_workflow(name: str = "wf", *, status: str = "RUNNING", create_time: int = T0, end_time: int = 0,
                  update_time: int | None = None, input: dict | None = None, output: dict | None = None,
                  correlation_id: str | None = None, version: int = 1, reason: str | None = None,
                  parent_workflow_id: str | None = None, workflow_id: str | None = None,
                  definition: dict | None = None, priority: int = 0) -> WorkflowExecution:
    """Insert one WorkflowExecution row."""
    return WorkflowExecution.objects.create(
        workflow_id=workflow_id or str(uuid.uuid4()),
        workflow_name=name,
        workflow_version=version,
        status=status,
        definition=definition or {"name": name, "version": version, "schemaVersion": 2,
                                  "tasks": [{"name": f"{name}_t", "taskReferenceName": "t", "type": "SIMPLE"}]},
        input=input or {},
        output=output or {},
        correlation_id=correlation_id,
        reason_for_incompletion=reason,
        parent_workflow_id=parent_workflow_id,
        priority=priority,
        create_time=create_time,
        update_time=update_time if update_time is not None else (end_time or create_time),
        end_time=end_time,
    )


def make_task(wf: WorkflowExecution, *, task_def_name: str = "work", task_type: str = "SIMPLE",
              status: str = "SCHEDULED", ref: str | None = None, scheduled_time: int = T0, start_time: int = 0,
              end_time: int = 0, update_time: int | None = None, input_data: dict | None = None,
              output_data: dict | None = None, queue_name: str | None = None, reason: str | None = None,
              worker_id: str | None = None, retry_count: int = 0, domain: str | None = None) -> TaskExecution:
    """Insert one TaskExecution row of ``wf``; worker (SIMPLE) tasks get a queue name."""
    n = next(_seq)
    if queue_name is None:
        queue_name = task_def_name if task_type == "SIMPLE" else ""
    return TaskExecution.objects.create(
        task_id=str(uuid.uuid4()),
        workflow=wf,
        workflow_type=wf.workflow_name,
        task_type=task_type,
        task_def_name=task_def_name,
        reference_task_name=ref or f"{task_def_name}_ref",
        seq=n,
        status=status,
        retry_count=retry_count,
        input_data=input_data or {},
        output_data=output_data or {},
        scheduled_time=scheduled_time,
        start_time=start_time,
        end_time=end_time,
        update_time=update_time if update_time is not None else max(scheduled_time, start_time, end_time),
        queue_name=queue_name,
        visible_at=scheduled_time,
        reason_for_incompletion=reason,
        worker_id=worker_id,
        domain=domain,
    )
