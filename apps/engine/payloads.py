"""External payload storage: Conductor's ``ExternalPayloadStorage`` with a table of ours
(``ExternalPayload``) behind it.

An SDK whose workflow input or task output is above its client threshold asks
``GET /api/{workflow,tasks}/externalstoragelocation?operation=WRITE&payloadType=...`` for a
location, PUTs the JSON to the location's URI and sends the location's ``path`` instead of the
data (``externalInputPayloadStoragePath`` of a StartWorkflowRequest,
``externalOutputPayloadStoragePath`` of a TaskResult). The engine reads the payload back when
the request arrives (``payload_read``) and works with the data itself, so the decider, the
expressions and the API see it as if it had been sent inline.

Sizes are those of the payload's JSON in bytes, the thresholds of
``settings.CONDUCTOR_PAYLOAD_THRESHOLDS_KB`` in KB (Conductor's ``...PayloadSizeThreshold`` and
``max...PayloadSizeThreshold``, same defaults). Conductor's messages are kept.
"""
from __future__ import annotations

import json
import uuid

from django.conf import settings
from django.db import IntegrityError, transaction

from apps.core.clock import now_ms
from apps.core.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge
from apps.engine.models import ExternalPayload

PAYLOAD_TYPES = ("WORKFLOW_INPUT", "WORKFLOW_OUTPUT", "TASK_INPUT", "TASK_OUTPUT")
OPERATIONS = ("READ", "WRITE")


def max_payload_bytes(payload_type: str) -> int:
    """The max threshold of ``payload_type`` in bytes (KB setting x 1024, as Conductor)."""
    if payload_type == "TASK_OUTPUT":  # one setting for the API's check and the engine's
        return int(settings.CONDUCTOR["MAX_TASK_OUTPUT_PAYLOAD_KB"]) * 1024
    return settings.CONDUCTOR_PAYLOAD_THRESHOLDS_KB[payload_type][1] * 1024


def json_size(data) -> int:
    """Bytes of ``data`` serialised as compact JSON (UTF-8), the size the thresholds compare."""
    # surrogatepass: a lone surrogate escape is valid JSON and must not make this raise
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass"))


def new_payload_path(payload_type: str) -> str:
    """A fresh storage path for a WRITE location: ``<payloadType lowercased>/<uuid>.json``."""
    return f"{payload_type.lower()}/{uuid.uuid4()}.json"


def payload_store(*, path: str, payload_type: str, body: bytes) -> int:
    """Store the uploaded ``body`` (a JSON object) at ``path``; returns its size in bytes.
    Raises PayloadTooLarge (413) above the type's max threshold, InvalidInput (400) when the
    body is not a JSON object, Conflict (409) when the path was already written."""
    limit = max_payload_bytes(payload_type)
    if len(body) > limit:
        raise PayloadTooLarge(f"The payload size: {len(body)} is greater than the permissible limit: {limit} bytes")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("The payload must be a JSON object") from None
    if not isinstance(data, dict):
        raise InvalidInput("The payload must be a JSON object")
    try:
        with transaction.atomic():
            ExternalPayload.objects.create(path=path, payload_type=payload_type, data=data, size_bytes=len(body),
                                           created_time=now_ms())
    except IntegrityError:
        raise Conflict(f"A payload is already stored at {path}") from None
    return len(body)


def payload_read(path: str, *, field: str) -> dict:
    """The payload stored at ``path`` (a dict). Raises InvalidInput (400, naming ``field``)
    when nothing is stored there (Conductor: "Unable to download payload from external
    storage path")."""
    data = ExternalPayload.objects.filter(path=path).values_list("data", flat=True).first()
    if data is None:
        raise InvalidInput(f"{field}: Unable to download payload from external storage path: {path}")
    return data


def payload_raw(path: str) -> bytes:
    """The stored payload at ``path`` as JSON bytes (for the signed download). NotFound (404)."""
    data = ExternalPayload.objects.filter(path=path).values_list("data", flat=True).first()
    if data is None:
        raise NotFound(f"No payload is stored at {path}")
    return json.dumps(data, separators=(",", ":")).encode()


def internalize_task_result(result: dict) -> dict:
    """A TaskResult dict with its externalized output read back, and Conductor's max check.

    * ``externalOutputPayloadStoragePath`` set: ``outputData`` becomes the stored payload
      (InvalidInput when nothing is stored there).
    * ``outputData`` above the TASK_OUTPUT max threshold: the result becomes
      FAILED_WITH_TERMINAL_ERROR with Conductor's reason and an empty output
      (ExternalPayloadStorageUtils.failTask).

    Runs before the workflow's lock is taken. Returns a new dict (the input is not changed).
    """
    path = result.get("externalOutputPayloadStoragePath")
    if not path and not result.get("outputData"):
        return result
    result = dict(result)
    if path:
        result["outputData"] = payload_read(path, field="externalOutputPayloadStoragePath")
    size = json_size(result.get("outputData") or {})
    limit = max_payload_bytes("TASK_OUTPUT")
    if size > limit:
        result["status"] = "FAILED_WITH_TERMINAL_ERROR"
        result["outputData"] = {}
        result["reasonForIncompletion"] = too_large_reason(size, result.get("taskId"),
                                                           result.get("workflowInstanceId"), limit)
    return result


def too_large_reason(size: int, task_id, workflow_id, limit: int) -> str:
    """Conductor's reason for a task output above the max threshold (bytes)."""
    return (f"The payload size: {size} of task: {task_id} in workflow: {workflow_id}  "
            f"is greater than the permissible limit: {limit} bytes")


def internalize_workflow_input(req: dict) -> dict:
    """The ``input`` of a StartWorkflowRequest dict: the stored payload when
    ``externalInputPayloadStoragePath`` is set, else its ``input`` (``{}`` when absent).
    Raises InvalidInput above the WORKFLOW_INPUT max threshold (Conductor: "The payload size:
    %d of workflow ... is greater than the permissible limit") or when nothing is stored."""
    path = req.get("externalInputPayloadStoragePath")
    data = payload_read(path, field="externalInputPayloadStoragePath") if path else req.get("input")
    data = {} if data is None else data
    if data:
        size, limit = json_size(data), max_payload_bytes("WORKFLOW_INPUT")
        if size > limit:
            raise InvalidInput(f"The payload size: {size} of workflow: {req.get('name')} is greater than the "
                               f"permissible limit: {limit} bytes")
    return data
