"""Conductor's JSON shapes of executions: ``Workflow``, ``Task``, ``WorkflowSummary``,
``TaskSummary`` (camelCase, times in epoch ms; summaries use ISO-8601 text).

Also ``WorkflowRun``/``TaskRun`` (execute and signal answers), the workflow status and
``EventExecution``. Written once here and used by the API, the failure workflow input,
``/workflow/test``, signals and event processing.
Null fields are omitted, as Conductor's Jackson config (NON_NULL) does.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone

from apps.engine.blueprint import Blueprint
from apps.engine.params import definition_ref, loop_iteration
from apps.engine.state import TaskState, WorkflowState


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def task_json(task: TaskState, wf: WorkflowState | None = None, blueprint: Blueprint | None = None,
              correlation_id: str | None = None) -> dict:
    """A task execution as Conductor's ``Task`` JSON. ``workflowTask`` is included when the
    task stores it or a blueprint of its workflow's definition is given."""
    workflow_task = task.workflow_task or None
    if workflow_task is None and blueprint is not None:
        ref = definition_ref(task)
        workflow_task = blueprint.get(ref)
    queue_wait = task.start_time - task.scheduled_time if task.start_time and task.scheduled_time else 0
    out = {
        # Conductor's SimpleTaskMapper sets a worker task's taskType to its name
        "taskType": task.task_def_name if task.task_type == "SIMPLE" else task.task_type,
        "status": task.status,
        "inputData": task.input_data,
        "referenceTaskName": task.reference_task_name,
        "retryCount": task.retry_count,
        "seq": task.seq,
        "correlationId": correlation_id if correlation_id is not None else (wf.correlation_id if wf else None),
        "pollCount": task.poll_count,
        "taskDefName": task.task_def_name,
        "scheduledTime": task.scheduled_time,
        "startTime": task.start_time,
        "endTime": task.end_time,
        "updateTime": task.update_time,
        "startDelayInSeconds": task.start_delay_seconds,
        "retriedTaskId": task.retried_task_id,
        "retried": task.retried,
        "executed": task.executed,
        "callbackFromWorker": True,
        "responseTimeoutSeconds": task.response_timeout_seconds,
        "rateLimitPerFrequency": task.rate_limit_per_frequency,
        "rateLimitFrequencyInSeconds": task.rate_limit_frequency_in_seconds,
        "workflowInstanceId": task.workflow_id,
        "workflowType": task.workflow_type,
        "taskId": task.task_id,
        "reasonForIncompletion": task.reason_for_incompletion,
        "callbackAfterSeconds": task.callback_after_seconds,
        "workerId": task.worker_id,
        "outputData": task.output_data,
        "workflowTask": workflow_task,
        "domain": task.domain,
        "workflowPriority": task.workflow_priority,
        "iteration": loop_iteration(task),
        "subWorkflowId": task.sub_workflow_id or (task.output_data or {}).get("subWorkflowId"),
        "firstStartTime": task.first_scheduled_time,
        "queueWaitTime": queue_wait,
        "loopOverTask": task.iteration > 0,
        "taskDefinition": (workflow_task or {}).get("taskDefinition"),
    }
    return _drop_none(out)


def workflow_json(wf: WorkflowState, *, include_tasks: bool = True) -> dict:
    """A workflow execution as Conductor's ``Workflow`` JSON (with ``tasks`` ordered by
    seq when ``include_tasks``; an empty list otherwise)."""
    blueprint = Blueprint(wf.definition) if include_tasks and wf.tasks else None
    out = {
        "ownerApp": None,
        "createTime": wf.create_time,
        "updateTime": wf.update_time,
        "createdBy": wf.created_by,
        "status": wf.status,
        "startTime": wf.create_time,
        "endTime": wf.end_time,
        "workflowId": wf.workflow_id,
        "parentWorkflowId": wf.parent_workflow_id,
        "parentWorkflowTaskId": wf.parent_workflow_task_id,
        "tasks": [task_json(t, wf, blueprint) for t in wf.tasks] if include_tasks else [],
        "input": wf.input,
        "output": wf.output,
        "correlationId": wf.correlation_id,
        "reRunFromWorkflowId": wf.re_run_from_workflow_id,
        "reasonForIncompletion": wf.reason_for_incompletion,
        "event": wf.event,
        "taskToDomain": wf.task_to_domain or {},
        "failedReferenceTaskNames": wf.failed_reference_task_names or [],
        "failedTaskNames": wf.failed_task_names or [],
        "workflowDefinition": wf.definition,
        "priority": wf.priority,
        "variables": wf.variables or {},
        "lastRetriedTime": wf.last_retried_time,
        "idempotencyKey": wf.idempotency_key,
        "workflowName": wf.workflow_name,
        "workflowVersion": wf.workflow_version,
        "history": [],
    }
    return _drop_none(out)


def iso_time(ms: int | None) -> str | None:
    """Epoch ms -> ``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'`` (UTC), as WorkflowSummary prints times."""
    if not ms:
        return None
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def workflow_summary_json(wf: WorkflowState) -> dict:
    """Conductor's ``WorkflowSummary``: times as ISO text, input/output as JSON text."""
    execution_time = wf.end_time - wf.create_time if wf.end_time else 0
    out = {
        "workflowType": wf.workflow_name,
        "version": wf.workflow_version,
        "workflowId": wf.workflow_id,
        "correlationId": wf.correlation_id,
        "startTime": iso_time(wf.create_time),
        "updateTime": iso_time(wf.update_time),
        "endTime": iso_time(wf.end_time),
        "status": wf.status,
        "input": json.dumps(wf.input),
        "output": json.dumps(wf.output),
        "reasonForIncompletion": wf.reason_for_incompletion,
        "executionTime": execution_time,
        "event": wf.event,
        "failedReferenceTaskNames": ",".join(wf.failed_reference_task_names or []),
        "priority": wf.priority,
        "failedTaskNames": wf.failed_task_names or [],
        "createdBy": wf.created_by,
        "taskToDomain": wf.task_to_domain or {},
        "idempotencyKey": wf.idempotency_key,
        "parentWorkflowId": wf.parent_workflow_id or "",
    }
    return _drop_none(out)


def _summary_time(ms: int | None) -> str:
    return iso_time(ms) or "1970-01-01T00:00:00.000Z"


def task_queue_wait_ms(task: TaskState, now: int) -> int:
    """Conductor's ``TaskModel.getQueueWaitTime`` (ms): start - scheduled, or, while a
    callback is pending, the time since the callback became due."""
    if task.start_time > 0 and task.scheduled_time > 0:
        if task.update_time > 0 and task.callback_after_seconds > 0:
            wait = now - (task.update_time + task.callback_after_seconds * 1000)
            return wait if wait > 0 else 0
        return task.start_time - task.scheduled_time
    return 0


def task_summary_json(task: TaskState, correlation_id: str | None = None, *, now: int) -> dict:
    """Conductor's ``TaskSummary``: times as ``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'`` text (epoch 0
    prints ``1970-01-01T00:00:00.000Z``), input/output as JSON text, ``executionTime``
    (end - start, ms, 0 until the task ends) and ``queueWaitTime`` (ms). ``taskType`` is
    the task's name for SIMPLE tasks, as in Conductor. Null fields are omitted. ``now``
    (epoch ms) is the time ``queueWaitTime`` is measured at."""
    out = {
        "workflowId": task.workflow_id,
        "workflowType": task.workflow_type,
        "correlationId": correlation_id,
        "scheduledTime": _summary_time(task.scheduled_time),
        "startTime": _summary_time(task.start_time),
        "updateTime": _summary_time(task.update_time),
        "endTime": _summary_time(task.end_time),
        "status": task.status,
        "reasonForIncompletion": task.reason_for_incompletion,
        "executionTime": task.end_time - task.start_time if task.end_time > 0 and task.start_time > 0 else 0,
        "queueWaitTime": task_queue_wait_ms(task, now),
        "taskDefName": task.task_def_name,
        "taskType": task.task_def_name if task.task_type == "SIMPLE" else task.task_type,
        "input": json.dumps(task.input_data),
        "output": json.dumps(task.output_data),
        "taskId": task.task_id,
        "workflowPriority": task.workflow_priority,
        "domain": task.domain,
    }
    return {k: v for k, v in out.items() if v is not None}


def workflow_status_json(wf: WorkflowState, *, include_output: bool = False, include_variables: bool = False) -> dict:
    """``GET /workflow/{id}/status``: ``{workflowId, correlationId?, output?, variables?,
    status}``."""
    out = {"workflowId": wf.workflow_id, "status": wf.status}
    if wf.correlation_id:
        out["correlationId"] = wf.correlation_id
    if include_output:
        out["output"] = wf.output
    if include_variables:
        out["variables"] = wf.variables
    return out


def workflow_run_json(wf: WorkflowState, *, target: WorkflowState, strategy: str, request_id: str | None,
                      signal_timeout: bool) -> dict:
    """Conductor's ``WorkflowRun`` (a SignalResponse) of ``wf``; ``target*`` name the
    workflow of the request. Times in epoch ms."""
    full = workflow_json(wf)
    out = {
        "responseType": strategy,
        "targetWorkflowId": target.workflow_id,
        "targetWorkflowStatus": target.status,
        "requestId": request_id,
        "workflowId": wf.workflow_id,
        "correlationId": wf.correlation_id,
        "input": wf.input,
        "output": wf.output,
        "signalTimeout": signal_timeout,
        "priority": wf.priority or 0,
        "variables": wf.variables or {},
        "tasks": full.get("tasks", []),
        "createdBy": wf.created_by,
        "createTime": wf.create_time,
        "updateTime": wf.update_time or 0,
        "status": wf.status,
    }
    return {k: v for k, v in out.items() if v is not None}


def task_run_json(task: TaskState, *, target: WorkflowState, strategy: str, request_id: str | None,
                  signal_timeout: bool, correlation_id: str | None = None) -> dict:
    """Conductor's ``TaskRun`` (a SignalResponse) of a blocking task: ``input``/``output``
    are the task's, ``workflowId`` is the workflow holding it, ``createdBy`` its worker,
    ``createTime`` its start time (epoch ms)."""
    out = {
        "responseType": strategy,
        "targetWorkflowId": target.workflow_id,
        "targetWorkflowStatus": target.status,
        "requestId": request_id,
        "workflowId": task.workflow_id,
        "correlationId": correlation_id,
        "input": task.input_data,
        "output": task.output_data,
        "signalTimeout": signal_timeout,
        "taskType": task.task_def_name if task.task_type == "SIMPLE" else task.task_type,
        "taskId": task.task_id,
        "referenceTaskName": task.reference_task_name,
        "retryCount": task.retry_count,
        "taskDefName": task.task_def_name,
        "retriedTaskId": task.retried_task_id,
        "workflowType": task.workflow_type,
        "reasonForIncompletion": task.reason_for_incompletion,
        "priority": task.workflow_priority or 0,
        "createdBy": task.worker_id,
        "createTime": task.start_time,
        "updateTime": task.update_time,
        "status": task.status,
    }
    return {k: v for k, v in out.items() if v is not None}


def event_execution_json(row) -> dict:
    """An ``EventExecution`` row as Conductor's EventExecution JSON: ``{id, messageId, name,
    event, created (epoch ms), status, action?, output}``; ``id`` is
    ``<messageId>_<action index>``."""
    out = {"id": f"{row.message_id}_{max(row.action_index, 0)}", "messageId": row.message_id,
           "name": row.handler_name, "event": row.event, "created": row.created_time, "status": row.status}
    if row.action:
        out["action"] = row.action
    out["output"] = row.output
    return out
