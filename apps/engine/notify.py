"""After-commit notifications inside this process: wake long polls waiting on a queue
(``queue_waiter``), and tell listeners (live UI, execute-and-wait answers) that an
execution changed. Also the one
in-transaction hook: status transitions handed to recorders (``add_transition_recorder``)
while the change is being saved, so what they write commits with it.

Across processes on PostgreSQL, a transaction that queues tasks also sends
``NOTIFY conductor_queue, '<pid>:<queue>'`` (``publish_queued``; delivered at commit,
never for a rolled-back change), and each process that serves long polls runs one
listener thread (``start_queue_listener``: one connection, ``LISTEN conductor_queue``)
that wakes its own waiting polls of that queue: no periodic re-check of the database.
On SQLite (or while the listener is not connected) long polls re-check every
``LONG_POLL_RECHECK_MS``; the UI consumer watches ``WorkflowExecution.update_time``.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable

from apps.core import lifecycle

log = logging.getLogger(__name__)

QUEUE_CHANNEL = "conductor_queue"

_listeners: list[Callable[[str], None]] = []
_transition_recorders: list[Callable] = []
_waiters: dict[str, set[QueueWaiter]] = {}
_waiters_lock = threading.Lock()
# queue name -> how many times tasks were queued on it as this process learnt (its own
# commits, the PostgreSQL listener): the part of ``queue_mark`` that changes per queue
_generations: dict[str, int] = {}


class QueueWaiter:
    """A long poll waiting on one queue, on the event loop it was made in. Made before the
    poll looks at the queue, so tasks queued between that look and ``wait`` wake it at once."""

    __slots__ = ("queue_name", "loop", "woken", "_future")

    def __init__(self, queue_name: str):
        self.queue_name = queue_name
        self.loop = asyncio.get_running_loop()
        self.woken = False  # set on the loop by a wake, also one before ``wait``
        self._future: asyncio.Future | None = None

    def __enter__(self) -> QueueWaiter:
        with _waiters_lock:
            _waiters.setdefault(self.queue_name, set()).add(self)
        return self

    def __exit__(self, *exc) -> None:
        with _waiters_lock:
            waiting = _waiters.get(self.queue_name)
            if waiting is not None:
                waiting.discard(self)
                if not waiting:
                    del _waiters[self.queue_name]

    async def wait(self, timeout_s: float) -> bool:
        """Up to ``timeout_s`` seconds until tasks are queued on the queue in this process;
        True when woken (also by a wake since the waiter was made), False on timeout. One
        future and one timer on the loop (``asyncio.wait_for`` made a task and cancelled it
        on every timeout: an idle 100 ms poll's largest cost in this process)."""
        if self.woken:
            return True
        future = self._future = self.loop.create_future()
        timer = self.loop.call_later(max(timeout_s, 0), _settle, future, False)
        try:
            return await future
        finally:
            timer.cancel()
            self._future = None

    def _set(self) -> None:
        self.woken = True
        if self._future is not None:
            _settle(self._future, True)

    def wake(self) -> None:
        """Wake the waiter from any thread (nothing when its loop has closed)."""
        try:
            self.loop.call_soon_threadsafe(self._set)
        except RuntimeError:
            pass


def _settle(future: asyncio.Future, result: bool) -> None:
    if not future.done():
        future.set_result(result)


def queue_waiter(queue_name: str) -> QueueWaiter:
    """``with queue_waiter(name) as waiter: ... await waiter.wait(s)`` inside a coroutine."""
    return QueueWaiter(queue_name)


def tasks_queued(queue_names: Iterable[str]) -> None:
    """Tasks became pollable on these queues (called after commit, in any thread): wake
    the long polls of this process waiting on them."""
    _wake_local(queue_names)


def _wake_local(queue_names: Iterable[str]) -> None:
    for name in {q for q in queue_names if q}:
        with _waiters_lock:
            _generations[name] = _generations.get(name, 0) + 1
            waiting = list(_waiters.get(name, ()))
        for waiter in waiting:
            waiter.wake()


def wake_all() -> None:
    """Wake every long poll of this process (the server is stopping: each one sees
    ``apps.core.lifecycle.stopping`` and answers what it has at once)."""
    with _waiters_lock:
        waiting = [w for group in _waiters.values() for w in group]
    for waiter in waiting:
        waiter.wake()


lifecycle.on_stop(wake_all)


def add_listener(fn: Callable[[str], None]) -> None:
    """Register ``fn(workflow_id)`` to be called after each committed change."""
    _listeners.append(fn)


def workflow_changed(workflow_id: str) -> None:
    """An execution changed (called after commit)."""
    for fn in list(_listeners):
        try:
            fn(workflow_id)
        except Exception:  # noqa: BLE001 - a listener must never break the engine
            import logging

            logging.getLogger(__name__).exception("workflow_changed listener failed")


def add_transition_recorder(fn: Callable) -> None:
    """Register ``fn(wf, previous_status, task_changes)``, called by ``store`` inside the
    transaction that saves a change: ``wf`` the WorkflowState as saved, ``previous_status``
    its status as loaded (None for a new execution), ``task_changes`` a list of
    ``(TaskState, previous_status_or_None)`` for tasks inserted or whose status changed.
    Whatever ``fn`` writes commits or rolls back with the change; it must be quick (no I/O
    other than the database) and raise only to abort the change. Used by the status
    listeners (``apps.listeners``)."""
    if fn not in _transition_recorders:
        _transition_recorders.append(fn)


def transitions(wf, previous_status: str | None, task_changes: list) -> None:
    """Hand one saved change to the transition recorders (called by ``store``)."""
    for fn in _transition_recorders:
        fn(wf, previous_status, task_changes)


# --- what this process knows about a queue without reading it ----------------------------------

def queue_mark(queue_name: str, connection_alias: str = "default"):
    """A token that changes whenever tasks may have been queued on ``queue_name`` since
    it was taken (compare two with ``==``), or None when this process cannot know that
    (then only a read of the queue tells). Cheap: no query, callable on the event loop.

    * PostgreSQL: the queue's generation (bumped by this process's commits and by the
      listener's notifications of other processes' commits, ``_wake_local``) and the
      listener's connection epoch; None while the listener is not listening (a
      notification sent meanwhile is lost).
    * SQLite (WAL mode, a database file): the queue's generation and the WAL index
      header from the ``-shm`` file (its change counter and frame count, which every
      commit of every connection to the database changes: SQLite's documented WAL
      format), with the file's inode; None when there is no ``-shm`` file.

    ``queue.poll`` remembers an empty read of a queue under the mark taken before the
    read and answers later polls from it while the mark is unchanged."""
    from django.db import connections

    wrapper = connections[connection_alias]
    generation = _generations.get(queue_name, 0)
    if wrapper.vendor == "postgresql":
        listener = _listener
        if listener is None or not listener.ready.is_set() or listener.params.get("dbname") != wrapper.settings_dict["NAME"]:
            return None
        return generation, listener.epoch
    if wrapper.vendor == "sqlite":
        name = str(wrapper.settings_dict.get("NAME") or "")
        if not name or name == ":memory:" or name.startswith("file:"):
            return None
        read = _wal_index_header(name + "-shm")
        if read is None:
            return None
        inode, header = read
        return generation, inode, header
    return None


# path of a -shm file -> (descriptor, inode). Never closed: closing any descriptor of a file
# releases every POSIX lock this process holds on it, SQLite's own locks on the -shm file
# included (the database would be corrupted: SQLite's "How To Corrupt", section 2.2). A
# descriptor of a -shm file that was replaced (a new inode) stays open too; past
# _SHM_MAX_OPENED of them the process stops knowing (None).
_shm_files: dict[str, tuple[int, int]] = {}
_shm_opened = 0
_SHM_MAX_OPENED = 64
_shm_lock = threading.Lock()


def _wal_index_header(path: str) -> tuple[int, bytes] | None:
    """``(inode, the first 48 bytes)`` of the SQLite WAL index file ``path`` (WalIndexHdr:
    iVersion, unused, iChange, isInit, bigEndCksum, szPage, mxFrame, nPage, checksums,
    salts), read through this process's one descriptor of it; None when it is missing."""
    global _shm_opened
    try:
        inode = os.stat(path).st_ino
        with _shm_lock:
            known = _shm_files.get(path)
            if known is None or known[1] != inode:
                if _shm_opened >= _SHM_MAX_OPENED:
                    return None
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                _shm_opened += 1
                known = _shm_files[path] = (fd, os.fstat(fd).st_ino)
        header = os.pread(known[0], 48, 0)
    except OSError:
        return None
    return (known[1], header) if len(header) == 48 else None


# --- cross-process wake-ups on PostgreSQL (LISTEN/NOTIFY) ---------------------------------------

def publish_queued(queue_names: Iterable[str]) -> None:
    """Inside the transaction that queues tasks on these queues: on PostgreSQL, one
    ``pg_notify`` per queue, delivered to the other processes' listeners when (and only
    if) the transaction commits. Nothing on SQLite."""
    from django.db import connection

    names = sorted({q for q in queue_names if q})
    if not names or connection.vendor != "postgresql":
        return
    held = _held_queues.names
    if held is not None:
        held.update(names)  # one statement for the whole fused batch (``publish_held``)
        return
    _publish(names)


class _HeldQueues(threading.local):
    def __init__(self):
        self.names: set[str] | None = None


_held_queues = _HeldQueues()


@contextlib.contextmanager
def holding_publications():
    """``with notify.holding_publications():`` the ``publish_queued`` of this thread are
    gathered, not sent, until ``publish_held`` (the fused batch of ``store.fused``: one
    ``pg_notify`` statement per batch). Leaving the block drops what was not sent."""
    _held_queues.names = set()
    try:
        yield
    finally:
        _held_queues.names = None


def publish_held() -> None:
    """Send the notifications gathered by ``holding_publications`` so far (in the
    transaction: delivered at its commit)."""
    held = _held_queues.names
    if held:
        names = sorted(held)
        held.clear()
        _publish(names)


def _publish(names: list[str]) -> None:
    from django.db import connection

    token = process_token()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, q) FROM unnest(%s::text[]) AS q",
                       [QUEUE_CHANNEL, [f"{token}:{n}" for n in names]])


_token: tuple[int, str] | None = None
# listener epochs, unique in the process across listeners (a mark never matches a new one's)
_epochs = itertools.count(1)


def process_token() -> str:
    """This process's name in queue notifications (``<token>:<queue>``): its pid and a
    random part (replicas in containers often share pids), new in a forked child."""
    global _token
    pid = os.getpid()
    if _token is None or _token[0] != pid:
        _token = (pid, f"{pid}.{secrets.token_hex(4)}")
    return _token[1]


class _QueueListener(threading.Thread):
    """The process's one ``LISTEN conductor_queue`` connection: each notification wakes
    this process's polls waiting on that queue (notifications of this process are
    skipped: its commits wake its polls directly). Reconnects after a failure; while it
    is not listening, ``listening()`` is False and long polls re-check the database."""

    def __init__(self, params: dict):
        super().__init__(name="conductor-queue-listener", daemon=True)
        self.params = params
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.epoch = 0  # a new number at each (re)connection: notifications may have been missed before it

    def run(self) -> None:
        import psycopg

        own = f"{process_token()}:"
        while not self.stopping.is_set():
            try:
                with psycopg.connect(**self.params, autocommit=True) as conn:
                    conn.execute(f"LISTEN {QUEUE_CHANNEL}")
                    self.epoch = next(_epochs)
                    self.ready.set()
                    while not self.stopping.is_set():
                        # wakes at each notification, and once a second to see ``stopping``
                        for note in conn.notifies(timeout=1.0):
                            if not note.payload.startswith(own):
                                _wake_local([note.payload.split(":", 1)[1]])
            except Exception:  # noqa: BLE001 - keep listening; polls re-check meanwhile
                if not self.stopping.is_set():
                    log.warning("queue listener lost its connection; reconnecting", exc_info=True)
            self.ready.clear()
            self.epoch = next(_epochs)
            self.stopping.wait(1.0)


_listener: _QueueListener | None = None
_listener_lock = threading.Lock()


def start_queue_listener() -> bool:
    """On PostgreSQL, start this process's queue listener once (a daemon thread with its
    own connection to the default database); True when it is listening, False on SQLite
    or while it connects (the caller re-checks the database instead)."""
    global _listener
    from django.db import connection

    if connection.vendor != "postgresql":
        return False
    listener = _listener
    if listener is None or not listener.is_alive() or listener.params.get("dbname") != connection.settings_dict["NAME"]:
        with _listener_lock:
            if _listener is None or not _listener.is_alive() \
                    or _listener.params.get("dbname") != connection.settings_dict["NAME"]:
                settings = connection.settings_dict
                params = {"dbname": settings["NAME"], "user": settings.get("USER") or None,
                          "password": settings.get("PASSWORD") or None, "host": settings.get("HOST") or None,
                          "port": settings.get("PORT") or None}
                params = {k: v for k, v in params.items() if v is not None}
                for key in ("sslmode", "sslrootcert", "sslcert", "sslkey", "options"):
                    if key in (settings.get("OPTIONS") or {}):
                        params[key] = settings["OPTIONS"][key]
                _listener = _QueueListener(params)
                _listener.start()
            listener = _listener
    return listener.ready.is_set()


def stop_queue_listener(timeout_s: float = 5.0) -> None:
    """Stop this process's queue listener and close its connection (tests, before their
    database is dropped); the next long poll starts a new one."""
    global _listener
    with _listener_lock:
        listener, _listener = _listener, None
    if listener is not None:
        listener.stopping.set()
        listener.join(timeout_s)
