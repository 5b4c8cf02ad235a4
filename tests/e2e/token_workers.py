"""An SDK worker for the token-renewal e2e test (module level: ``TaskHandler`` spawns a
process per worker that re-imports this module). No ``from __future__ import
annotations``: the SDK reads the parameter annotations."""
from conductor.client.worker.worker_task import worker_task

ECHO_TASK = "e2e_token_renewal_echo"


@worker_task(task_definition_name=ECHO_TASK)
def token_echo(value: str) -> dict:
    """Answers its input: the test only needs a worker that keeps polling and updating."""
    return {"echo": value}
