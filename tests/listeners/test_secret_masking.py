"""Status listener payloads never carry a secret's value: a worker that echoes the secret
it was given into its output is reported (task COMPLETED, workflow COMPLETED) with ``***``
(docs/secrets.md)."""
from __future__ import annotations

import json

import pytest

from apps.metadata import secrets
from tests.factories import simple_task, task_def, unique, workflow_def
from tests.listeners.test_status_listeners import deliver_all

pytestmark = pytest.mark.django_db
VALUE = "listener-s3cret-77aa"


def test_listener_payloads_show_the_mask(api, clock, listener_settings, receiver):
    secrets.secret_put(name="listener_tok", value=VALUE)
    name, task_type = unique("listened_wf"), unique("listened_task")
    api.register_task_defs(task_def(task_type))
    api.register_workflow(workflow_def(name, [simple_task(task_type, "use", {"token": "${workflow.secrets.listener_tok}"})],
                                       outputParameters={"echo": "${use.output.echo}"},
                                       workflowStatusListenerEnabled=True))
    workflow_id = api.start(name, {})
    task = api.poll_one(task_type)
    assert task["inputData"]["token"] == VALUE
    api.complete(task, {"echo": f"got {VALUE}"})
    assert api.workflow(workflow_id)["output"] == {"echo": "got ***"}
    deliver_all()
    bodies = [r["body"] for r in receiver.delivered()]
    assert {(b.get("referenceTaskName"), b["status"]) for b in bodies} >= {("use", "COMPLETED"), (None, "COMPLETED")}
    text = json.dumps(bodies)
    assert VALUE not in text and "got ***" in text
