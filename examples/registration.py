"""How the examples register their WorkflowDefs: only when the server lacks them.

``make run`` loads ``examples/definitions/*.json``; an example run afterwards leaves those
(and any version edited in the UI since) as they are instead of overwriting them. The
check is a read any access key may make; registering needs an admin key.
"""
from conductor.client.http.rest import ApiException
from conductor.client.workflow.conductor_workflow import ConductorWorkflow
from conductor.client.workflow.executor.workflow_executor import WorkflowExecutor


def register_unless_present(executor: WorkflowExecutor, workflow: ConductorWorkflow) -> bool:
    """Register ``workflow`` unless the server has its name and version; True when it was
    registered. Raises the SDK's ApiException for any other failure (403: the key's role
    may not register definitions)."""
    try:
        executor.metadata_client.get(workflow.name, version=workflow.version)
        return False
    except ApiException as exc:
        if exc.status != 404:
            raise
    workflow.register(overwrite=False)
    return True
