"""What each alert condition finds firing now: ``firing(rule, now) -> {subject: (summary,
details)}``, the subjects being workflow names (FAILURE, FAILURE_RATE, LONG_RUN) or task
queues (QUEUE_AGE, NO_POLLER).

Every query is bounded and served by an index of the engine's tables: per definition
name, the ``wf_search`` index (workflow_name, status, create_time; FAILURE_RATE and
LONG_RUN read all the watched names in one grouped query, then LONG_RUN the oldest run
of each name that fires); per queue, the
``task_poll`` index (queue_name, visible_at of SCHEDULED tasks) and the small poll-data
table. "Every definition" walks the registered definition names (at most
``ALERTS_MAX_SUBJECTS``), never the executions table. No workflow lock is taken.

* FAILURE: the newest FAILED or TIMED_OUT run of the definition started after its newest
  COMPLETED run and ended after the rule was created. It stops firing (the incident
  resolves) when a run started later completes.
* FAILURE_RATE: of the runs started in the last ``window_seconds`` that have ended, the
  share FAILED or TIMED_OUT is at least ``failure_rate`` (0..1), with at least
  ``min_runs`` ended runs.
* LONG_RUN: a run RUNNING for more than ``threshold_seconds`` since it started.
* QUEUE_AGE: the oldest pollable task of the queue has waited more than
  ``threshold_seconds``.
* NO_POLLER: tasks wait in the queue and no worker has polled it for
  ``threshold_seconds`` (or ever).

Queues of a rule: its ``task_type``; else the worker (SIMPLE) tasks of the newest version
of its definition; else every registered TaskDef name. Domain queues
(``domain:taskType``) are not watched.
"""
from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Max

from apps.alerts.models import AlertRule, Condition

FAILED = ("FAILED", "TIMED_OUT")
ENDED = ("COMPLETED", "FAILED", "TIMED_OUT", "TERMINATED")


def _max_subjects() -> int:
    return int(settings.CONDUCTOR.get("ALERTS_MAX_SUBJECTS", 500))


def workflow_names(rule: AlertRule) -> list[str]:
    """The definition names a rule watches (its own, or every registered one)."""
    if rule.workflow_name:
        return [rule.workflow_name]
    from apps.metadata.models import WorkflowDef

    return list(WorkflowDef.objects.order_by("name").values_list("name", flat=True).distinct()[:_max_subjects()])


def _worker_tasks(tasks: list, out: set[str]) -> None:
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        if (task.get("type") or "SIMPLE") == "SIMPLE" and task.get("name"):
            out.add(task["name"])
        for key in ("loopOver", "defaultCase"):
            _worker_tasks(task.get(key), out)
        for branch in (task.get("decisionCases") or {}).values():
            _worker_tasks(branch, out)
        for branch in task.get("forkTasks") or []:
            _worker_tasks(branch, out)


def queue_names(rule: AlertRule) -> list[str]:
    """The task queues a rule watches (see the module docstring)."""
    if rule.task_type:
        return [rule.task_type]
    if rule.workflow_name:
        from apps.metadata.models import WorkflowDef

        row = WorkflowDef.objects.filter(name=rule.workflow_name).order_by("-version").first()
        found: set[str] = set()
        if row is not None:
            _worker_tasks(row.definition.get("tasks"), found)
        return sorted(found)
    from apps.metadata.models import TaskDef

    return list(TaskDef.objects.order_by("name").values_list("name", flat=True)[:_max_subjects()])


def _runs(name: str):
    from apps.engine.models import WorkflowExecution

    return WorkflowExecution.objects.filter(workflow_name=name)


def _runs_of(names: list[str]):
    from apps.engine.models import WorkflowExecution

    return WorkflowExecution.objects.filter(workflow_name__in=names)


def _failure(rule: AlertRule, now: int) -> dict:
    out = {}
    for name in workflow_names(rule):
        failed = (_runs(name).filter(status__in=FAILED).order_by("-create_time")
                  .values("workflow_id", "create_time", "end_time", "reason_for_incompletion").first())
        if failed is None or (failed["end_time"] or 0) < rule.create_time:
            continue
        completed = _runs(name).filter(status="COMPLETED").order_by("-create_time").values_list(
            "create_time", flat=True).first()
        if completed is not None and completed > failed["create_time"]:
            continue
        reason = (failed["reason_for_incompletion"] or "")[:300]
        out[name] = (f"{name}: run {failed['workflow_id']} failed" + (f": {reason}" if reason else ""),
                     {"workflowId": failed["workflow_id"], "reason": reason})
    return out


def _failure_rate(rule: AlertRule, now: int) -> dict:
    out = {}
    since = now - (rule.window_seconds or 0) * 1000
    counts: dict[str, dict[str, int]] = {}
    # one grouped query for every watched name (not one per name): each (name, status) an
    # index range of ``wf_search``
    for r in (_runs_of(workflow_names(rule)).filter(create_time__gte=since, status__in=ENDED)
              .values("workflow_name", "status").annotate(n=Count("pk")).order_by()):
        counts.setdefault(r["workflow_name"], {})[r["status"]] = r["n"]
    for name, by_status in sorted(counts.items()):
        ended = sum(by_status.values())
        failed = sum(by_status.get(s, 0) for s in FAILED)
        if ended and ended >= rule.min_runs and failed / ended >= (rule.failure_rate or 0):
            out[name] = (f"{name}: {failed} of {ended} runs failed in the last {rule.window_seconds} s "
                         f"({failed / ended:.0%}, threshold {rule.failure_rate:.0%})",
                         {"failed": failed, "ended": ended, "windowSeconds": rule.window_seconds})
    return out


def _long_run(rule: AlertRule, now: int) -> dict:
    out = {}
    before = now - (rule.threshold_seconds or 0) * 1000
    # the names with late runs in one grouped query; the oldest run's id only for those
    late = {r["workflow_name"]: r["n"] for r in (
        _runs_of(workflow_names(rule)).filter(status="RUNNING", create_time__lte=before)
        .values("workflow_name").annotate(n=Count("pk")).order_by())}
    for name, count in sorted(late.items()):
        oldest = (_runs(name).filter(status="RUNNING", create_time__lte=before).order_by("create_time")
                  .values("workflow_id", "create_time").first())
        if oldest is not None:
            out[name] = (f"{name}: {count} run(s) running longer than {rule.threshold_seconds} s, the oldest "
                         f"{oldest['workflow_id']} for {(now - oldest['create_time']) // 1000} s",
                         {"workflowId": oldest["workflow_id"], "count": count})
    return out


def _oldest_waiting(queue: str, now: int) -> int | None:
    from apps.engine.models import TaskExecution

    return (TaskExecution.objects.filter(queue_name=queue, status="SCHEDULED", visible_at__lte=now)
            .order_by("visible_at").values_list("visible_at", flat=True).first())


def _queue_age(rule: AlertRule, now: int) -> dict:
    out = {}
    limit = (rule.threshold_seconds or 0) * 1000
    for queue in queue_names(rule):
        oldest = _oldest_waiting(queue, now)
        if oldest is not None and now - oldest > limit:
            out[queue] = (f"queue {queue}: the oldest task has waited {(now - oldest) // 1000} s "
                          f"(threshold {rule.threshold_seconds} s)", {"oldestWaitSeconds": (now - oldest) // 1000})
    return out


def _no_poller(rule: AlertRule, now: int) -> dict:
    from apps.engine.models import PollData

    out = {}
    limit = (rule.threshold_seconds or 0) * 1000
    for queue in queue_names(rule):
        if _oldest_waiting(queue, now) is None:
            continue
        last = PollData.objects.filter(queue_name=queue, domain="").aggregate(t=Max("last_poll_time"))["t"]
        if last is None or now - last > limit:
            seen = "never polled" if last is None else f"last polled {(now - last) // 1000} s ago"
            out[queue] = (f"queue {queue}: tasks waiting and no worker polling ({seen}; threshold "
                          f"{rule.threshold_seconds} s)", {"lastPollTime": last})
    return out


_CHECKS = {Condition.FAILURE: _failure, Condition.FAILURE_RATE: _failure_rate, Condition.LONG_RUN: _long_run,
           Condition.QUEUE_AGE: _queue_age, Condition.NO_POLLER: _no_poller}


def firing(rule: AlertRule, now: int) -> dict[str, tuple[str, dict]]:
    """``{subject: (summary, details)}`` of what the rule finds wrong at ``now`` (ms)."""
    return _CHECKS[Condition(rule.condition)](rule, now)
