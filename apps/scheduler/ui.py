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
from apps.ui import actions
from apps.ui.permissions import operate_required, ui_context, view_required

PREVIEW_RUNS = 5
EXECUTIONS_SHOWN = 50


def upcoming(row: WorkflowSchedule, count: int = PREVIEW_RUNS) -> list[int]:
    """The next ``count`` slots (epoch ms) of an unpaused schedule (``services.upcoming_slots``)."""
    return services.upcoming_slots(row, count)


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
    return _schedule_page(request, row)


def _schedule_page(request, row: WorkflowSchedule, backfill_result: dict | None = None,
                   backfill_form: dict | None = None):
    runs = services.schedule_runs(row.name, size=EXECUTIONS_SHOWN, upcoming=10)
    return _page(request, "ui/schedule.html", {
        "row": row, "data": row.data, "upcoming": runs["upcoming"], "crons": services.effective_crons(row.data),
        "executions": runs["past"], "total": runs["totalPast"], "backfill": backfill_result,
        "backfill_form": backfill_form or {}, "backfill_max": _backfill_max(),
        "backfill_new": sum(1 for s in (backfill_result or {}).get("slots", []) if s["state"] == "WOULD_START"),
        "schedule_json": json.dumps(services.schedule_json(row), indent=2)})


def _backfill_max() -> int:
    from apps.scheduler.backfill import max_slots

    return max_slots()


def _ms_field(request, key: str):
    raw = (request.POST.get(key) or "").strip()
    try:
        return int(raw)
    except ValueError:
        return raw or None


@operate_required
@require_POST
def schedule_backfill(request, name: str):
    """``/schedules/<name>/backfill``: ``mode=preview`` lists the slots of the range
    (``startTime``/``endTime``, epoch ms, set by the page's script from the date fields
    in the zone shown); ``mode=run`` starts the ones not run yet, audited."""
    from apps.scheduler import backfill

    row = WorkflowSchedule.objects.filter(pk=name).first()
    if row is None:
        raise Http404(f"Schedule '{name}' not found")
    run = request.POST.get("mode") == "run"
    body = {"startTime": _ms_field(request, "startTime"), "endTime": _ms_field(request, "endTime"), "dryRun": not run}
    form = {"startTime": body["startTime"], "endTime": body["endTime"]}
    try:
        result = backfill.backfill(name, body)
    except ConductorError as exc:
        messages.error(request, f"Backfill of {name}: {actions.error_text(exc)}")
        return _schedule_page(request, row, backfill_form=form)
    if run:
        actions.record(request.user, "schedule_backfill", name, form,
                       message=f"started {result['started']}, already run {result['skipped']}")
        messages.success(request, f"Backfill of {name}: {result['started']} slot(s) started, "
                                  f"{result['skipped']} already run.")
    return _schedule_page(request, row, backfill_result=result, backfill_form=form)


@operate_required
@require_POST
def schedule_action(request, name: str, action: str):
    """Pause (with an optional reason) or resume one schedule, audited."""
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
    actions.record(request.user, f"schedule_{action}", name, {"reason": reason} if reason else {}, ok=ok,
                   message=message)
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
