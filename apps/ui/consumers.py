"""The live channel of one execution: ``/ws/executions/<workflowId>/``.

On connect (signed-in users with the view permission only) the consumer sends a
``snapshot`` (see ``apps.ui.live``), then a ``delta`` whenever the execution changes.
Messages carry a ``seq`` that grows by one per message; a browser that sees a gap sends
``{"type": "resync"}`` and gets a fresh snapshot.

Changes are found two ways, so they are seen whichever process made them:
* polling: every ``LIVE_POLL_SECONDS`` (0.5 s) the consumer reads the execution's change
  marker (two small queries) and rebuilds the view only when it moved;
* wake-ups: the engine's after-commit hook sends ``execution.changed`` to the group of
  the execution through the channel layer (``apps.ui.live.on_workflow_changed``), which
  makes the consumer look at once (same process with the in-memory layer, any process
  with channels-redis).
"""
from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from apps.ui import live
from apps.ui.permissions import can_view

log = logging.getLogger(__name__)


class ExecutionConsumer(AsyncJsonWebsocketConsumer):
    """Snapshot on connect, then deltas, for one execution."""

    async def connect(self):
        """Accept signed-in viewers (others are refused with close code 4403), join the
        execution's group, send the snapshot and start watching."""
        user = self.scope.get("user")
        if not await database_sync_to_async(can_view)(user):
            await self.close(code=4403)
            return
        self.workflow_id = self.scope["url_route"]["kwargs"]["workflow_id"]
        self.group = live.group_name(self.workflow_id)
        self.seq = 0
        self.last: dict | None = None
        self.wake = asyncio.Event()
        self.lock = asyncio.Lock()
        self.poller: asyncio.Task | None = None
        await self.accept()
        if self.channel_layer is not None:
            await self.channel_layer.group_add(self.group, self.channel_name)
        live.watch(self.workflow_id)
        await self.send_snapshot()
        self.poller = asyncio.create_task(self.poll_loop())

    async def disconnect(self, code):
        """Stop watching and leave the group."""
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.cancel()
            try:
                await poller
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing anyway
                pass
        if hasattr(self, "group"):
            live.watch(self.workflow_id, -1)
            if self.channel_layer is not None:
                await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        """``{"type": "resync"}`` -> a fresh snapshot; ``{"type": "ping"}`` -> pong."""
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "resync":
            await self.send_snapshot()
        elif kind == "ping":
            await self.send_json({"type": "pong", "seq": self.seq})

    async def execution_changed(self, event):
        """Group message from the engine hook: look now."""
        self.wake.set()

    # --- internals -----------------------------------------------------------------------

    async def _next(self, kind: str, data: dict) -> None:
        self.seq += 1
        await self.send_json({"type": kind, "seq": self.seq, "data": data})

    async def send_snapshot(self) -> None:
        """Send the whole view (or ``gone`` if the execution no longer exists)."""
        async with self.lock:
            snap = await database_sync_to_async(live.build_snapshot)(self.workflow_id)
            if snap is None:
                await self._next("gone", {"workflowId": self.workflow_id})
                return
            self.last = snap
            await self._next("snapshot", snap)

    async def check(self) -> None:
        """Send a delta if the execution changed since the last message."""
        async with self.lock:
            marker = await database_sync_to_async(live.change_marker)(self.workflow_id)
            if self.last is not None and marker == self.last["marker"]:
                return
            if marker is None:
                if self.last is not None:
                    self.last = None
                    await self._next("gone", {"workflowId": self.workflow_id})
                return
            snap = await database_sync_to_async(live.build_snapshot)(self.workflow_id)
            if snap is None:
                return
            delta = live.diff(self.last, snap)
            first = self.last is None
            self.last = snap
            if first:
                await self._next("snapshot", snap)
            elif delta is not None:
                await self._next("delta", delta)

    async def poll_loop(self) -> None:
        """Check every ``LIVE_POLL_SECONDS``, or at once when woken."""
        interval = float(live.ui_setting("LIVE_POLL_SECONDS"))
        while True:
            try:
                await asyncio.wait_for(self.wake.wait(), timeout=interval)
            except asyncio.TimeoutError:
                pass
            self.wake.clear()
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep the channel alive; the next tick retries
                log.exception("live check of %s failed", self.workflow_id)
