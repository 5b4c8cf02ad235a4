"""Live updates across processes through channels-redis (the scaled-out set-up): a change
committed by another process reaches this process's WebSocket consumer through Redis,
with the consumer's own polling slowed far past the (generous) wait so only the channel
layer can explain the message. No assertion on how fast: the other process's start-up
alone took 17 s on a loaded machine (issue #14).
Needs Debian's redis-server (``make test`` installs it) and the ``redis`` extra."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from django.db import connection

from conductor_web.settings import redis_channel_layer
from tests.redis_server import have_redis_server, start_redis, stop_redis
from tests.ui.test_consumer import POLL_NEVER_SECONDS, connect, receive, setup, ui_settings

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not have_redis_server(), reason="needs redis-server")]

ROOT = Path(__file__).resolve().parents[2]
# Bound on the other process (interpreter and Django start-up, one transaction) and then
# on the message reaching the consumer; both end as soon as the thing happens.
OTHER_PROCESS_SECONDS = 120
DELIVERY_SECONDS = 120
assert DELIVERY_SECONDS + OTHER_PROCESS_SECONDS < POLL_NEVER_SECONDS  # polling cannot explain a delta


@pytest.fixture
def redis_url(tmp_path):
    pytest.importorskip("channels_redis")
    proc, url = start_redis(tmp_path)
    yield url
    stop_redis(proc)


def _database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    return f"postgres://{s['USER']}:{s.get('PASSWORD') or ''}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def _terminate_elsewhere(db_url: str, redis_url: str, wf_id: str) -> None:
    """Terminate ``wf_id`` from a separate Python process (another server's commit)."""
    env = {**os.environ, "DATABASE_URL": db_url, "CHANNEL_REDIS_URL": redis_url, "PYTHONPATH": str(ROOT),
           "DJANGO_SETTINGS_MODULE": "conductor_web.settings"}
    script = ("import django; django.setup(); from apps.engine import executor; "
              f"executor.workflow_terminate(workflow_id={wf_id!r}, reason='from another process')")
    subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, check=True,
                   timeout=OTHER_PROCESS_SECONDS)


async def _watching(settings, redis_url):
    """A consumer on the Redis layer with its own polling slowed past every wait here,
    ready: (communicator, workflow id, database URL for another process).

    Ready means subscribed: the consumer joins the execution's group in Redis before it
    sends its snapshot, so once the snapshot is here a group message from any process
    reaches it (channels-redis keeps it in the channel's list until read); a ping
    answered shows its receive loop is running."""
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(redis_url)}
    ui_settings(settings, LIVE_POLL_SECONDS=POLL_NEVER_SECONDS)
    user, name, wf_id = await setup()
    comm = await connect(wf_id, user)
    assert (await receive(comm, "snapshot"))["seq"] == 1
    await comm.send_json_to({"type": "ping"})
    assert (await receive(comm, "pong"))["seq"] == 1
    return comm, wf_id, await database_sync_to_async(_database_url)()


async def test_a_change_in_another_process_arrives_through_redis(settings, redis_url):
    comm, wf_id, db_url = await _watching(settings, redis_url)
    await asyncio.to_thread(_terminate_elsewhere, db_url, redis_url, wf_id)
    delta = await receive(comm, "delta", timeout=DELIVERY_SECONDS)
    assert delta["data"]["header"]["status"] == "TERMINATED"
    await comm.disconnect()


IDLE_SECONDS = 7  # longer than channels-redis's 5 s blocking read (and redis-py 8's default timeout)


async def test_an_idle_consumer_survives_and_still_hears_changes(settings, redis_url):
    """A page left open with nothing happening for longer than the blocking read keeps
    its WebSocket: after the idle spell a change made by another process still arrives
    through Redis (redis-py 8 with a 5 s socket timeout closed it with 1011 here)."""
    comm, wf_id, db_url = await _watching(settings, redis_url)
    assert await comm.receive_nothing(timeout=IDLE_SECONDS, interval=0.5)
    await comm.send_json_to({"type": "ping"})
    assert (await receive(comm, "pong"))["seq"] == 1
    await asyncio.to_thread(_terminate_elsewhere, db_url, redis_url, wf_id)
    delta = await receive(comm, "delta", timeout=DELIVERY_SECONDS)
    assert delta["data"]["header"]["status"] == "TERMINATED"
    await comm.disconnect()
