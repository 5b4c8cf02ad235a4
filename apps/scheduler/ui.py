"""Operator pages for schedules: ``/schedules/`` (every schedule with its next runs,
pause/resume) and ``/schedules/<name>`` (the schedule, its next runs and its executions,
each linked to the workflow it started). Viewing needs ``ui.view_executions``; pausing
and resuming need ``ui.operate_workflows`` and are written to the audit log.
"""
from __future__ import annotations

import json

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import ConductorError
from apps.scheduler import services
from apps.scheduler.models import WorkflowSchedule
from apps.ui.permissions import operate_required, ui_context, view_required

PREVIEW_RUNS = 5
EXECUTIONS_SHOWN = 50


def upcoming(row: WorkflowSchedule, count: int = PREVIEW_RUNS) -> list[int]:
    """The next ``count`` slots (epoch ms) of an unpaused schedule, all cron entries
    merged, starting at its stored next run."""
    if row.paused or row.next_run_time is None:
        return []
    data = row.data
    slots: list[int] = []
    for i, (expression, zone_id) in enumerate(services.effective_crons(data)):
        t = row.cron_next[i] if i < len(row.cron_next) else None
        while t is not None and len(slots) < count * 3:
            slots.append(t)
            t = services.next_slot({**data, "runCatchupScheduleInstances": True}, expression, zone_id, t, t)
    return sorted(set(slots))[:count]


def _page(request, template: str, context: dict):
    ctx = ui_context(request)
    ctx.update(context)
    return render(request, template, ctx)


@view_required
@require_GET
def schedules(request):
    """``/schedules/``: every schedule with its crons, state, next runs and last run."""
    rows = list(WorkflowSchedule.objects.order_by("name"))
    items = []
    for row in rows:
        last = services.execution_search(query=f"scheduleName IN ({row.name})", size=1)["results"]
        items.append({"row": row, "data": row.data, "upcoming": upcoming(row), "last": last[0] if last else None,
                      "crons": services.effective_crons(row.data)})
    return _page(request, "ui/schedules.html", {"items": items})


@view_required
@require_GET
def schedule(request, name: str):
    """``/schedules/<name>``: one schedule, its next runs and its newest executions
    (404 when it does not exist)."""
    row = WorkflowSchedule.objects.filter(pk=name).first()
    if row is None:
        raise Http404(f"Schedule '{name}' not found")
    found = services.execution_search(query=f"scheduleName IN ({name})", size=EXECUTIONS_SHOWN)
    return _page(request, "ui/schedule.html", {
        "row": row, "data": row.data, "upcoming": upcoming(row), "crons": services.effective_crons(row.data),
        "executions": found["results"], "total": found["totalHits"],
        "schedule_json": json.dumps(services.schedule_json(row), indent=2)})


@operate_required
@require_POST
def schedule_action(request, name: str, action: str):
    """Pause (with an optional reason) or resume one schedule, audited."""
    from apps.ui.models import AuditLog

    if action not in ("pause", "resume"):
        raise Http404(action)
    reason = (request.POST.get("reason") or "").strip() or None
    try:
        if action == "pause":
            services.schedule_pause(name, reason, user=request.user.get_username())
        else:
            services.schedule_resume(name, user=request.user.get_username())
        ok, message = True, "done"
        messages.success(request, f"Schedule {name}: {action}d.")
    except ConductorError as exc:
        ok, message = False, exc.message
        messages.error(request, f"Schedule {name}: {exc.message}")
    AuditLog.objects.create(user=request.user, username=request.user.get_username(), action=f"schedule_{action}",
                            target=name, params={"reason": reason} if reason else {}, ok=ok, message=message)
    return redirect(_next_page(request))


def _next_page(request) -> str:
    """Where a pause/resume returns: the form's ``next`` when it is a page of this site
    (a path on this host), the schedules list otherwise (no open redirect, and no 500 for
    a ``next`` such as ``javascript:...``, which ``redirect`` took for a view name)."""
    from django.urls import reverse
    from django.utils.http import url_has_allowed_host_and_scheme

    target = request.POST.get("next") or ""
    if target.startswith("/") and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                                                   require_https=request.is_secure()):
        return target
    return reverse("scheduler:schedules")
