"""The live execution channel (apps/ui/consumers.py) driven with Channels'
WebsocketCommunicator: snapshot on connect, deltas with consecutive seq, resync,
changes seen whichever way they were made, and refusal of users who may not view."""
from __future__ import annotations

import asyncio
import time

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from apps.engine import executor, queue
from apps.engine.models import WorkflowExecution
from apps.ui import live
from apps.ui.routing import websocket_urlpatterns
from tests.ui.conftest import make_user, register_chain

pytestmark = pytest.mark.django_db(transaction=True)

# Waits are bounded polls for a condition, never a measure of speed: a loaded machine may
# take many seconds for what takes milliseconds alone (issue #14).
WAIT_SECONDS = 60
# The consumer's own polling when a test proves that something else (the after-commit
# wake-up through the channel layer) brought the message: far longer than WAIT_SECONDS, so
# polling cannot explain a message that arrives within the wait.
POLL_NEVER_SECONDS = 3600


@pytest.fixture(autouse=True)
def fresh_layer(settings):
    """A new in-memory channel layer per test (each test has its own event loop)."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def ui_settings(settings, **values):
    settings.CONDUCTOR_UI = {**settings.CONDUCTOR_UI, **values}


async def connect(workflow_id: str, user) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/executions/{workflow_id}/")
    comm.scope["user"] = user
    connected, _ = await comm.connect(timeout=WAIT_SECONDS)
    assert connected
    return comm


@database_sync_to_async
def setup(n_refs=("a", "b")):
    user = make_user("watcher", "view_executions")
    name = register_chain(refs=n_refs)
    wf_id = executor.workflow_start(name=name, input={"x": 1})
    return user, name, wf_id


async def receive(comm, kind=None, timeout=WAIT_SECONDS):
    """The next message (of type ``kind`` if given), waiting at most ``timeout`` seconds."""
    msg = await comm.receive_json_from(timeout=timeout)
    if kind:
        assert msg["type"] == kind, msg
    return msg


async def test_anonymous_and_unprivileged_users_are_refused():
    user, name, wf_id = await setup()
    for who in (AnonymousUser(), await database_sync_to_async(make_user)("plain")):
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/executions/{wf_id}/")
        comm.scope["user"] = who
        connected, code = await comm.connect(timeout=WAIT_SECONDS)
        assert not connected and code == 4403
        await comm.disconnect()


async def test_snapshot_then_delta_on_an_action(settings):
    ui_settings(settings, LIVE_POLL_SECONDS=POLL_NEVER_SECONDS)  # the delta comes from the wake-up
    user, name, wf_id = await setup()
    comm = await connect(wf_id, user)
    snap = await receive(comm, "snapshot")
    assert snap["seq"] == 1
    data = snap["data"]
    assert data["header"]["status"] == "RUNNING" and data["header"]["allowedActions"] == ["pause", "terminate"]
    assert [r["ref"] for r in data["tasks"]] == ["a"]
    assert {n["id"] for n in data["graph"]["nodes"]} >= {"a", "b", "__start", "__end"}

    await database_sync_to_async(executor.workflow_pause)(workflow_id=wf_id)
    delta = await receive(comm, "delta")
    assert delta["seq"] == 2
    assert delta["data"]["header"]["status"] == "PAUSED"
    assert delta["data"]["header"]["allowedActions"] == ["resume", "terminate"]
    assert "graph" not in delta["data"]  # same structure: no re-layout
    await comm.disconnect()


async def test_node_changes_colour_when_a_worker_completes_its_task():
    user, name, wf_id = await setup()
    comm = await connect(wf_id, user)
    first = (await receive(comm, "snapshot"))["data"]
    nodes = {n["id"]: n for n in first["graph"]["nodes"]}
    assert nodes["a"]["status"] == "SCHEDULED" and nodes["b"]["status"] is None

    @database_sync_to_async
    def work():
        task = queue.task_poll(task_type=f"{name}_a", worker_id="w")[0]
        executor.task_update(task_result={"workflowInstanceId": wf_id, "taskId": task.task_id,
                                          "status": "COMPLETED", "outputData": {"ok": 1}})

    await work()
    state = first
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        msg = await receive(comm, "delta")
        state = live.apply_delta(state, msg["data"])
        node_status = {n["id"]: n["status"] for n in state["graph"]["nodes"]}
        if node_status["a"] == "COMPLETED" and node_status["b"] == "SCHEDULED":
            break
    else:
        pytest.fail("no delta with the completed task")
    assert {r["ref"]: r["status"] for r in state["tasks"]} == {"a": "COMPLETED", "b": "SCHEDULED"}
    # the deltas applied to the first snapshot give exactly a fresh snapshot
    fresh = await database_sync_to_async(live.build_snapshot)(wf_id)
    for key in ("header", "payloads", "graph", "tasks"):
        assert state[key] == fresh[key], key
    await comm.disconnect()


async def test_changes_from_another_process_are_seen_by_polling(settings):
    """No in-process notification at all: a direct database write (as another process
    would make) is picked up by the consumer's polling (every 0.3 s here)."""
    ui_settings(settings, LIVE_POLL_SECONDS=0.3)
    user, name, wf_id = await setup()
    comm = await connect(wf_id, user)
    await receive(comm, "snapshot")

    @database_sync_to_async
    def other_process_write():
        wf = WorkflowExecution.objects.get(pk=wf_id)
        WorkflowExecution.objects.filter(pk=wf_id).update(status="PAUSED", update_time=wf.update_time + 1)

    await other_process_write()
    delta = await receive(comm, "delta")
    assert delta["data"]["header"]["status"] == "PAUSED"
    await comm.disconnect()


async def test_in_process_changes_wake_the_consumer_at_once(settings):
    """With polling slowed past the wait, the engine's after-commit hook still brings the
    delta through the channel layer."""
    ui_settings(settings, LIVE_POLL_SECONDS=POLL_NEVER_SECONDS)
    user, name, wf_id = await setup()
    comm = await connect(wf_id, user)
    await receive(comm, "snapshot")
    await database_sync_to_async(executor.workflow_terminate)(workflow_id=wf_id, reason="stop")
    delta = await receive(comm, "delta")
    assert delta["data"]["header"]["status"] == "TERMINATED"
    assert {r["status"] for r in delta["data"]["tasks"]} == {"CANCELED"}
    await comm.disconnect()


async def test_a_poll_wakes_the_consumer(settings):
    """A task handed to a worker by a poll (SCHEDULED -> IN_PROGRESS) reaches the live
    page through the after-commit hook, not only through the page's own polling
    (slowed past the wait here)."""
    ui_settings(settings, LIVE_POLL_SECONDS=POLL_NEVER_SECONDS)
    user, name, wf_id = await setup()
    comm = await connect(wf_id, user)
    await receive(comm, "snapshot")
    polled = await database_sync_to_async(queue.task_poll)(task_type=f"{name}_a", worker_id="w-live")
    assert [t.workflow_id for t in polled] == [wf_id]
    delta = await receive(comm, "delta")
    rows = {r["ref"]: r for r in delta["data"]["tasks"]}
    assert rows["a"]["status"] == "IN_PROGRESS" and rows["a"]["workerId"] == "w-live"
    await comm.disconnect()


async def test_resync_sends_a_fresh_snapshot_and_keeps_counting():
    user, name, wf_id = await setup()
    comm = await connect(wf_id, user)
    assert (await receive(comm, "snapshot"))["seq"] == 1
    await comm.send_json_to({"type": "resync"})
    again = await receive(comm, "snapshot")
    assert again["seq"] == 2 and again["data"]["header"]["workflowId"] == wf_id
    await comm.send_json_to({"type": "ping"})
    assert (await receive(comm, "pong"))["seq"] == 2
    await comm.disconnect()


async def test_no_message_while_nothing_changes(settings):
    ui_settings(settings, LIVE_POLL_SECONDS=0.1)
    user, name, wf_id = await setup()
    comm = await connect(wf_id, user)
    await receive(comm, "snapshot")
    assert await comm.receive_nothing(timeout=0.6)
    await comm.disconnect()


async def test_removed_execution_is_reported_gone(settings):
    ui_settings(settings, LIVE_POLL_SECONDS=0.2)
    user, name, wf_id = await setup()
    comm = await connect(wf_id, user)
    await receive(comm, "snapshot")
    await database_sync_to_async(executor.workflow_remove)(workflow_id=wf_id, archive=False)
    msg = await receive(comm, "gone")
    assert msg["seq"] == 2
    await comm.disconnect()


async def test_group_names_are_always_valid():
    assert live.group_name("abc-123") == "ui.execution.abc-123"
    odd = live.group_name("a b/c" + "x" * 200)
    assert odd.startswith("ui.execution.h") and len(odd) < 100
