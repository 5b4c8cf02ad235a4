"""Identifiers: random UUID v4 strings, as Conductor's IDGenerator."""
import uuid


def new_id() -> str:
    """A new random id (UUID v4 text, 36 chars) for a workflow or task execution."""
    return str(uuid.uuid4())


def sub_workflow_id(parent_workflow_id: str, parent_task_id: str, retry_count: int) -> str:
    """Deterministic child id (UUID v3) so that a re-run start is idempotent.

    Source: Conductor names sub-workflows ``subworkflow:<parentWfId>:<parentTaskId>:<retryCount>``.
    """
    return str(uuid.uuid3(uuid.NAMESPACE_OID, f"subworkflow:{parent_workflow_id}:{parent_task_id}:{retry_count}"))
