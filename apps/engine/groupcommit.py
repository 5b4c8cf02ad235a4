"""Group commit: concurrent engine calls share one transaction and one durable COMMIT.

The worker fast path (``apps/api/fastpath.py``) hands each task update (``POST
/api/tasks``, ``POST /api/tasks/update-v2``) and each planned start (``POST
/api/workflow``) to ``submit`` on the event loop and awaits its answer. A small fixed set
of persistent **committers** (``GROUP_COMMIT_THREADS``; each with ``GROUP_COMMIT_PIPELINE``
threads taking turns, each thread with its own database connection kept open between
batches) executes what was handed in: a committer takes every call waiting for it (at
most ``GROUP_COMMIT_MAX_OPS``), opens ONE transaction, runs the calls (on PostgreSQL
fused, ``_execute_fused``; else each in its own savepoint, ``transaction.atomic()``
nested: a call that raises is rolled back alone, the others are kept), COMMITs once
(one WAL flush on PostgreSQL with synchronous commit; one WAL append on SQLite) and
then answers every caller, each only after that COMMIT returned. Durability is
unchanged: no caller hears of a change that is not committed. A call that arrives while
its committer is busy waits for the next batch; there is no timer, so a lone call is
executed at once and batches grow only with the load (``GROUP_COMMIT_WINDOW_MS`` > 0
adds a wait for company before each batch).

Ordering and locking: the calls of one workflow always go to the same committer (the
``key`` handed to ``submit``, the workflow id, picks it), so they run in the order they
arrived and two committers of the process never wait on each other's workflow locks;
inside a batch the calls run in arrival order, each with the service's own lock
(``SELECT ... FOR UPDATE`` of the workflow row on PostgreSQL, held to the batch's
COMMIT; SQLite's IMMEDIATE transaction) and compare-and-set writes. A deadlock with
another process or a StaleState inside a call is handled by the service's own retries
(``executor.with_retries``) inside its savepoint; a lost connection fails the whole
batch (below), and the next batch opens a new connection.

A crash at any point loses only calls that no one was answered for: their batch's
transaction is rolled back, each worker sends again or its task's response timeout
hands it out again (the sweeper). When the BEGIN or the COMMIT itself fails, or a
call's savepoint cannot be rolled back (the connection broke), every call of the batch
is answered with that error (as each of them would have been alone).

Also removes the hand-off of each request to a pool thread: the event loop puts the
call on the committer's deque and awaits a future, and a committer answers all the
futures of one event loop with one ``call_soon_threadsafe``.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from apps.engine import store

log = logging.getLogger(__name__)

# a committer closes its connection after this many seconds without a call (tests drop
# their databases; a pooled connection goes back to the pool)
IDLE_CLOSE_S = 2.0


class _Call:
    __slots__ = ("fn", "args", "loop", "future", "key", "fresh")

    def __init__(self, fn: Callable[..., Any], args: tuple, loop: asyncio.AbstractEventLoop,
                 future: asyncio.Future, key: str | None = None, fresh: bool = False):
        self.fn, self.args, self.loop, self.future, self.key = fn, args, loop, future, key
        self.fresh = fresh  # the key is the id of the execution this call starts


class Later:
    """What a call hands back from inside a fused batch when part of its work must see
    the batch's writes: ``finish()`` runs after the batch's ``flush``, in the same
    transaction, and its return value is the call's result (update-v2's claim of the
    worker's next task: ``apps.api.fastpath``). With ``together``, a function of a list
    of Laters: it is called once with all the Laters of the segment that name it, before
    any of them finishes (to do their common work at once: one claim per queue)."""

    __slots__ = ("finish", "together", "data")

    def __init__(self, finish: Callable[[], Any], together: Callable[[list], None] | None = None, data: Any = None):
        self.finish, self.together, self.data = finish, together, data


def _finish(values: list) -> list:
    """The segment's values with every Later finished (each ``together`` first, once)."""
    groups: dict[Callable, list[Later]] = {}
    for value in values:
        if isinstance(value, Later) and value.together is not None:
            groups.setdefault(value.together, []).append(value)
    for together, laters in groups.items():
        together(laters)
    return [value.finish() if isinstance(value, Later) else value for value in values]


def fusing() -> bool:
    """Whether the calling committer is running a fused batch (``store.fused``)."""
    return store.fusing()


class _Committer:
    """One committer: its deque of calls and its threads (``GROUP_COMMIT_PIPELINE``, each
    with its own database connection, Django's per-thread connection kept open between
    batches), which take turns: the thread whose turn it is takes every call waiting and
    executes them as one batch, and hands the turn on just before its COMMIT, so the next
    batch is taken and executed while this one commits (a pipeline of transactions on
    distinct connections; a call whose workflow the committing batch still holds waits
    for that COMMIT on the row's lock, so one workflow's calls still apply in order)."""

    def __init__(self, index: int, threads: int = 1):
        self.calls: deque[_Call] = deque()
        self.ready = threading.Condition(threading.Lock())
        self.turn = threading.Lock()  # held by the thread taking and executing a batch
        self.stopping = False
        self.ended = False
        self.batches = 0
        self.executed = 0
        self._threads = [threading.Thread(target=self._run, name=f"conductor-committer-{index}.{k}", daemon=True)
                         for k in range(max(1, threads))]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def is_alive(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)

    def join(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def submit(self, call: _Call) -> bool:
        """Queue ``call``; False when this committer has ended (stopped meanwhile): the
        caller picks another one."""
        with self.ready:
            if self.ended:
                return False
            self.calls.append(call)
            self.ready.notify()
            return True

    def stop(self) -> None:
        """Let it end once the calls handed to it are done."""
        with self.ready:
            self.stopping = True
            self.ready.notify_all()

    def _run(self) -> None:
        try:
            while True:
                while not self.turn.acquire(timeout=IDLE_CLOSE_S):
                    _close_quietly()  # waiting for a turn as long as a committer idles
                holding = True

                def hand_on() -> None:  # the next batch may be taken while this one commits
                    nonlocal holding
                    if holding:
                        holding = False
                        self.turn.release()

                try:
                    batch = self._take()
                    if batch is None:
                        return
                    try:
                        results = _execute(batch, hand_on)
                    except BaseException as exc:  # noqa: BLE001 - never leave a caller waiting
                        results = [(False, exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))] * len(batch)
                finally:
                    hand_on()
                with self.ready:
                    self.batches += 1
                    self.executed += len(batch)
                _answer(batch, results)
        finally:
            connection.close()

    def _take(self) -> list[_Call] | None:
        """The next batch (waiting for the first call; the connection is closed after
        ``IDLE_CLOSE_S`` idle), or None (and ``ended`` set) when stopping with nothing left."""
        conf = settings.CONDUCTOR
        most = max(1, int(conf.get("GROUP_COMMIT_MAX_OPS", 64)))
        window_s = max(0, int(conf.get("GROUP_COMMIT_WINDOW_MS", 0))) / 1000
        with self.ready:
            while not self.calls:
                if self.stopping:
                    self.ended = True  # under the lock: no call is queued after this
                    return None
                if not self.ready.wait(IDLE_CLOSE_S) and not self.calls:
                    _close_quietly()
        if window_s and len(self.calls) < most:
            time.sleep(window_s)  # company for the first call (off by default)
        with self.ready:
            n = min(most, len(self.calls))
            return [self.calls.popleft() for _ in range(n)]


def _execute(batch: list[_Call], before_commit: Callable[[], None] = lambda: None) -> list[tuple[bool, Any]]:
    """Run a batch: fused (``_execute_fused``) on PostgreSQL when it has several calls of
    known workflows, else (and when the fused run failed) call by call (``_execute_each``).
    ``before_commit`` is called once every call has run, just before the COMMIT (the
    committer hands its turn on)."""
    if len(batch) > 1 and fused_enabled() and all(c.key for c in batch):
        try:
            results = _execute_fused(batch, before_commit)
            _count("fused")
            return results
        except _CommitFailed as failed:
            # it may have committed (the acknowledgement lost): never run again, as alone
            log.warning("the COMMIT of a fused batch of %d call(s) failed: %s", len(batch), failed.error)
            _close_quietly()
            return [(False, failed.error)] * len(batch)
        except Exception as exc:  # noqa: BLE001 - rolled back: each call runs again on its own
            _count("fused_rolled_back")
            log.info("a fused batch of %d call(s) was rolled back (%s: %s); running them one by one",
                     len(batch), type(exc).__name__, exc)
    return _execute_each(batch, before_commit)


def _execute_fused(batch: list[_Call], before_commit: Callable[[], None] = lambda: None) -> list[tuple[bool, Any]]:
    """Run the batch in one transaction as fused segments (``store.fused``): each segment
    is the longest run of calls of distinct workflows; its workflows are locked and read
    with two statements, its calls run one after the other with their writes held, the
    writes sent together (``FusedBatch.flush``), then each ``Later`` finished. An
    exception before the COMMIT rolls the whole transaction back and is raised (the
    caller runs the calls one by one); a failed COMMIT raises _CommitFailed (the caller
    answers every call with its error: the batch may have committed). A call cancelled
    before it ran is answered CancelledError."""
    results: dict[int, tuple[bool, Any]] = {}
    live = [c for c in batch if not c.future.cancelled()]
    ran = False
    try:
        with transaction.atomic():
            _run_segments(live, results)
            if transaction.get_rollback():
                # a call failed in a block without a savepoint and its caller went on:
                # leaving would roll the whole batch back without a word
                raise store.FusedConflict("the batch's transaction was marked for rollback")
            ran = True
            before_commit()
    except Exception as exc:
        if ran:  # every call ran: leaving the block, the COMMIT, failed
            raise _CommitFailed(exc) from exc
        raise
    return [results.get(id(c)) or (False, asyncio.CancelledError()) for c in batch]


class _CommitFailed(Exception):
    """The COMMIT of a fused batch failed after every call ran: the batch may or may not
    be committed (a connection lost while its acknowledgement was in flight)."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def _run_segments(live: list[_Call], results: dict[int, tuple[bool, Any]]) -> None:
    """The fused segments of ``_execute_fused``, in the open transaction; ``results``
    filled by call id."""
    start = 0
    while start < len(live):
        keys: set[str] = set()
        end = start
        while end < len(live) and live[end].key not in keys:
            keys.add(live[end].key)
            end += 1
        segment = live[start:end]
        with store.fused([c.key for c in segment if not c.fresh],
                         [c.key for c in segment if c.fresh]) as fused_batch:
            values = [c.fn(*c.args) for c in segment]
            fused_batch.flush()
        for call, value in zip(segment, _finish(values)):
            results[id(call)] = (True, value)
        start = end


def _execute_each(batch: list[_Call], before_commit: Callable[[], None] = lambda: None) -> list[tuple[bool, Any]]:
    """Run the batch's calls in one transaction, each in its own savepoint (a lone call
    needs none: its failure rolls back only itself); one
    ``(ok, result or exception)`` per call, all errors when BEGIN or COMMIT failed or a
    call's savepoint could not be rolled back (the connection broke: Django would then
    roll the whole transaction back at its end without raising)."""
    results: list[tuple[bool, Any]] = []
    if len(batch) == 1:
        call = batch[0]
        if call.future.cancelled():
            return [(False, asyncio.CancelledError())]
        raised = None
        try:
            with transaction.atomic():
                try:
                    value = _finish([call.fn(*call.args)])[0]
                except Exception as exc:  # noqa: BLE001 - handed to its caller below
                    raised = exc
                    raise
                before_commit()
        except Exception as exc:  # noqa: BLE001 - handed to its caller
            if exc is not raised:  # BEGIN or COMMIT failed: a new connection for the next batch
                log.warning("a group commit of 1 call failed: %s", exc)
                _close_quietly()
            return [(False, exc)]
        return [(True, value)]
    try:
        with transaction.atomic():
            for call in batch:
                if call.future.cancelled():
                    results.append((False, asyncio.CancelledError()))
                    continue
                try:
                    with transaction.atomic():  # its RELEASE may raise too: one result per call
                        value = _finish([call.fn(*call.args)])[0]
                except Exception as exc:  # noqa: BLE001 - handed to its caller; the others go on
                    if transaction.get_rollback():
                        raise  # not rolled back to its savepoint: the batch is lost, say so to all
                    results.append((False, exc))
                else:
                    results.append((True, value))
            before_commit()
    except Exception as exc:  # noqa: BLE001 - nothing of the batch is kept
        log.warning("a group commit of %d call(s) failed: %s", len(batch), exc)
        _close_quietly()  # a new connection for the next batch
        return [(False, exc)] * len(batch)
    return results


def _close_quietly() -> None:
    try:
        connection.close()
    except Exception:  # noqa: BLE001
        pass


def _answer(batch: list[_Call], results: list[tuple[bool, Any]]) -> None:
    """Set each caller's future on its own event loop: one ``call_soon_threadsafe`` per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, bool, Any]]] = {}
    for call, (ok, value) in zip(batch, results):
        by_loop.setdefault(call.loop, []).append((call.future, ok, value))
    for loop, answers in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, answers)
        except RuntimeError:
            pass  # that loop has closed: its callers are gone


def _settle(answers: list[tuple[asyncio.Future, bool, Any]]) -> None:
    for future, ok, value in answers:
        if future.done():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


_committers: list[_Committer] = []
_lock = threading.Lock()


def enabled() -> bool:
    """Whether the fast path hands task updates to the committers:
    ``CONDUCTOR["GROUP_COMMIT"]`` on or off, or ``auto`` (the default): on for SQLite,
    and on PostgreSQL when batches run fused (``fused_enabled``, the default). Measured
    (docs/performance.md): on SQLite, whose one writer serialises the updates anyway,
    one transaction per batch cut the CPU per update by about a third; on PostgreSQL,
    which already flushes the WAL once for the commits that wait together (its own group
    commit), running the updates one after the other on one connection made them slower
    than concurrent transactions, and fused (a batch's statements made as one set) about
    a quarter cheaper in CPU per transition and faster."""
    value = settings.CONDUCTOR.get("GROUP_COMMIT", "auto")
    if isinstance(value, str):
        value = value.strip().lower()
        if value == "auto":
            return connection.vendor == "sqlite" or fused_enabled()
        return value in ("on", "true", "1", "yes")
    return bool(value)


def fused_enabled() -> bool:
    """Whether a batch of several calls runs fused (``_execute_fused``):
    ``CONDUCTOR["GROUP_COMMIT_FUSED"]`` (on by default) on PostgreSQL (``store.fusable``)."""
    value = settings.CONDUCTOR.get("GROUP_COMMIT_FUSED", "on")
    if isinstance(value, str):
        value = value.strip().lower() in ("on", "true", "1", "yes")
    return bool(value) and store.fusable()


def pipeline_threads() -> int:
    """Threads per committer (``CONDUCTOR["GROUP_COMMIT_PIPELINE"]``): ``auto`` (the
    default) is 2 on PostgreSQL, where one batch executes on one connection while the one
    before commits on another, and 1 on SQLite, whose one writer would make the next batch
    wait for that COMMIT anyway."""
    value = settings.CONDUCTOR.get("GROUP_COMMIT_PIPELINE", "auto")
    if isinstance(value, str) and value.strip().lower() == "auto":
        return 2 if connection.vendor == "postgresql" else 1
    return max(1, int(value))


def _committer_for(key: str | None) -> _Committer:
    count = max(1, int(settings.CONDUCTOR.get("GROUP_COMMIT_THREADS", 1)))
    with _lock:  # uncontended but for ``stop``
        if len(_committers) != count or not all(c.is_alive() for c in _committers):
            alive = [c for c in _committers if c.is_alive() and not c.stopping]
            while len(alive) < count:
                committer = _Committer(len(alive), pipeline_threads())
                committer.start()
                alive.append(committer)
            for dropped in alive[count:]:  # fewer GROUP_COMMIT_THREADS than before
                dropped.stop()
            _committers[:] = alive[:count]
        return _committers[zlib.crc32(key.encode()) % count if key else 0]


def submit(fn: Callable[..., Any], *args, key: str | None = None, fresh: bool = False) -> asyncio.Future:
    """Hand ``fn(*args)`` (synchronous; it runs in a committer thread inside the batch's
    transaction, its writes in their own savepoint) to the committer of ``key`` (a
    workflow id: one workflow's calls run in order on one committer; with ``fresh``, the
    id of the execution ``fn`` starts, which a fused batch does not lock); returns a future
    of the running event loop, set to ``fn``'s result or exception once the batch's
    COMMIT returned (the exception of BEGIN/COMMIT when those failed). Call on the event
    loop."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    call = _Call(fn, args, loop, future, key, fresh)
    while not _committer_for(key).submit(call):
        pass  # its committer ended after it was picked (``stop``): the next pick starts a new one
    return future


# batches of this process run fused, and fused runs rolled back (then run call by call)
_counts = {"fused": 0, "fused_rolled_back": 0}
_counts_lock = threading.Lock()


def _count(name: str) -> None:
    with _counts_lock:  # a committer's threads count at once
        _counts[name] += 1


def stats() -> dict[str, int]:
    """``{"batches": n, "calls": n, "fused": n, "fused_rolled_back": n}``: batches and
    calls executed by this process's current committers; batches run fused and fused runs
    rolled back since the process started (bench, tests)."""
    return {"batches": sum(c.batches for c in _committers), "calls": sum(c.executed for c in _committers),
            **_counts}


def waiting() -> int:
    """How many calls are handed in and not yet taken into a batch (tests, bench)."""
    return sum(len(c.calls) for c in list(_committers))


def stop(timeout_s: float = 5.0) -> None:
    """Let the committers finish what was handed to them, close their connections and
    end (tests, before their database is dropped); the next ``submit`` starts new ones."""
    with _lock:
        committers, _committers[:] = list(_committers), []
    for committer in committers:
        committer.stop()
    for committer in committers:
        committer.join(timeout_s)
