"""The worker fast path (apps/api/fastpath.py) passes bodies through the same parsing gate
as the Django views and logs every 5xx with its traceback (issue #10)."""
from __future__ import annotations

import json
import logging

import pytest

from tests.asgi_client import asgi_request
from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)

FAST_PATHS = ["/api/tasks", "/api/tasks/update-v2", "/api/workflow"]


@pytest.mark.parametrize("path", FAST_PATHS)
def test_oversize_body_is_413(settings, path):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
    status, out = asgi_request("POST", path, {"name": "x" * 3000}, chunk_size=500)
    assert status == 413, out
    assert json.loads(out)["status"] == 413


def test_oversize_body_on_a_django_path_is_413(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
    status, out = asgi_request("POST", "/api/metadata/taskdefs", [task_def("x" * 3000)], chunk_size=500)
    assert status == 413, out


@pytest.mark.parametrize("path", FAST_PATHS)
@pytest.mark.parametrize("raw", ['{"a": NaN}', '{"outputData": {"a": -1e999}}', "[" * 5000 + "]" * 5000, '{"name": "\\udfff"}', b'{"name": "\xff"}'])
def test_bad_json_is_400(path, raw):
    status, out = asgi_request("POST", path, raw, chunk_size=4096)
    assert status == 400, out
    assert json.loads(out)["message"].startswith("Invalid JSON body")


def test_a_server_error_on_the_fast_path_is_logged(monkeypatch, caplog):
    from apps.engine import executor

    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(executor, "task_update", broken)
    with caplog.at_level(logging.ERROR, logger="apps.api.exceptions"):
        status, out = asgi_request("POST", "/api/tasks", {"workflowInstanceId": "w", "taskId": "t", "status": "COMPLETED"})
    assert status == 500
    assert json.loads(out)["message"] == "disk on fire"
    logged = [r for r in caplog.records if r.exc_info and "disk on fire" in str(r.exc_info[1])]
    assert logged, caplog.text


@pytest.mark.parametrize("value", [2**63, "AAA"])
def test_callback_after_seconds_on_the_fast_path(value):
    api = Api()
    task, name = unique("fa_task"), unique("fa_wf")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "t1")]))
    api.start(name)
    t = api.poll_one(task)
    status, out = asgi_request("POST", "/api/tasks", {"workflowInstanceId": t["workflowInstanceId"],
                                                      "taskId": t["taskId"], "status": "IN_PROGRESS",
                                                      "callbackAfterSeconds": value})
    assert status == 400, out
    assert json.loads(out)["validationErrors"][0]["path"] == "updateTask.arg0.callbackAfterSeconds"


def test_a_poll_query_that_is_not_utf8_is_a_400_on_the_fast_path():
    status, out = asgi_request("GET", "/api/tasks/poll/batch/some_task", b"", query="workerid=w%FF")
    assert status == 400, out
    assert "'workerid' is not valid UTF-8" in json.loads(out)["message"]
