"""An SDK worker for the secrets e2e test (module level: ``TaskHandler`` spawns a process
per worker that re-imports this module). No ``from __future__ import annotations``: the
SDK reads the parameter annotations."""
import hashlib

from conductor.client.worker.worker_task import worker_task

SECRET_TASK = "e2e_secret_user"


@worker_task(task_definition_name=SECRET_TASK)
def use_secret(token: str, header: str) -> dict:
    """Reports digests of what it was given (the test compares them with the secret's) and
    echoes the value itself, as a careless worker would: the server must mask the echo."""
    return {"token_sha256": hashlib.sha256(token.encode()).hexdigest(),
            "header_sha256": hashlib.sha256(header.encode()).hexdigest(), "echo": token}
