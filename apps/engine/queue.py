"""Task queues: poll (claim) worker tasks, queue sizes, poll data.

``poll`` is the one poll: both entry points (the ASGI worker fast path and the Django
views behind it) call it, synchronous code through ``task_poll``. It records poll data,
claims (``claim``) and, for a long
poll, waits on the event loop until tasks are queued (``notify.queue_waiter``: by this
process, or by another one through PostgreSQL's LISTEN/NOTIFY) or, on SQLite,
``LONG_POLL_RECHECK_MS`` passes, with each database attempt in a thread.

The queue is the ``engine_task_execution`` table: a task is pollable when SCHEDULED on
its ``queue_name`` with ``visible_at <= now``. A claim moves up to ``count`` tasks to
IN_PROGRESS and returns them, in one transaction:
* PostgreSQL: one ``WITH picked AS (SELECT ... FOR UPDATE SKIP LOCKED) UPDATE ... RETURNING``,
  so concurrent pollers never block on or receive the same task, which also inserts the
  ``task.polled`` events of the tasks no TaskDef limit can hold back
  (``history.polled_events_from``);
* SQLite: a read of the candidates then an ``UPDATE ... RETURNING`` of them; the IMMEDIATE
  transaction makes it atomic (one writer at a time).
Tasks over a TaskDef limit (``concurrentExecLimit``, ``rateLimitPerFrequency``) are given
back in the same transaction (``apps.engine.limits``).
Higher ``workflowPriority`` is served first, then the earliest visible. Each task handed
out gets a ``task.polled`` event in its execution's history, in the claim's transaction.
Source: Conductor ``ExecutionService.poll`` (IN_PROGRESS, startTime if 0, workerId,
pollCount+1, callbackAfterSeconds 0) and the SQL ``QueueDAO`` pop.
"""
from __future__ import annotations

import threading
import time

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection, transaction

from apps.core import lifecycle
from apps.core.clock import now_ms
from apps.core.errors import InvalidInput
from apps.engine import history, limits, notify
from apps.engine.models import PollData, TaskExecution
from apps.engine.state import TASK_FIELDS, TaskState
from apps.engine.store import sql_cursor, task_from_row



def queue_name_for(task_type: str, domain: str | None) -> str:
    """``[domain:]taskType`` (Conductor's QueueUtils.getQueueName without namespaces)."""
    return f"{domain}:{task_type}" if domain else task_type


# What a claim changes on a task, restored when the task is not handed out after all.
_CLAIM_RESTORED = ("start_time", "worker_id", "callback_after_seconds", "update_time")


def _announce(tasks: list[TaskState]) -> None:
    """Tell the listeners (live pages on every server, through the channel layer) that
    these tasks' executions changed: a poll moves a task to IN_PROGRESS."""
    ids = sorted({t.workflow_id for t in tasks})
    transaction.on_commit(lambda: [notify.workflow_changed(wf_id) for wf_id in ids], robust=True)


# The claim's statements, built once: the candidates (with what _CLAIM_RESTORED restores), and
# on PostgreSQL the claim itself as a locking CTE, evaluated exactly once ("IN (SELECT ...
# LIMIT n SKIP LOCKED)" may be re-run by the planner and claim more than n rows).
_PICKED = ("SELECT task_id, " + ", ".join(_CLAIM_RESTORED) + " FROM engine_task_execution "
           "WHERE queue_name = %s AND status = 'SCHEDULED' AND visible_at <= %s "
           "ORDER BY workflow_priority DESC, visible_at LIMIT %s")
# SQLite's planner, without statistics, prefers task_poll (both of its columns constrained)
# and then sorts the whole queue. The unary + keeps visible_at out of the index search (the
# documented SQLite idiom), so the index that gives the ORDER BY, task_claim, is taken and
# read up to the LIMIT (2,500 queued: 0.34 ms -> 0.01 ms per read); on a database not yet
# migrated to it, task_poll serves as before.
_PICKED_SQLITE = _PICKED.replace("AND visible_at <= %s", "AND +visible_at <= %s")
_CLAIM_CTE = (
    f"WITH picked AS ({_PICKED} FOR UPDATE SKIP LOCKED), claimed AS ("
    "UPDATE engine_task_execution AS t SET status = 'IN_PROGRESS', "
    "start_time = CASE WHEN t.start_time = 0 THEN %s ELSE t.start_time END, "
    "update_time = %s, worker_id = %s, poll_count = t.poll_count + 1, callback_after_seconds = 0 "
    "FROM picked WHERE t.task_id = picked.task_id RETURNING "
    + ", ".join(f"t.{c}" for c in TASK_FIELDS) + ", " + ", ".join(f"picked.{c} AS before_{c}" for c in _CLAIM_RESTORED)
    # the task.polled events of the tasks no limit can hold back, in the same statement
    + "), polled AS (" + history.polled_events_from("claimed") + ") SELECT * FROM claimed")


def claim(queue_name: str, count: int, worker_id: str | None, now: int | None = None) -> list[TaskState]:
    """Move up to ``count`` pollable tasks of ``queue_name`` to IN_PROGRESS for
    ``worker_id`` and return them (one statement, see module doc). Tasks over their
    TaskDef's ``concurrentExecLimit`` or rate limit go back to the queue unchanged and are
    postponed (``apps.engine.limits``), so a poll may return fewer tasks than it claimed."""
    now = now if now is not None else now_ms()
    nested = connection.in_atomic_block  # inside a caller's transaction (update-v2)
    # no savepoint inside a caller's transaction: a failed claim fails the caller anyway
    with transaction.atomic(savepoint=False):
        with sql_cursor() as cursor:
            events_written = connection.vendor == "postgresql"
            if events_written:
                # A claim lost in a database crash only means the task is handed out again
                # (at-least-once delivery), so its commit need not wait for the WAL flush;
                # not so inside a caller's transaction (a task update must be durable).
                if not nested:
                    cursor.execute("SET LOCAL synchronous_commit = off")
                cursor.execute(_CLAIM_CTE, [queue_name, now, count, now, now, worker_id, now])
                rows = cursor.fetchall()
                width = len(TASK_FIELDS)
                tasks = [task_from_row(r[:width]) for r in rows]
                before = {t.task_id: r[width:] for t, r in zip(tasks, rows)}
            else:
                # the IMMEDIATE transaction admits one writer: read the candidates, then claim them
                cursor.execute(_PICKED_SQLITE, [queue_name, now, count])
                found = cursor.fetchall()
                if not found:
                    return []
                before = {r[0]: r[1:] for r in found}
                marks = ", ".join(["%s"] * len(found))
                cursor.execute(
                    "UPDATE engine_task_execution SET status = 'IN_PROGRESS', "
                    "start_time = CASE WHEN start_time = 0 THEN %s ELSE start_time END, "
                    "update_time = %s, worker_id = %s, poll_count = poll_count + 1, callback_after_seconds = 0 "
                    f"WHERE status = 'SCHEDULED' AND task_id IN ({marks}) RETURNING {', '.join(TASK_FIELDS)}",
                    [now, now, worker_id, *before])
                tasks = [task_from_row(r) for r in cursor.fetchall()]
            handed = _hand_out(cursor, tasks, before, now, events_written=events_written)
    if handed:
        _announce(handed)
    return handed


def _hand_out(cursor, tasks: list[TaskState], before: dict[str, tuple], now: int, *,
              events_written: bool) -> list[TaskState]:
    """The claimed ``tasks`` a claim hands out, in delivery order: those over a TaskDef
    limit given back (``before``: their ``_CLAIM_RESTORED`` values by task id), the
    ``task.polled`` events of the others written (on PostgreSQL, ``events_written``, the
    claim's statement wrote those of the tasks no limit can hold back)."""
    tasks.sort(key=lambda t: (-t.workflow_priority, t.visible_at))
    handed, refused = limits.admit(tasks, now)
    if refused:
        _give_back(cursor, refused, before)
    if events_written:
        handed_limited = [t for t in handed if t.concurrent_exec_limit or t.rate_limit_per_frequency]
        history.record_polls(cursor, handed_limited, now)
    else:
        history.record_polls(cursor, handed, now)
    return handed


# PostgreSQL: one claim for several workers at once, the i-th task claimed for the i-th
# worker id of the array (a fused batch's update-v2 calls of one queue, ``claim_for``)
_CLAIM_FOR_CTE = (
    f"WITH picked AS ({_PICKED} FOR UPDATE SKIP LOCKED), "
    "numbered AS (SELECT picked.*, row_number() OVER () AS n FROM picked), "
    "workers AS (SELECT w, n FROM unnest(%s::text[]) WITH ORDINALITY AS x(w, n)), claimed AS ("
    "UPDATE engine_task_execution AS t SET status = 'IN_PROGRESS', "
    "start_time = CASE WHEN t.start_time = 0 THEN %s ELSE t.start_time END, "
    "update_time = %s, worker_id = workers.w, poll_count = t.poll_count + 1, callback_after_seconds = 0 "
    "FROM numbered JOIN workers USING (n) WHERE t.task_id = numbered.task_id RETURNING "
    + ", ".join(f"t.{c}" for c in TASK_FIELDS) + ", "
    + ", ".join(f"numbered.{c} AS before_{c}" for c in _CLAIM_RESTORED) + ", numbered.n AS claimed_for"
    + "), polled AS (" + history.polled_events_from("claimed") + ") SELECT * FROM claimed")


def claim_for(queue_name: str, worker_ids: list[str | None], now: int | None = None) -> list[TaskState | None]:
    """One task of ``queue_name`` for each of ``worker_ids`` (IN_PROGRESS for that worker),
    claimed together: the list of tasks in the order of ``worker_ids``, None for a worker
    left without one (the queue had fewer, or a TaskDef limit held a task back, as in
    ``claim``). Inside the caller's transaction. PostgreSQL: one statement for all of
    them (``_CLAIM_FOR_CTE``); elsewhere one ``claim`` per worker."""
    now = now if now is not None else now_ms()
    if connection.vendor != "postgresql":
        out = []
        for worker_id in worker_ids:
            got = claim(queue_name, 1, worker_id, now)
            out.append(got[0] if got else None)
        return out
    width = len(TASK_FIELDS)
    with transaction.atomic(savepoint=False), sql_cursor() as cursor:
        cursor.execute(_CLAIM_FOR_CTE, [queue_name, now, len(worker_ids), list(worker_ids), now, now, now])
        rows = cursor.fetchall()
        tasks = [task_from_row(r[:width]) for r in rows]
        before = {t.task_id: r[width:width + len(_CLAIM_RESTORED)] for t, r in zip(tasks, rows)}
        slot = {t.task_id: int(r[-1]) - 1 for t, r in zip(tasks, rows)}
        handed = _hand_out(cursor, tasks, before, now, events_written=True)
    out: list[TaskState | None] = [None] * len(worker_ids)
    for task in handed:
        out[slot[task.task_id]] = task
    if handed:
        _announce(handed)
    return out


def _give_back(cursor, refused: dict[str, int], before: dict[str, tuple]) -> None:
    """Undo the claim of ``refused`` tasks (``{task_id: visible_at}``): SCHEDULED again with
    the values they had, one poll fewer, visible from the postponed time."""
    cursor.executemany(
        "UPDATE engine_task_execution SET status = 'SCHEDULED', poll_count = poll_count - 1, "
        + ", ".join(f"{c} = %s" for c in _CLAIM_RESTORED) + ", visible_at = %s WHERE task_id = %s",
        [[*before[task_id], visible_at, task_id] for task_id, visible_at in refused.items()])


def has_pollable(queue_name: str, now: int) -> bool:
    """Cheap read: is anything pollable on this queue now?"""
    return TaskExecution.objects.filter(queue_name=queue_name, status="SCHEDULED", visible_at__lte=now).exists()


def next_visible(queue_name: str) -> int | None:
    """Epoch ms at which the earliest SCHEDULED task of this queue becomes pollable (in
    the past when one is pollable now), or None when the queue is empty (index task_poll)."""
    with sql_cursor() as cursor:  # an idle long poll's one statement: no ORM query building
        cursor.execute("SELECT MIN(visible_at) FROM engine_task_execution WHERE queue_name = %s AND status = 'SCHEDULED'",
                       [queue_name])
        row = cursor.fetchone()
    return row[0] if row else None


# Poll data is written at most once per POLL_DATA_RESOLUTION_MS per (queue, domain,
# worker) and process.
_poll_seen: dict[tuple[str, str, str], int] = {}
_poll_lock = threading.Lock()


def poll_data_due(task_type: str, domain: str | None, worker_id: str | None, now: int) -> bool:
    """Would ``record_poll`` write now (the last write of this key by this process is
    ``POLL_DATA_RESOLUTION_MS`` or more ago)? A read of this process's memory only."""
    last = _poll_seen.get((task_type, domain or "", worker_id or ""), 0)
    return now - last >= settings.CONDUCTOR["POLL_DATA_RESOLUTION_MS"]


def record_poll(task_type: str, domain: str | None, worker_id: str | None, now: int) -> None:
    """Remember that ``worker_id`` polled ``task_type`` (PollData.lastPollTime, ms)."""
    key = (task_type, domain or "", worker_id or "")
    with _poll_lock:
        last = _poll_seen.get(key, 0)
        if now - last < settings.CONDUCTOR["POLL_DATA_RESOLUTION_MS"]:
            return
        _poll_seen[key] = now
    own_commit = not connection.in_atomic_block  # a caller's commit must stay durable
    with transaction.atomic(), sql_cursor() as cursor:
        if own_commit and connection.vendor == "postgresql":
            # a last-poll time lost in a database crash is harmless: no WAL flush to wait for
            cursor.execute("SET LOCAL synchronous_commit = off")
        cursor.execute("UPDATE engine_poll_data SET last_poll_time = %s "
                       "WHERE queue_name = %s AND domain = %s AND worker_id = %s", [now, *key])
        updated = cursor.rowcount
    if not updated:
        PollData.objects.get_or_create(queue_name=key[0], domain=key[1], worker_id=key[2],
                                       defaults={"last_poll_time": now})


# --- empty queues known without a read ------------------------------------------------------------
# queue name -> (notify.queue_mark taken before the read that found nothing pollable, epoch ms
# until which the answer holds, the read's next visible time or None)
_idle: dict[str, tuple[object, int, int | None]] = {}
_IDLE_MAX_QUEUES = 10_000


def _remember_idle(queue_name: str, mark, at: int | None, now: int) -> None:
    """The read that began under ``mark`` found nothing pollable on ``queue_name`` at
    ``now`` (``at``: when its earliest delayed task becomes visible, None when empty)."""
    ttl = settings.CONDUCTOR["IDLE_QUEUE_KNOWLEDGE_MS"]
    if mark is None or ttl <= 0:
        return
    if len(_idle) >= _IDLE_MAX_QUEUES:  # bounded: many one-off queue names start over
        _idle.clear()
    _idle[queue_name] = (mark, now + ttl if at is None else min(at, now + ttl), at)


def known_idle(queue_name: str, now: int) -> tuple[bool, int | None]:
    """``(True, next visible time or None)`` when this process knows without a read that
    nothing is pollable on ``queue_name`` now: an earlier read found nothing, no task was
    queued on it since (``notify.queue_mark`` unchanged: this process's commits, other
    processes' through the PostgreSQL listener or SQLite's WAL index) and neither its
    next delayed task's time nor ``IDLE_QUEUE_KNOWLEDGE_MS`` after the read (a bound on
    what a lost wake-up could cost) has come. ``(False, None)`` otherwise."""
    entry = _idle.get(queue_name)
    if entry is None:
        return False, None
    mark, until, at = entry
    if now < until and notify.queue_mark(queue_name) == mark:
        return True, at
    _idle.pop(queue_name, None)
    return False, None


def poll_once(task_type: str, worker_id: str | None, domain: str | None, count: int) -> list[TaskState]:
    """One attempt of a poll, no waiting: record poll data, then claim up to ``count``
    tasks of ``[domain:]task_type`` (after a plain read: an idle poll takes no write lock)."""
    return _attempt(task_type, worker_id, domain, count)[0]


def _attempt(task_type: str, worker_id: str | None, domain: str | None, count: int,
             woken: bool = False, learn: bool = False) -> tuple[list[TaskState], int | None]:
    """``poll_once`` plus, when nothing was handed out, when the queue's next task becomes
    visible (epoch ms, or None for an empty queue): how long a long poll may sleep.
    ``woken``: tasks were just queued on the queue, so claim without looking first (a
    poll that another one beat to them then looks, to sleep as long as it may).
    ``learn``: remember an empty look for ``known_idle`` (outside a transaction only,
    where every change this look could miss commits and so changes the queue's mark)."""
    now = now_ms()
    record_poll(task_type, domain, worker_id, now)
    queue_name = queue_name_for(task_type, domain)
    if not woken:
        mark = notify.queue_mark(queue_name) if learn and not connection.in_atomic_block else None
        at = next_visible(queue_name)
        if at is None or at > now:
            _remember_idle(queue_name, mark, at, now)
            return [], at
    tasks = claim(queue_name, count, worker_id)
    if tasks:
        return tasks, None
    if woken:
        at = next_visible(queue_name)
        if at is None or at > now:
            return [], at
    return [], now


def _poll_once_in_pool(task_type: str, worker_id: str | None, domain: str | None,
                       count: int, woken: bool = False) -> tuple[list[TaskState], int | None]:
    """``_attempt`` in a pool thread (an empty look remembered for ``known_idle``), whose
    database connection is then closed or given back to the pool, as Django does at the
    end of a request."""
    try:
        return _attempt(task_type, worker_id, domain, count, woken, learn=True)
    finally:
        close_old_connections()


def _record_poll_closing(task_type: str, domain: str | None, worker_id: str | None, now: int) -> None:
    """``record_poll`` in a pool thread, its connection then closed or given back."""
    try:
        record_poll(task_type, domain, worker_id, now)
    finally:
        close_old_connections()


_attempt_in_pool = sync_to_async(_poll_once_in_pool, thread_sensitive=False)
_record_poll_in_pool = sync_to_async(_record_poll_closing, thread_sensitive=False)
_attempt_in_caller = sync_to_async(_attempt, thread_sensitive=True)


async def poll(*, task_type: str, worker_id: str | None = None, domain: str | None = None, count: int = 1,
               timeout_ms: int = 0, in_caller_thread: bool = False) -> list[TaskState]:
    """Poll up to ``count`` (1 to ``POLL_MAX_TASKS``) tasks of ``task_type`` (and
    ``domain``), waiting up to ``timeout_ms`` (a long poll, ms) for some to be queued.

    An attempt on a queue this process knows to be empty (``known_idle``) is answered
    without reading it (without a thread at all unless its poll data is due). Every other attempt
    (``poll_once``) runs in a pool thread with its own database connection;
    with ``in_caller_thread`` it runs in the thread that called ``async_to_sync`` instead
    (a synchronous Django view: its connection, its transaction). The wait is on the event
    loop: woken at once by a commit in this process and, on PostgreSQL, by the process's
    queue listener (``notify.start_queue_listener``) for tasks other processes queued; it
    also ends when the queue's next delayed task becomes visible. On SQLite, or while the
    listener is not connected, it re-checks the database every ``LONG_POLL_RECHECK_MS``.
    Woken, it claims at once; a wait that lasts to the timeout answers ``[]`` without a
    last look (on SQLite, tasks another process queued in that last re-check interval go
    to the next poll).

    Errors: InvalidInput ``Long Poll Timeout value cannot be more than 5 seconds`` above
    ``MAX_LONG_POLL_MS``. Side effects: claimed tasks become IN_PROGRESS (TaskDef rate and
    concurrency limits applied, live pages told after commit); poll data is recorded.
    Source: Conductor ``ExecutionService.poll``.
    """
    if timeout_ms > settings.CONDUCTOR["MAX_LONG_POLL_MS"]:
        raise InvalidInput("Long Poll Timeout value cannot be more than 5 seconds")
    count = max(1, min(int(count or 1), settings.CONDUCTOR["POLL_MAX_TASKS"]))
    attempt = _attempt_in_caller if in_caller_thread else _attempt_in_pool
    recheck_s = settings.CONDUCTOR["LONG_POLL_RECHECK_MS"] / 1000
    queue_name = queue_name_for(task_type, domain)
    deadline = time.monotonic() + max(timeout_ms, 0) / 1000
    woken = False
    while True:
        with notify.queue_waiter(queue_name) as waiter:
            now = now_ms()
            idle, next_at = (False, None) if woken or in_caller_thread else known_idle(queue_name, now)
            if idle:
                tasks = []  # known empty: no read; poll data written when due (then in a pool thread)
                if poll_data_due(task_type, domain, worker_id, now):
                    await _record_poll_in_pool(task_type, domain, worker_id, now)
            else:
                tasks, next_at = await attempt(task_type, worker_id, domain, count, woken)
            remaining = deadline - time.monotonic()
            if tasks or remaining <= 0 or lifecycle.stopping.is_set():
                return tasks  # no wait begins once the server is stopping
            wait = remaining
            if not notify.start_queue_listener():
                wait = min(wait, recheck_s)  # tasks queued by another process: look again
            if next_at is not None:
                # a delayed task becomes visible (or one was there but not handed out:
                # a limit, a concurrent claim): look again then, never in a hot loop
                wait = min(wait, max((next_at - now_ms()) / 1000 + 0.001, recheck_s if next_at <= now_ms() else 0))
            woken = await waiter.wait(wait)
            if lifecycle.stopping.is_set():
                return []  # the server is stopping (its wake-up): answer now, claim nothing more
            if not woken and wait >= remaining:
                return []  # waited the whole timeout for a wake-up that did not come


def task_poll(*, task_type: str, worker_id: str | None = None, domain: str | None = None, count: int = 1,
              timeout_ms: int = 0) -> list[TaskState]:
    """``poll`` called from synchronous code (a benchmark, a test, a shell), its database
    work in the calling thread; the same arguments, answer and errors."""
    return async_to_sync(poll)(task_type=task_type, worker_id=worker_id, domain=domain, count=count,
                               timeout_ms=timeout_ms, in_caller_thread=True)


def queue_sizes(task_types: list[str]) -> dict[str, int]:
    """``{taskType: number of SCHEDULED tasks}`` for each given queue name."""
    return {t: TaskExecution.objects.filter(queue_name=t, status="SCHEDULED").count() for t in task_types}


def all_queue_sizes() -> dict[str, int]:
    """``{queueName: SCHEDULED count}`` of every worker queue, sorted by name."""
    from django.db.models import Count

    rows = (TaskExecution.objects.filter(status="SCHEDULED").exclude(queue_name="")
            .values("queue_name").annotate(n=Count("task_id")).order_by("queue_name"))
    return {r["queue_name"]: r["n"] for r in rows}


def all_queue_details_verbose() -> dict[str, dict[str, dict[str, int]]]:
    """``GET /api/tasks/queue/all/verbose``: ``{queueName: {"a": {"size": n, "uacked": m}}}``
    for every worker queue with a SCHEDULED or IN_PROGRESS task. ``size`` counts the
    SCHEDULED tasks (waiting for a poll), ``uacked`` the IN_PROGRESS ones (handed to a
    worker, not yet updated). One shard, ``"a"``, as Conductor's SQL QueueDAO answers."""
    from django.db.models import Count

    rows = (TaskExecution.objects.filter(status__in=("SCHEDULED", "IN_PROGRESS")).exclude(queue_name="")
            .values("queue_name", "status").annotate(n=Count("task_id")).order_by("queue_name"))
    out: dict[str, dict[str, dict[str, int]]] = {}
    for r in rows:
        shard = out.setdefault(r["queue_name"], {"a": {"size": 0, "uacked": 0}})["a"]
        shard["size" if r["status"] == "SCHEDULED" else "uacked"] = r["n"]
    return out


def pending_tasks(task_type: str, start: int = 0, count: int = 100) -> list[TaskState]:
    """``GET /api/admin/task/{tasktype}``: the SCHEDULED and IN_PROGRESS tasks of
    ``task_type`` (a worker task's name, or a system task's type), oldest scheduled first
    (then by task id), ``count`` of them from ``start`` (Conductor's
    ``AdminService.getListOfPendingTask``: a start past the end gives ``[]``)."""
    columns = ", ".join(TASK_FIELDS)
    with sql_cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM engine_task_execution WHERE status IN ('SCHEDULED', 'IN_PROGRESS') "
            "AND (task_type = %s OR (task_type = 'SIMPLE' AND task_def_name = %s)) "
            "ORDER BY scheduled_time, task_id LIMIT %s OFFSET %s", [task_type, task_type, count, start])
        return [task_from_row(r) for r in cursor.fetchall()]


def poll_data(task_type: str | None = None) -> list[dict]:
    """Conductor ``PollData`` list (``queueName``, ``domain``, ``workerId``, ``lastPollTime``)."""
    qs = PollData.objects.all().order_by("queue_name", "domain", "-last_poll_time", "worker_id")
    if task_type:
        qs = qs.filter(queue_name=task_type)
    out = []
    for p in qs:
        item = {"queueName": p.queue_name, "workerId": p.worker_id, "lastPollTime": p.last_poll_time}
        if p.domain:
            item["domain"] = p.domain
        out.append(item)
    return out


def requeue_pending(task_type: str) -> int:
    """Make the SCHEDULED tasks of ``task_type`` (any domain) pollable now, dropping
    pending callback delays; returns how many (Conductor's requeuePendingTask)."""
    now = now_ms()
    from django.db.models import Q

    with transaction.atomic():
        pending = TaskExecution.objects.filter(Q(queue_name=task_type) | Q(queue_name__endswith=f":{task_type}"),
                                               status="SCHEDULED")
        names = set(pending.values_list("queue_name", flat=True).distinct())
        count = pending.update(visible_at=now, callback_after_seconds=0)
        notify.publish_queued(names)
        transaction.on_commit(lambda: notify.tasks_queued(names), robust=True)
    return count
