"""The django-q2 cluster's own processes: the stop of ``manage.py qcluster`` (its main
process, ``ClusterSupervisor``) and the sweeper thread of every worker process.

## The sweeper thread

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

## The stop

``manage.py qcluster``'s main process (``ClusterSupervisor``) starts django-q2's Sentinel
and stops the whole cluster on SIGTERM or SIGINT within ``CLUSTER_STOP_GRACE_SECONDS``,
whatever the cluster was doing and whichever of its processes already died.

Why not django-q2's own ``Cluster``: its SIGTERM handler calls ``stop_event.set()`` and
``sentinel.join()`` inside the signal handler. ``stop_event`` is a
``multiprocessing.Event``, whose ``set()`` waits (a futex, no timeout) until every process
sleeping in ``wait()`` acknowledged the wake-up; the Sentinel sleeps in
``stop_event.wait(0.5)`` almost all the time. When the Sentinel died in that wait (a
SIGTERM sent to every process of the cluster, as ``kill -- -PGID``, ``pkill`` or a
process-tree kill do, reaches the Sentinel, whose SIGTERM is left at the default, first),
nobody ever acknowledges: the main process blocks for good in its signal handler, leaves
the Sentinel a zombie, and a further SIGTERM runs the handler again, which finds the
Sentinel gone and returns into the same wait (``tests/crash/test_stop_rounds.py``
reproduces it: the "tree" rounds).
Its stop also has no deadline: a worker that never ends its job holds it forever.

So here:

* ``PipeEvent`` replaces both ``multiprocessing.Event`` objects given to the Sentinel:
  ``set()`` writes one byte to a pipe (never blocks, safe in a signal handler) and
  ``wait()`` polls the read end, so a process that dies while waiting holds nothing.
* Signal handlers only set that event. The main thread supervises: it waits for the
  Sentinel's orderly stop (the pusher stops, each worker finishes the job in hand, the
  monitor saves the results) for at most the grace period, then kills with SIGKILL
  whatever is left of the cluster. It is the child subreaper (Linux ``prctl``) of its
  processes, so workers orphaned by a dead Sentinel are still found, stopped and reaped.
* In the Sentinel a SIGTERM asks the whole cluster to stop in the same orderly way, and
  so does the death of the main process (``PR_SET_PDEATHSIG``); the workers, the pusher
  and the monitor keep SIGTERM's default action (django-q2 ends a worker past its job
  timeout with SIGTERM). A job cut by a kill is run again after the restart (the task
  lease of ``apps.engine.jobs``, the broker's redelivery, the sweeper).

The exit status is 0 after a stop that was asked for (even one that had to kill), 1 when
the Sentinel ended on its own (a service manager then restarts the cluster).
"""
from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import queue
import select
import signal
import socket
import sys
import threading
import time
import uuid
from multiprocessing import util as mp_util

import psutil

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
    _thread = SweeperThread()
    _thread.start()
    # run by multiprocessing when the worker process returns (cluster stop, recycling)
    mp_util.Finalize(_thread, _thread.stop, exitpriority=10)
    return _thread


# --- the stop of the cluster (manage.py qcluster's main process) ---------------------------

# Linux prctl options (include/uapi/linux/prctl.h)
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class PipeEvent:
    """A set-once flag shared with forked processes (the subset of
    ``multiprocessing.Event`` that django-q2's Sentinel uses: ``set``, ``is_set``,
    ``wait``). Setting writes one byte to a pipe that is never read, so the read end
    stays readable; ``set()`` never blocks and may run in a signal handler. Only for the
    fork start method (the file descriptors are inherited, not pickled)."""

    def __init__(self):
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)

    def set(self) -> None:
        try:
            os.write(self.write_fd, b"\x01")
        except BlockingIOError:  # the pipe is full: set long ago
            pass

    def is_set(self) -> bool:
        return self.wait(0)

    def wait(self, timeout: float | None = None) -> bool:
        """True once set; waits up to ``timeout`` seconds (None: forever)."""
        poller = select.poll()
        poller.register(self.read_fd, select.POLLIN)
        return bool(poller.poll(None if timeout is None else max(0, timeout) * 1000))


def _prctl(option: int, value: int) -> bool:
    """Linux ``prctl(option, value)``; False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def sentinel_main(stop_event: PipeEvent, start_event: PipeEvent, cluster_id: uuid.UUID, parent_pid: int) -> None:
    """The Sentinel process's target: django-q2's ``Sentinel`` (spawns the workers, the
    pusher and the monitor, guards them until ``stop_event`` is set, then stops them in
    order), with SIGTERM and the main process's death asking for that stop."""
    from django_q.cluster import Sentinel

    class ClusterSentinel(Sentinel):
        def stop(self) -> None:
            """django-q2's orderly stop, except that a STOP pill for which no live worker
            is left is dropped: after a SIGTERM that reached the workers too, nobody reads
            the bounded task queue, and django-q2's plain ``put`` would wait for good. The
            jobs left in the queue are not lost: the broker delivers them again, and the
            engine's leases and sweeper re-run what they were for."""
            put = self.task_queue.put

            def put_while_a_worker_lives(obj, block=True, timeout=None):
                while True:
                    try:
                        return put(obj, True, 0.5)
                    except queue.Full:
                        if not any(p.is_alive() for p in self.pool):
                            log.warning("cluster sentinel: no live worker reads the task queue; stopping without")
                            # nor wait, at exit, for the feeder thread to flush into a pipe
                            # that nobody reads
                            self.task_queue.cancel_join_thread()
                            return None

            self.task_queue.put = put_while_a_worker_lives
            super().stop()

    sentinel = ClusterSentinel(stop_event, start_event, cluster_id, start=False)
    # after django-q2's own setup (SIGINT ignored, SIGTERM default)
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stop_event.set())
    # the processes the Sentinel forks get SIGTERM's default action back
    mp_util.register_after_fork(sentinel, lambda _s: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:  # the main process died before the prctl
        stop_event.set()
    sentinel.start()


def alive(process: psutil.Process) -> bool:
    """Whether ``process`` exists and is not a zombie."""
    try:
        return process.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return False


def descendants(pid: int) -> list[psutil.Process]:
    """Every live (not zombie) descendant of process ``pid``, as psutil Processes."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [c for c in children if alive(c)]


class ClusterSupervisor:
    """Runs one django-q2 cluster until a stop is asked for (see the module doc).

    ``grace_seconds``: how long the orderly stop may take after SIGTERM/SIGINT before the
    remaining processes are killed (default ``CLUSTER_STOP_GRACE_SECONDS`` of
    ``settings.CONDUCTOR``)."""

    POLL_SECONDS = 0.5

    def __init__(self, grace_seconds: float | None = None):
        self.grace_seconds = (settings.CONDUCTOR["CLUSTER_STOP_GRACE_SECONDS"]
                              if grace_seconds is None else grace_seconds)
        self.stop_event = PipeEvent()
        self.start_event = PipeEvent()
        self.cluster_id = uuid.uuid4()
        self.sentinel: multiprocessing.Process | None = None
        self.signalled: int | None = None  # the signal that asked for the stop, if one did

    def _on_signal(self, signum, _frame) -> None:
        # nothing but a flag and a pipe write: no lock, no logging, no waiting
        self.signalled = signum
        self.stop_event.set()

    def start(self) -> None:
        """Start the Sentinel (which starts the cluster's processes)."""
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        connections.close_all()  # the Sentinel must not share this process's connections
        context = multiprocessing.get_context("fork")
        self.sentinel = context.Process(target=sentinel_main, name=f"Process-{uuid.uuid4().hex}",
                                        args=(self.stop_event, self.start_event, self.cluster_id, os.getpid()))
        self.sentinel.start()
        log.info("cluster %s started (sentinel pid %s)", self.cluster_id.hex[:8], self.sentinel.pid)

    def run(self, run_once: bool = False) -> int:
        """Start, serve until asked to stop (or, ``run_once``, until the cluster is up),
        stop; returns the exit status: 0 after a stop a signal asked for, or after a
        ``run_once`` whose cluster came up; 1 when the Sentinel ended on its own (it died,
        or a SIGTERM reached only it) or a ``run_once`` cluster never came up."""
        self.start()
        started = True
        if run_once:
            while self.sentinel.is_alive() and not self.start_event.wait(self.POLL_SECONDS):
                pass
            started = self.start_event.is_set()
            self.stop_event.set()
        while self.sentinel.is_alive() and not self.stop_event.wait(self.POLL_SECONDS):
            pass
        ok = started if run_once else self.signalled is not None
        if not ok:
            log.error("cluster %s: its sentinel ended on its own (exit code %s)%s; stopping what is left",
                      self.cluster_id.hex[:8], self.sentinel.exitcode,
                      "" if started else " before the cluster came up")
            self.stop_event.set()
        self.stop()
        return 0 if ok else 1

    def stop(self) -> None:
        """Wait for the orderly stop up to the grace period, then SIGKILL every process
        of the cluster still alive (again on each pass, so one forked meanwhile goes too)
        and reap them."""
        deadline = time.monotonic() + self.grace_seconds
        while self.sentinel.is_alive() and time.monotonic() < deadline:
            self.sentinel.join(0.2)
        # after the Sentinel's exit its processes are gone, or about to be (a jq helper
        # ends once its worker's pipe closes): give them the rest of the grace, at most 2 s
        settle = min(deadline, time.monotonic() + 2)
        while descendants(os.getpid()) and time.monotonic() < settle:
            self._reap_orphans()
            time.sleep(0.1)
        left = descendants(os.getpid())
        if left:
            log.warning("cluster %s did not stop within %.0f s of the stop: killing %s",
                        self.cluster_id.hex[:8], self.grace_seconds, [p.pid for p in left])
        until = time.monotonic() + 5
        while left and time.monotonic() < until:
            for process in left:
                try:
                    process.kill()
                except psutil.NoSuchProcess:
                    pass
            # the Sentinel is reaped by its Process object (a waitpid of ours would leave
            # it reporting itself alive), the others by their parents or _reap_orphans
            self.sentinel.join(0.2)
            self._reap_orphans()
            psutil.wait_procs([p for p in left if p.pid != self.sentinel.pid], timeout=0.2)
            left = descendants(os.getpid())
        self.sentinel.join(5)
        self._reap_orphans()
        log.info("cluster %s stopped", self.cluster_id.hex[:8])

    def _reap_orphans(self) -> None:
        """Collect the exit status of orphans re-parented to this process (the subreaper),
        leaving the Sentinel's to its ``Process`` object."""
        for child in psutil.Process().children():
            if child.pid == self.sentinel.pid:
                continue
            try:
                if child.status() == psutil.STATUS_ZOMBIE:
                    os.waitpid(child.pid, os.WNOHANG)
            except (psutil.NoSuchProcess, ChildProcessError):
                pass
