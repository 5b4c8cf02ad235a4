"""Task queue liveness for the problem views: a queue's depth and oldest waiting task,
its pollers, and which queues have tasks waiting while no worker polled recently.

A queue is ``[domain:]taskType`` (``TaskExecution.queue_name``); poll records
(``PollData``) name the task type and the domain apart. Every read here is bounded: the
depth counts the ``task_poll`` partial index's range of one queue, the oldest task is
the first row of that range, poll records are one row per (queue, domain, worker).
"""
from __future__ import annotations

from django.db.models import Max

from apps.core.clock import now_ms
from apps.engine.models import PollData, TaskExecution

STUCK_SCAN = 1000  # executions the "stuck" view lists at most (newest waiting tasks first)


def split_queue(queue_name: str) -> tuple[str, str]:
    """``domain:taskType`` -> (taskType, domain); ``taskType`` -> (taskType, "")."""
    if ":" in queue_name:
        domain, task_type = queue_name.split(":", 1)
        return task_type, domain
    return queue_name, ""


def queue_facts(queue_name: str, now: int | None = None) -> dict:
    """``{"queue", "depth" (SCHEDULED tasks), "oldest_ms" (age of the first task in
    delivery order, None when empty), "pollers": [{"worker_id", "last_poll", "age_s"}]
    newest first (at most 10), "last_poll" (ms or None)}`` of one queue."""
    now = now if now is not None else now_ms()
    waiting = TaskExecution.objects.filter(queue_name=queue_name, status="SCHEDULED")
    depth = waiting.count()
    first = waiting.order_by("visible_at").values_list("scheduled_time", flat=True).first() if depth else None
    task_type, domain = split_queue(queue_name)
    polls = list(PollData.objects.filter(queue_name=task_type, domain=domain)
                 .order_by("-last_poll_time", "worker_id")[:10])
    return {"queue": queue_name, "depth": depth, "oldest_ms": max(0, now - first) if first else None,
            "pollers": [{"worker_id": p.worker_id or "(no id)", "last_poll": p.last_poll_time,
                         "age_s": max(0, (now - p.last_poll_time) // 1000)} for p in polls],
            "last_poll": polls[0].last_poll_time if polls else None}


def stale_seconds_setting() -> int:
    """``CONDUCTOR_UI["QUEUE_STALE_POLL_SECONDS"]`` (default 60): a queue with tasks
    waiting and no poll for longer than this many seconds gets a warning."""
    from django.conf import settings

    return int((getattr(settings, "CONDUCTOR_UI", None) or {}).get("QUEUE_STALE_POLL_SECONDS", 60))


def unpolled_queues(stale_seconds: int, now: int | None = None) -> list[str]:
    """Queues with SCHEDULED tasks and no poll within ``stale_seconds`` (never polled
    included), sorted."""
    now = now if now is not None else now_ms()
    waiting = set(TaskExecution.objects.filter(status="SCHEDULED").exclude(queue_name="")
                  .order_by().values_list("queue_name", flat=True).distinct())
    if not waiting:
        return []
    last = {(q, d or ""): t for q, d, t in PollData.objects.values_list("queue_name", "domain")
            .annotate(t=Max("last_poll_time")).values_list("queue_name", "domain", "t")}
    out = []
    for queue in waiting:
        t = last.get(split_queue(queue))
        if t is None or now - t > stale_seconds * 1000:
            out.append(queue)
    return sorted(out)


def stuck_workflow_ids(stale_seconds: int, now: int | None = None) -> list[str]:
    """Ids of executions (at most ``STUCK_SCAN``) with a task waiting in a queue no worker
    polled within ``stale_seconds``."""
    queues = unpolled_queues(stale_seconds, now)
    if not queues:
        return []
    return list(TaskExecution.objects.filter(status="SCHEDULED", queue_name__in=queues)
                .order_by().values_list("workflow_id", flat=True).distinct()[:STUCK_SCAN])
