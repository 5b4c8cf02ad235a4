"""Structured logs (apps/core/logs.py): the engine's context on every line, as JSON with
LOG_FORMAT=json."""
from __future__ import annotations

import io
import json
import logging

import pytest

from apps.core.logs import ContextFilter, JsonFormatter, log_context


@pytest.fixture
def json_lines():
    """Lines written through a handler configured as settings.LOGGING does for json."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("apps")
    logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)


def test_context_fields_land_on_each_line_and_nest(json_lines):
    log = logging.getLogger("apps.test")
    with log_context(workflowId="wf-1", workerId="w-1"):
        log.warning("outer %s", 1)
        with log_context(taskId="t-1", taskType="HTTP", workerId=None):
            log.warning("inner")
    log.warning("outside")
    outer, inner, outside = json_lines()
    assert outer["message"] == "outer 1" and outer["level"] == "WARNING" and outer["logger"] == "apps.test"
    assert (outer["workflowId"], outer["workerId"]) == ("wf-1", "w-1") and "taskId" not in outer
    assert {k: inner[k] for k in ("workflowId", "taskId", "taskType", "workerId")} == \
        {"workflowId": "wf-1", "taskId": "t-1", "taskType": "HTTP", "workerId": "w-1"}
    assert not {"workflowId", "taskId"} & set(outside)
    assert outer["time"].endswith("Z")


@pytest.mark.django_db
def test_a_failing_system_task_logs_its_execution_task_and_worker(json_lines, monkeypatch, settings):
    from apps.engine import executor, jobs
    from apps.engine.models import TaskExecution
    from apps.engine.task_types.http import Http
    from tests.cases.harness import install_job_capture
    from tests.factories import unique, workflow_def

    install_job_capture(monkeypatch, [])

    def boom(self, task):
        raise RuntimeError("target exploded")

    monkeypatch.setattr(Http, "run_async", boom)
    name = unique("log_wf")
    wf_id = executor.workflow_start(name=name, input={}, workflow_def=workflow_def(name, [
        {"name": "call", "taskReferenceName": "call", "type": "HTTP",
         "inputParameters": {"http_request": {"uri": "http://127.0.0.1:9/", "method": "GET"}}}]))
    task_id = TaskExecution.objects.get(workflow_id=wf_id).task_id
    jobs.system_task_job(task_id)
    [line] = [entry for entry in json_lines() if entry["message"].startswith("system task")]
    assert line["level"] == "ERROR" and "target exploded" in line["exc"]
    assert (line["workflowId"], line["taskId"], line["taskType"], line["workerId"]) == \
        (wf_id, task_id, "HTTP", settings.CONDUCTOR["INSTANCE_ID"])


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/metadata/workflow", "/executions/"])
def test_a_bad_host_header_is_a_400_and_one_line(client, caplog, path):
    """DisallowedHost was logged with its whole traceback for every scanner's request."""
    with caplog.at_level(logging.WARNING, logger="django.security"):
        resp = client.get(path, HTTP_HOST="evil.invalid")
    assert resp.status_code == 400
    records = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert len(records) == 1 and "evil.invalid" in records[0].getMessage()
    assert records[0].exc_info is None and "Traceback" not in caplog.text
