"""Bulk actions over every execution a search matches, as a background job.

``preview`` is the dry run (how many match, how many the action applies to by their
current status, the first targets); ``create`` resolves the matching ids (in the
search's order, at most ``BULK_QUERY_MAX``), stores a ``BulkJob``, audits it and hands
it to the django-q2 cluster; ``run`` (the cluster job) acts on each target through
``apps.ui.actions.perform`` (one audit row each, grouped by the job id), skips targets
whose status no longer allows the action, saves progress as it goes, and stops when the
operator cancels. A second delivery of the same job does nothing; a job that stopped
half-way resumes after its last saved result.
"""
from __future__ import annotations

import logging
import time
import uuid

from django.db import transaction

from apps.engine.models import WorkflowExecution
from apps.ui import actions
from apps.ui.models import BulkJob
from apps.ui.selectors import SearchQuery, matching

log = logging.getLogger(__name__)

BULK_QUERY_MAX = 10_000  # executions one job may act on
PREVIEW_SAMPLE = 50
SAVE_EVERY_SECONDS = 0.5


def applies(action: str, status: str) -> bool:
    """Whether ``action`` applies to an execution in ``status`` (the actions menu's rule)."""
    return action in actions.allowed_actions(status, sub_workflows=True)


def preview(action: str, query: SearchQuery) -> dict:
    """The dry run of ``action`` on every match of ``query``: ``{"total", "by_status":
    [{"status", "count", "applies"}], "will_act", "will_skip", "sample": [first ids acted
    on], "too_many": bool (more than BULK_QUERY_MAX)}``."""
    from django.db.models import Count

    rows = list(matching(query).values_list("status").annotate(n=Count("workflow_id")).order_by("status"))
    by_status = [{"status": s, "count": n, "applies": applies(action, s)} for s, n in rows]
    total = sum(r["count"] for r in by_status)
    will_act = sum(r["count"] for r in by_status if r["applies"])
    allowed = [r["status"] for r in by_status if r["applies"]]
    sample = list(matching(query).filter(status__in=allowed).order_by(*query.order_by())
                  .values_list("workflow_id", flat=True)[:PREVIEW_SAMPLE]) if allowed else []
    return {"total": total, "by_status": by_status, "will_act": will_act, "will_skip": total - will_act,
            "sample": sample, "too_many": total > BULK_QUERY_MAX}


def create(user, action: str, reason: str, query: SearchQuery, query_string: str) -> BulkJob:
    """Store the job for every match of ``query`` (ids resolved now, in the search's
    order) and audit it as action ``bulk_job``; the cluster starts it after commit.
    Errors: ValueError when there are more than ``BULK_QUERY_MAX`` matches or no reason."""
    if not reason.strip():
        raise ValueError("A reason is required for a bulk action over a search.")
    targets = list(matching(query).order_by(*query.order_by()).values_list("workflow_id", flat=True)
                   [:BULK_QUERY_MAX + 1])
    if len(targets) > BULK_QUERY_MAX:
        raise ValueError(f"The search matches more than {BULK_QUERY_MAX} executions: narrow it first.")
    with transaction.atomic():
        job = BulkJob.objects.create(id=str(uuid.uuid4()), user=user if getattr(user, "pk", None) else None,
                                     username=user.get_username(), action=action, reason=reason.strip(),
                                     query=query_string, targets=targets)
        actions.record(user, "bulk_job", job.id, {"action": action, "reason": job.reason, "query": query_string,
                                                  "executions": len(targets)}, group=job.id)
        transaction.on_commit(lambda: enqueue(job.id))
    return job


def enqueue(job_id: str) -> None:
    """Hand the job to the django-q2 cluster."""
    from django_q.tasks import async_task

    async_task("apps.ui.bulkjobs.run", job_id, task_name=f"bulk-{job_id}")


def cancel(job_id: str) -> None:
    """Stop a job: a queued one is CANCELED at once, a running one at its next target."""
    BulkJob.objects.filter(pk=job_id, status="QUEUED").update(status="CANCELED")
    BulkJob.objects.filter(pk=job_id, status="RUNNING").update(status="CANCELING")


class _Operator:
    """The job's user as ``actions.perform`` wants it, also when the account is gone."""

    def __init__(self, job: BulkJob):
        self.pk = job.user_id
        self._name = job.username

    def get_username(self) -> str:
        return self._name


def run(job_id: str) -> None:
    """The cluster job: act on each target not done yet; see the module doc."""
    claimed = BulkJob.objects.filter(pk=job_id, status="QUEUED").update(status="RUNNING")
    if not claimed:
        return  # done, canceled, or another delivery runs it
    job = BulkJob.objects.get(pk=job_id)
    operator = job.user if job.user_id else _Operator(job)
    done = {r["target"] for r in job.results}
    results = list(job.results)
    statuses = dict(WorkflowExecution.objects.filter(pk__in=job.targets).values_list("workflow_id", "status"))
    params = {"reason": job.reason}
    saved_at = time.monotonic()

    def save(status: str | None = None) -> str:
        fields = {"results": results}
        if status:
            fields["status"] = status
        BulkJob.objects.filter(pk=job_id).update(**fields)
        return BulkJob.objects.filter(pk=job_id).values_list("status", flat=True).first() or "CANCELED"

    for target in job.targets:
        if target in done:
            continue
        status = statuses.get(target)
        current = WorkflowExecution.objects.filter(pk=target).values_list("status", flat=True).first() or status
        if current is None:
            results.append({"target": target, "outcome": "skipped", "message": "no longer exists"})
        elif not applies(job.action, current):
            results.append({"target": target, "outcome": "skipped",
                            "message": f"{current}: {job.action} does not apply"})
        else:
            result = actions.perform(operator, job.action, target, params, bulk=True, group=job_id)
            results.append({"target": target, "outcome": "succeeded" if result.ok else "failed",
                            "message": result.message})
        if time.monotonic() - saved_at >= SAVE_EVERY_SECONDS:
            saved_at = time.monotonic()
            if save() == "CANCELING":
                save("CANCELED")
                return
    final = save()
    save("CANCELED" if final == "CANCELING" else "DONE")
