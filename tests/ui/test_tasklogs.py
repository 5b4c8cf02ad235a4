"""The task panel's log viewer endpoints (``apps.ui.tasklogs``): the lines after a line
id, a page at a time with ``more``, the task's status; the whole log as text; another
workflow's task is a 404. The panel's JSON counts the lines without reading them."""
from __future__ import annotations

import pytest

from apps.engine import executor, queue
from tests.ui.conftest import register_chain

pytestmark = pytest.mark.django_db


def test_lines_after_an_id_a_page_at_a_time_and_the_download(viewer_client, chain, monkeypatch):
    from apps.ui import tasklogs

    monkeypatch.setattr(tasklogs, "LINES_PER_READ", 2)
    wf = executor.workflow_start(name=chain, version=None, input={})
    task = queue.task_poll(task_type=f"{chain}_a", worker_id="w1")[0]
    for i in range(3):
        executor.task_log_add(task_id=task.task_id, log_line=f"line {i}")
    base = f"/execution/{wf}/task/{task.task_id}"
    first = viewer_client.get(base + "/logs.json").json()
    assert [x["log"] for x in first["lines"]] == ["line 0", "line 1"] and first["more"] is True
    assert first["taskStatus"] == "IN_PROGRESS" and first["terminal"] is False
    rest = viewer_client.get(base + "/logs.json", {"after": first["last"]}).json()
    assert [x["log"] for x in rest["lines"]] == ["line 2"] and rest["more"] is False
    again = viewer_client.get(base + "/logs.json", {"after": rest["last"]}).json()
    assert again["lines"] == [] and again["last"] == rest["last"]
    assert viewer_client.get(base + "/logs.json", {"after": "x"}).status_code == 400
    text = viewer_client.get(base + "/logs.txt").content.decode()
    assert [line.split("  ", 1)[1] for line in text.splitlines()] == ["line 0", "line 1", "line 2"]
    assert viewer_client.get(f"{base}.json").json()["logCount"] == 3
    other = executor.workflow_start(name=register_chain(), version=None, input={})
    assert viewer_client.get(f"/execution/{other}/task/{task.task_id}/logs.json").status_code == 404
