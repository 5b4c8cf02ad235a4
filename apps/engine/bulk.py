"""Bulk actions over workflow executions: one engine service per id, failures collected.

``bulk_action(action, workflow_ids, **kwargs)`` mirrors Conductor's
``WorkflowBulkServiceImpl``: the id list must be non-empty and hold at most 1000 ids
(Conductor's bean validation on ``WorkflowBulkService``); then each id runs through the
same service the single-workflow endpoint uses, in its own transaction, and an error
for one id (its message) goes to ``bulkErrorResults`` without stopping the others.
The answer is Conductor's ``BulkResponse`` as a camelCase dict:
``{"bulkErrorResults": {id: message}, "bulkSuccessfulResults": [id, ...]}`` (the Java
``message`` field is never serialised, so it is absent here too).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from apps.core.errors import ConductorError, InvalidInput, validation_failed
from apps.engine import executor, recovery, selectors

log = logging.getLogger(__name__)

MAX_REQUEST_ITEMS = 1000

# action -> Conductor's WorkflowBulkService method (the bean-validation path prefix)
_METHODS = {
    "pause": "pauseWorkflow",
    "resume": "resumeWorkflow",
    "restart": "restart",
    "retry": "retry",
    "terminate": "terminate",
    "remove": "deleteWorkflow",
    "terminate-remove": "terminateRemove",
    "search": "searchWorkflow",
}

ACTIONS = tuple(_METHODS)


def validate_workflow_ids(workflow_ids: Any, *, action: str) -> list[str]:
    """The id list of a bulk request, or Conductor's bean-validation 400:
    ``WorkflowIds list cannot be null.`` (missing or empty) and
    ``Cannot process more than 1000 workflows. Please use multiple requests.``
    (path ``<method>.arg0``). Ids must be strings (numbers are taken as text)."""
    path = f"{_METHODS.get(action, action)}.arg0"
    if workflow_ids is None or (isinstance(workflow_ids, (list, tuple)) and not workflow_ids):
        raise validation_failed([{"path": path, "message": "WorkflowIds list cannot be null."}])
    if not isinstance(workflow_ids, (list, tuple)):
        raise InvalidInput("The request body must be a JSON list of workflow ids")
    if len(workflow_ids) > MAX_REQUEST_ITEMS:
        raise validation_failed([{"path": path, "message": f"Cannot process more than {MAX_REQUEST_ITEMS} "
                                                           "workflows. Please use multiple requests."}])
    ids = []
    for item in workflow_ids:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise InvalidInput(f"Workflow ids must be strings, got: {item!r}")
        ids.append(item if isinstance(item, str) else str(item))
    return ids


def _operation(action: str, kwargs: dict) -> Callable[[str], Any]:
    if action == "pause":
        return lambda wid: executor.workflow_pause(workflow_id=wid)
    if action == "resume":
        return lambda wid: executor.workflow_resume(workflow_id=wid)
    if action == "restart":
        use_latest = bool(kwargs.get("use_latest_definitions", False))
        return lambda wid: recovery.workflow_restart(workflow_id=wid, use_latest_definitions=use_latest)
    if action == "retry":
        resume_sub = bool(kwargs.get("resume_subworkflow_tasks", False))
        return lambda wid: recovery.workflow_retry(workflow_id=wid, resume_subworkflow_tasks=resume_sub)
    if action == "terminate":
        reason = kwargs.get("reason")
        trigger = bool(kwargs.get("trigger_failure_workflow", False))
        return lambda wid: executor.workflow_terminate(workflow_id=wid, reason=reason, trigger_failure_workflow=trigger)
    if action == "remove":
        archive = bool(kwargs.get("archive_workflow", True))
        return lambda wid: executor.workflow_remove(workflow_id=wid, archive=archive)
    if action == "search":
        from apps.engine.representation import workflow_json

        include_tasks = bool(kwargs.get("include_tasks", True))
        return lambda wid: workflow_json(selectors.workflow_get(workflow_id=wid, include_tasks=include_tasks),
                                         include_tasks=include_tasks)
    raise InvalidInput(f"Unknown bulk action: {action}. Must be one of {', '.join(ACTIONS)}")


def _message(exc: Exception) -> str:
    if isinstance(exc, ConductorError):
        return exc.message
    return str(exc) or exc.__class__.__name__


def _run(op: Callable[[str], Any], workflow_id: str, action: str, response: dict, *, result_is_id: bool = True) -> None:
    try:
        result = op(workflow_id)
    except Exception as exc:  # noqa: BLE001 - Conductor records every per-id failure and goes on
        if isinstance(exc, ConductorError):
            log.info("bulk %s of %s failed: %s", action, workflow_id, exc.message)
        else:
            log.error("bulk %s of %s failed", action, workflow_id, exc_info=exc)
        response["bulkErrorResults"][workflow_id] = _message(exc)
        return
    response["bulkSuccessfulResults"].append(workflow_id if result_is_id else result)


def bulk_action(action: str, workflow_ids: list[str], **kwargs: Any) -> dict:
    """Run one action for each workflow id; return Conductor's BulkResponse dict.

    ``action`` and its keyword arguments (snake_case, defaults as Conductor's query
    parameters):

    * ``pause`` / ``resume``: ``executor.workflow_pause`` / ``workflow_resume``.
    * ``restart``: ``use_latest_definitions=False`` -> ``recovery.workflow_restart``.
    * ``retry``: ``resume_subworkflow_tasks=False`` -> ``recovery.workflow_retry``
      (the REST bulk retry always passes False, as Conductor does).
    * ``terminate``: ``reason=None``, ``trigger_failure_workflow=False`` ->
      ``executor.workflow_terminate``.
    * ``remove``: ``archive_workflow=True`` -> ``executor.workflow_remove``.
    * ``terminate-remove``: ``reason``, ``archive_workflow=True``: terminate, then remove,
      each recorded on its own (Conductor lists an id that passes both twice in
      ``bulkSuccessfulResults``; a terminate error such as "Cannot terminate a COMPLETED
      workflow." is recorded and the remove still runs).
    * ``search``: ``include_tasks=True``; successful results are Workflow JSON dicts
      instead of ids (``BulkResponse<WorkflowModel>``).

    Shapes: returns ``{"bulkErrorResults": {id: message}, "bulkSuccessfulResults": [...]}``
    in request order; a repeated id is processed each time it appears.
    Errors: InvalidInput (bean-validation body) for an empty/missing list, more than 1000
    ids or non-string ids; InvalidInput for an unknown action. Per-id errors (any
    exception, ConductorError or not) never propagate.
    Side effects: whatever each service does; each id commits on its own, so earlier ids
    stay done if a later one fails.
    Source: ``WorkflowBulkServiceImpl`` / ``WorkflowBulkResource``.
    """
    if action not in _METHODS:
        raise InvalidInput(f"Unknown bulk action: {action}. Must be one of {', '.join(ACTIONS)}")
    ids = validate_workflow_ids(workflow_ids, action=action)
    response: dict = {"bulkErrorResults": {}, "bulkSuccessfulResults": []}
    if action == "terminate-remove":
        terminate = _operation("terminate", {"reason": kwargs.get("reason")})
        remove = _operation("remove", {"archive_workflow": kwargs.get("archive_workflow", True)})
        for wid in ids:
            _run(terminate, wid, "terminate", response)
            _run(remove, wid, "remove", response)
        return response
    op = _operation(action, kwargs)
    for wid in ids:
        _run(op, wid, action, response, result_is_id=(action != "search"))
    return response
