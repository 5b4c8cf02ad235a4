"""The poll path production uses, in process: a worker's loop (batch poll, ``update-v2``
answering the next task, ``POST /api/tasks``) through ``conductor_web.asgi.application``,
which uvicorn serves and where ``apps/api/fastpath.py`` answers these calls before Django.
The result is read back through the API and must be what the Django views give."""
from __future__ import annotations

import json

import pytest

from tests.asgi_client import asgi_request
from tests.factories import Api, simple_task, task_def, unique, workflow_def

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api() -> Api:
    return Api()


def test_a_worker_loop_through_the_asgi_fast_path(api, monkeypatch):
    from apps.engine import queue

    polls = []
    one_poll = queue.poll

    async def spy(**kwargs):
        polls.append(kwargs["in_caller_thread"])
        return await one_poll(**kwargs)

    # the one poll, as both entry points call it: the Django views in their request thread,
    # the fast path with its attempts in pool threads
    monkeypatch.setattr(queue, "poll", spy)
    task = unique("fast_task")
    name = unique("fast_wf")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "a", {"x": "${workflow.input.x}"}),
                                              simple_task(task, "b", {"y": "${a.output.y}"})]))
    status, out = asgi_request("POST", "/api/workflow", {"name": name, "input": {"x": 1}})
    assert status == 200
    wid = out.decode()

    status, out = asgi_request("GET", f"/api/tasks/poll/batch/{task}", b"", query="workerid=w1&count=5&timeout=100")
    assert status == 200
    polled = json.loads(out)
    assert [(t["referenceTaskName"], t["inputData"], t["status"]) for t in polled] == [("a", {"x": 1}, "IN_PROGRESS")]

    # update-v2 answers the next task of the same type for the same worker
    status, out = asgi_request("POST", "/api/tasks/update-v2", {
        "workflowInstanceId": wid, "taskId": polled[0]["taskId"], "status": "COMPLETED", "outputData": {"y": 2}})
    assert status == 200
    following = json.loads(out)
    assert (following["referenceTaskName"], following["inputData"], following["workerId"]) == ("b", {"y": 2}, "w1")

    status, out = asgi_request("POST", "/api/tasks", {
        "workflowInstanceId": wid, "taskId": following["taskId"], "status": "COMPLETED", "outputData": {"z": 3}})
    assert (status, out.decode()) == (200, following["taskId"])

    # an empty queue: 200 [] after the (short) long poll
    status, out = asgi_request("GET", f"/api/tasks/poll/batch/{task}", b"", query="workerid=w1&timeout=50")
    assert (status, json.loads(out)) == (200, [])
    assert polls == [False, False], "the fast path did not answer the polls"

    wf = api.ok(api.get(f"/workflow/{wid}", {"includeTasks": True})).json()
    assert wf["status"] == "COMPLETED"
    assert [(t["referenceTaskName"], t["status"], t["workerId"]) for t in wf["tasks"]] == [
        ("a", "COMPLETED", "w1"), ("b", "COMPLETED", "w1")]
    assert wf["output"] == {"z": 3}


def test_a_long_poll_over_the_limit_is_refused_like_the_django_view(api):
    status, out = asgi_request("GET", "/api/tasks/poll/batch/anything", b"", query="timeout=5001")
    django_view = api.get("/tasks/poll/batch/anything", {"timeout": 5001})
    assert status == django_view.status_code == 400
    assert json.loads(out)["message"] == django_view.json()["message"] == \
        "Long Poll Timeout value cannot be more than 5 seconds"


def test_a_long_poll_on_the_fast_path_is_answered_by_a_workflow_started_while_it_waits(api):
    """The long poll waits on the event loop; the start commits in another thread and the
    poll hands out the task it queued (woken by ``notify``, or at the latest by its re-check)."""
    import threading

    task = unique("fast_wait_task")
    name = unique("fast_wait_wf")
    api.register_task_defs(task_def(task))
    api.register_workflow(workflow_def(name, [simple_task(task, "a", {"x": "${workflow.input.x}"})]))
    answer = {}

    def poll():
        answer["poll"] = asgi_request("GET", f"/api/tasks/poll/batch/{task}", b"", query="workerid=w&timeout=5000")

    poller = threading.Thread(target=poll)
    poller.start()
    status, out = asgi_request("POST", "/api/workflow", {"name": name, "input": {"x": 7}})
    assert status == 200
    poller.join(timeout=60)
    assert not poller.is_alive()
    status, out = answer["poll"]
    assert status == 200
    polled = json.loads(out)
    if not polled:  # the poll's 5 s ran out before the start committed (a very loaded machine)
        status, out = asgi_request("GET", f"/api/tasks/poll/batch/{task}", b"", query="workerid=w&timeout=0")
        polled = json.loads(out)
    assert [(t["referenceTaskName"], t["inputData"], t["workerId"]) for t in polled] == [("a", {"x": 7}, "w")]
