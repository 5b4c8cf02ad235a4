"""What runs beside the jobs in every django-q2 worker process: the sweeper thread.

Every worker process of every cluster starts one ``SweeperThread`` when it is spawned
(django-q2's ``post_spawn`` signal, connected in ``EngineConfig.ready`` for
``manage.py qcluster``). The threads elect one sweeper through the ``SweeperLease`` row
named ``"sweeper"``: the holder renews the short lease (``SWEEPER_LEASE_MS`` of
``settings.CONDUCTOR``) on every tick and sweeps; the others look once every
``SWEEPER_STANDBY_SECONDS`` and take the lease over once it expired. So the sweeper moves
to a survivor within about ``SWEEPER_LEASE_MS`` + ``SWEEPER_STANDBY_SECONDS`` of its holder's death, a whole cluster killed with SIGKILL included,
with no job to queue and no schedule to wait for. A worker that stops (SIGTERM on the
cluster, recycling) releases the lease on its way out, so a survivor takes over at its
next look. The sweep itself (``sweeper.sweep_once``) claims each execution by
compare-and-set, so even two holders for a moment (a stalled holder losing its lease)
never decide one execution twice at once.

Source: Conductor's WorkflowSweeper runs in every server and relies on its queue's
lease (unack timeout) for the same hand-over.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

from django.conf import settings
from django.db import connections

log = logging.getLogger(__name__)

LEASE_NAME = "sweeper"

_thread: SweeperThread | None = None


class SweeperThread(threading.Thread):
    """One candidate sweeper (a daemon thread); see the module doc.

    ``ticks`` counts the sweeps this thread ran as holder and ``decided`` the executions
    and event messages they handled (read by the tests)."""

    def __init__(self, holder: str | None = None):
        super().__init__(name="conductor-sweeper", daemon=True)
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.stopping = threading.Event()
        self.holding = False
        self.ticks = 0
        self.decided = 0

    def run(self) -> None:
        from apps.engine import event_handlers, sweeper
        from apps.engine.models import SweeperLease

        conf = settings.CONDUCTOR
        tick = conf["SWEEPER_TICK_MS"] / 1000
        try:
            while not self.stopping.is_set():
                try:
                    self.holding = SweeperLease.acquire(LEASE_NAME, self.holder, conf["SWEEPER_LEASE_MS"])
                    if not self.holding:
                        self.stopping.wait(conf["SWEEPER_STANDBY_SECONDS"])
                        continue
                    n = sweeper.sweep_once() + event_handlers.event_messages_sweep() + sweeper.run_tick_hooks()
                    self.ticks += 1
                    self.decided += n
                    if n == 0:
                        self.stopping.wait(tick)
                except Exception:  # noqa: BLE001 - e.g. the database restarting: try again
                    log.exception("sweeper tick failed")
                    connections.close_all()
                    self.stopping.wait(conf["SWEEPER_STANDBY_SECONDS"])
        finally:
            try:
                if self.holding:
                    SweeperLease.release(LEASE_NAME, self.holder)
            except Exception:  # noqa: BLE001 - the lease then simply expires
                log.warning("could not release the sweeper lease", exc_info=True)
            connections.close_all()

    def stop(self, timeout: float | None = None) -> None:
        """Finish the current tick, release the lease and end (waits up to ``timeout`` s,
        by default ``SWEEPER_STOP_WAIT_SECONDS``)."""
        self.stopping.set()
        if self.is_alive():
            self.join(settings.CONDUCTOR["SWEEPER_STOP_WAIT_SECONDS"] if timeout is None else timeout)


def start_sweeper_thread(**_signal_kwargs) -> SweeperThread:
    """Start this process's sweeper thread (once) and stop it when the process exits
    normally. Receiver of django-q2's ``post_spawn`` (sent in each new worker process)."""
    global _thread
    if _thread is not None and _thread.is_alive():
        return _thread
    from multiprocessing import util

    _thread = SweeperThread()
    _thread.start()
    # run by multiprocessing when the worker process returns (cluster stop, recycling)
    util.Finalize(_thread, _thread.stop, exitpriority=10)
    return _thread
