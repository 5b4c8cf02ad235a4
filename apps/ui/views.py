"""Operator pages (server-rendered) and the small JSON endpoints their scripts use.

Every page needs a signed-in user with ``ui.view_executions``; every action needs
``ui.operate_workflows`` and is a CSRF-protected POST that goes through
``apps.ui.actions.perform`` (engine service + audit log).
"""
from __future__ import annotations

import json
import uuid
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.core.errors import NotFound
from apps.engine import history
from apps.engine import queue as engine_queue
from apps.engine import selectors as engine_selectors
from apps.engine.models import ExecutionEvent, PollData, TaskExecLog, TaskExecution
from apps.engine.params import strip_iteration
from apps.engine.representation import task_json, workflow_json
from apps.metadata.models import TaskDef, WorkflowDef
from apps.ui import actions, agent_run, dryrun, editing, graph, live, selectors
from apps.ui import history as ui_history
from apps.ui.ai_panel import ai_summary
from apps.ui.models import AuditLog
from apps.ui.permissions import can_operate, operate_required, ui_context, view_required


def _render(request, template: str, context: dict, status: int = 200):
    ctx = ui_context(request)
    ctx.update(context)
    return render(request, template, ctx, status=status)


def _load(workflow_id: str, include_tasks: bool = True):
    try:
        return engine_selectors.workflow_get(workflow_id=workflow_id, include_tasks=include_tasks)
    except NotFound:
        raise Http404(f"No such workflow found by id: {workflow_id}") from None


def _json_download(value, filename: str) -> HttpResponse:
    resp = HttpResponse(json.dumps(value, indent=2, default=str), content_type="application/json")
    resp["Content-Disposition"] = f'attachment; filename="{filename}"'
    return resp


def _strict_loads(text: str, what: str):
    """``text`` parsed as JSON by the API's rule (``apps.api.parsers.check_json``): NaN and
    Infinity, nesting deeper than the limit, NUL characters and lone surrogates (written as
    escapes) are refused. Errors: ValueError for text that is not JSON; InvalidInput (400)
    naming ``what`` for JSON that could not be stored (PostgreSQL cannot hold NUL)."""
    from apps.api.parsers import check_json
    from apps.core.errors import InvalidInput

    def constant(name: str):
        raise InvalidInput(f"Invalid {what}: {name} is not a JSON number")

    return check_json(json.loads(text, parse_constant=constant), what)


def _parse_json_field(text: str | None, label: str, *, default=None, want_object: bool = True):
    """Parse a JSON form field; raises ValueError with a message for the operator (text
    that is not JSON, not an object when one is wanted, or JSON the API would refuse)."""
    from apps.core.errors import InvalidInput

    if text is None or not text.strip():
        return default
    try:
        value = _strict_loads(text, label)
    except ValueError as exc:
        raise ValueError(f"{label} is not valid JSON: {exc}") from None
    except InvalidInput as exc:
        raise ValueError(exc.message) from None
    if want_object and not isinstance(value, dict):
        raise ValueError(f"{label} must be a JSON object")
    return value


@require_GET
def static_file(request, path: str):
    """A static file found by the staticfiles finders (``static/`` and the apps'), with a
    short cache lifetime; used when no web server in front serves ``STATIC_URL``."""
    from django.contrib.staticfiles.views import serve

    response = serve(request, path, insecure=True)
    response["Cache-Control"] = "public, max-age=300"
    return response


@require_GET
def favicon(request):
    """``/favicon.ico``: the icon (browsers ask for it before reading the page's link)."""
    return static_file(request, "ui/favicon.svg")


# --- search and bulk -----------------------------------------------------------------------

@view_required
@require_GET
def executions(request):
    """``/executions/``: search with filters, sorting and paging in the URL."""
    query = selectors.SearchQuery.from_querydict(request.GET)
    result = selectors.search_executions(query)
    base = request.GET.copy()
    for key in ("page", "after", "before"):
        base.pop(key, None)

    def page_url(page: int, **cursor: str) -> str:
        """This search's URL at another page (``after``/``before``: a keyset page marker)."""
        params = base.copy()
        params["page"] = str(page)
        params.update(cursor)
        return "?" + params.urlencode()

    def sort_url(column: str) -> str:
        """This search's URL sorted by ``column`` (again: the other direction)."""
        params = base.copy()
        params["sort"] = column if query.sort != column else "-" + column
        return "?" + params.urlencode()

    without_paging = base.copy()
    without_cluster = base.copy()
    without_cluster.pop("cluster", None)
    clusters = selectors.failure_clusters(query) if result.total else []
    for c in clusters:
        params = base.copy()
        params["cluster"] = c["key"]
        c["url"] = "?" + params.urlencode()
    columns = [("id", "Workflow id"), ("name", "Workflow"), ("version", "Ver."), ("status", "Status"),
               ("start", "Started"), ("end", "Ended")]
    headers = [{"key": k, "label": label, "url": sort_url(k),
                "active": query.sort.lstrip("-") == k, "desc": query.sort.startswith("-")} for k, label in columns]
    return _render(request, "ui/executions.html", {
        "query": query, "result": result, "names": selectors.workflow_names(), "statuses": selectors.STATUSES,
        "clusters": clusters, "uncluster_url": "?" + without_cluster.urlencode(),
        "page_sizes": selectors.PAGE_SIZES, "headers": headers,
        "prev_url": (page_url(result.page - 1, before=result.first_cursor) if result.page > 2 else page_url(1))
        if result.page > 1 else None,
        "next_url": page_url(result.page + 1, after=result.last_cursor) if result.page < result.pages else None,
        "bulk_actions": [actions.WORKFLOW_ACTIONS[a] for a in actions.BULK_ACTIONS],
        "current_url": request.get_full_path(),
        "search_query": without_paging.urlencode(),
    })


@operate_required
@require_POST
def bulk(request):
    """``POST /executions/bulk``: first a confirmation (how many, what will happen), then,
    with ``confirm=yes``, the action on each selected execution and a result table."""
    action = request.POST.get("action", "")
    ids = list(dict.fromkeys(i.strip() for i in request.POST.getlist("ids") if i.strip()))
    back = request.POST.get("back") or reverse("ui:executions")
    if not back.startswith("/"):
        back = reverse("ui:executions")
    if action not in actions.BULK_ACTIONS:
        messages.error(request, "Choose a bulk action.")
        return redirect(back)
    if not ids:
        messages.error(request, "Select at least one execution.")
        return redirect(back)
    info = actions.WORKFLOW_ACTIONS[action]
    reason = request.POST.get("reason", "").strip()
    if request.POST.get("confirm") != "yes":
        return _render(request, "ui/bulk_confirm.html", {"action": info, "ids": ids, "back": back, "reason": reason})
    # one audit group for the whole selection: a summary row, then one row per execution
    group = AuditLog.SELECTION_GROUP_PREFIX + uuid.uuid4().hex
    actions.record(request.user, "bulk_selection", group, {"action": action, "reason": reason, "executions": len(ids)},
                   bulk=True, group=group)
    results = [actions.perform(request.user, action, wid, {"reason": reason} if action == "terminate" else {},
                               bulk=True, group=group) for wid in ids]
    return _render(request, "ui/bulk_result.html", {
        "action": info, "results": results, "back": back, "group": group,
        "succeeded": sum(1 for r in results if r.ok), "failed": sum(1 for r in results if not r.ok),
    })


@operate_required
@require_POST
def bulk_query(request):
    """``POST /executions/bulk-query``: an action on every execution a search matches (``q``:
    the search's query string). First the dry run (how many match, how many the action
    applies to by status, the first targets; a reason is required), then, with
    ``confirm=yes``, a background job whose progress page opens."""
    from django.http import QueryDict

    from apps.ui import bulkjobs

    action = request.POST.get("action", "")
    query_string = request.POST.get("q", "")
    reason = request.POST.get("reason", "").strip()
    back = reverse("ui:executions") + ("?" + query_string if query_string else "")
    if action not in actions.BULK_ACTIONS:
        messages.error(request, "Choose a bulk action.")
        return redirect(back)
    query = selectors.SearchQuery.from_querydict(QueryDict(query_string))
    info = actions.WORKFLOW_ACTIONS[action]
    context = {"action": info, "q": query_string, "reason": reason, "back": back,
               "preview": bulkjobs.preview(action, query), "max": bulkjobs.BULK_QUERY_MAX}
    if request.POST.get("confirm") != "yes":
        return _render(request, "ui/bulk_query_confirm.html", context)
    try:
        job = bulkjobs.create(request.user, action, reason, query, query_string)
    except ValueError as exc:
        messages.error(request, str(exc))
        return _render(request, "ui/bulk_query_confirm.html", context, status=400)
    return redirect("ui:bulk_job", job_id=job.id)


def _bulk_job_or_404(job_id: str):
    from apps.ui.models import BulkJob

    job = BulkJob.objects.filter(pk=job_id).first()
    if job is None:
        raise Http404(f"No such bulk job: {job_id}")
    return job


def bulk_job_state(job) -> dict:
    """What the progress page shows: status, counts, and the results grouped by outcome
    (failed first, then skipped, then succeeded)."""
    grouped = {"failed": [], "skipped": [], "succeeded": []}
    for r in job.results:
        grouped[r["outcome"]].append(r)
    return {"id": job.id, "status": job.status, "action": job.action, "reason": job.reason, "counts": job.counts(),
            "results": grouped, "finished": job.status in ("DONE", "CANCELED")}


@view_required
@require_GET
def bulk_job(request, job_id: str):
    """``/bulk-jobs/<id>``: a bulk job's live progress and result table (``.json``: the same as
    data, polled by the page)."""
    job = _bulk_job_or_404(job_id)
    state = bulk_job_state(job)
    if request.GET.get("format") == "json":
        return JsonResponse(state)
    return _render(request, "ui/bulk_job.html", {"job": job, "state": state,
                                                 "info": actions.WORKFLOW_ACTIONS.get(job.action)})


@operate_required
@require_POST
def bulk_job_cancel(request, job_id: str):
    """``POST /bulk-jobs/<id>/cancel``: stop the job at its next target (audited)."""
    from apps.ui import bulkjobs

    job = _bulk_job_or_404(job_id)
    bulkjobs.cancel(job.id)
    actions.record(request.user, "bulk_job_cancel", job.id, {}, group=job.id)
    messages.success(request, "Canceling: the job stops at its next execution.")
    return redirect("ui:bulk_job", job_id=job.id)


TASK_SEARCH_SIZE = 50
TASK_STATUSES = ["SCHEDULED", "IN_PROGRESS", "COMPLETED", "COMPLETED_WITH_ERRORS", "FAILED", "FAILED_WITH_TERMINAL_ERROR",
                 "TIMED_OUT", "CANCELED", "SKIPPED"]


@view_required
@require_GET
def task_search_page(request):
    """``/tasks/``: task executions by type (or SIMPLE task name), status, worker, reference
    and workflow name, newest scheduled first (the task id breaks ties), 50 a page; each
    row links to its execution with the task open. Uses ``apps.engine.search.task_search``
    (the ``/api/tasks/search`` query)."""
    from apps.core.errors import ConductorError
    from apps.engine.search import task_search

    fields = {"taskType": "type", "status": "status", "workerId": "worker", "referenceTaskName": "ref",
              "workflowType": "workflow"}
    form = {param: request.GET.get(param, "").strip() for param in fields.values()}
    filters = {name: form[param] for name, param in fields.items() if form[param]}
    # Conductor's query syntax over task fields (``endTime>... AND endTime<...``: the
    # Overview's interval links)
    form["query"] = request.GET.get("query", "").strip()
    try:
        page = max(1, int(request.GET.get("page") or 1))
    except ValueError:
        page = 1
    error, total, hits = None, 0, []
    try:
        total, hits = task_search(query=form["query"] or None, start=(page - 1) * TASK_SEARCH_SIZE,
                                  size=TASK_SEARCH_SIZE, **filters)
    except ConductorError as exc:
        error = exc.message
    pages = max(1, -(-total // TASK_SEARCH_SIZE))
    base = request.GET.copy()
    base.pop("page", None)

    def page_url(n: int) -> str:
        params = base.copy()
        params["page"] = str(n)
        return "?" + params.urlencode()
    rows = [{"task": h.task, "url": reverse("ui:execution", args=[h.task.workflow_id]) + "?" +
             urlencode({"node": strip_iteration(h.task.reference_task_name), "task": h.task.task_id})} for h in hits]
    return _render(request, "ui/tasks.html", {
        "form": form, "rows": rows, "total": total, "page": page, "pages": pages, "error": error,
        "statuses": TASK_STATUSES,
        "prev_url": page_url(page - 1) if page > 1 else None, "next_url": page_url(page + 1) if page < pages else None})


# --- execution detail ---------------------------------------------------------------------

@view_required
@require_GET
def execution(request, workflow_id: str):
    """``/execution/<id>``: header, actions menu and the live tabs."""
    wf = _load(workflow_id, include_tasks=False)
    reason, failed_task = selectors.name_tasks(wf.reason_for_incompletion,
                                               selectors.task_refs_in(wf.reason_for_incompletion))
    latest = WorkflowDef.objects.filter(name=wf.workflow_name).order_by("-version").values_list("version", flat=True).first()
    newer_url = (reverse("ui:definition_diff", args=[wf.workflow_name]) + "?" +
                 urlencode({"from": wf.workflow_version, "to": latest})) if latest and latest > wf.workflow_version and \
        WorkflowDef.objects.filter(name=wf.workflow_name, version=wf.workflow_version).exists() else None
    rerun_of = wf.re_run_from_workflow_id if wf.re_run_from_workflow_id != workflow_id else None
    return _render(request, "ui/execution.html", {
        "wf": wf, "is_agent": agent_run.is_agent(wf.definition),
        "allowed": actions.allowed_actions(wf.status, sub_workflows=_has_sub_workflows(workflow_id)),
        "rerun_of": rerun_of, "rerun": None if rerun_of else history.last_rerun(workflow_id),
        "reason": reason, "failed_task": failed_task, "latest_version": latest, "newer_url": newer_url,
        "compare_url": reverse("ui:compare") + "?" + urlencode(
            {"a": workflow_id, "b": rerun_of} if rerun_of else {"a": workflow_id}),
        "workflow_actions": list(actions.WORKFLOW_ACTIONS.values()),
        "task_actions": list(actions.TASK_ACTIONS.values()),
        "ws_path": f"/ws/executions/{workflow_id}/",
        "live_url": reverse("ui:execution_live", args=[workflow_id]),
        "poll_ms": int(live.ui_setting("LIVE_POLL_SECONDS") * 1000),
        "preview_chars": live.ui_setting("PAYLOAD_PREVIEW_CHARS"),
    })


def _has_sub_workflows(workflow_id: str) -> bool:
    return TaskExecution.objects.filter(workflow_id=workflow_id, task_type="SUB_WORKFLOW").exists()


@view_required
@require_GET
def execution_live(request, workflow_id: str):
    """``/execution/<id>/live.json?marker=``: the snapshot, or ``{"type": "unchanged"}``
    when the marker still matches (the polling fallback of the live view)."""
    marker = live.change_marker(workflow_id)
    if marker is None:
        return JsonResponse({"type": "gone"}, status=404)
    if request.GET.get("marker") == marker:
        return JsonResponse({"type": "unchanged", "marker": marker})
    snap = live.build_snapshot(workflow_id)
    if snap is None:
        return JsonResponse({"type": "gone"}, status=404)
    return JsonResponse({"type": "snapshot", "data": snap})


@view_required
@require_GET
def execution_agent(request, workflow_id: str):
    """``/execution/<id>/agent.json``: the Agent tab of a compiled agent's execution
    (``apps.ui.agent_run``: the conversation turn by turn, tool calls, guardrails, human
    steps, handoffs, tokens, the final answer); 404 for an unknown execution or one that
    is not an agent."""
    wf = _load(workflow_id, include_tasks=False)
    if not agent_run.is_agent(wf.definition):
        return JsonResponse({"error": f"{workflow_id} is not an agent's execution"}, status=404)
    return JsonResponse(agent_run.agent_run(workflow_id))


@view_required
@require_GET
def execution_history(request, workflow_id: str):
    """``/execution/<id>/history.json?after=<seq>``: the History tab's events (up to 1000
    per call, oldest first, each with a line of text) and ``next``."""
    _load(workflow_id, include_tasks=False)
    try:
        after = max(0, int(request.GET.get("after") or 0))
    except ValueError:
        after = 0
    events, nxt = ui_history.event_rows(workflow_id, after=after, limit=1000)
    return JsonResponse({"events": events, "next": nxt})


@view_required
@require_GET
def execution_at(request, workflow_id: str):
    """``/execution/<id>/at.json?seq=<n>``: the execution as it was just after history
    event ``n`` (the live view's snapshot shape); 404 for an unknown execution or event."""
    wf = _load(workflow_id, include_tasks=False)
    try:
        seq = int(request.GET.get("seq") or "")
    except ValueError:
        return JsonResponse({"error": "seq must be an event's seq"}, status=400)
    if not ExecutionEvent.objects.filter(workflow_id=workflow_id, id=seq).exists():
        return JsonResponse({"error": f"no event {seq} in this execution's history"}, status=404)
    return JsonResponse({"type": "snapshot", "data": ui_history.snapshot_at(wf, seq)})


@view_required
@require_GET
def execution_download(request, workflow_id: str, what: str):
    """``/execution/<id>/download/<input|output|variables|json>``: a whole payload. With
    ``?preview=N`` (characters) the JSON document is cut to its first N characters and
    shown inline, ``X-Total-Chars`` telling the whole length: the JSON tab reads that, not
    megabytes it would not show."""
    wf = _load(workflow_id, include_tasks=what == "json")
    if what == "json":
        preview_chars = request.GET.get("preview", "")
        if preview_chars.isdigit():
            text = json.dumps(workflow_json(wf), indent=2, default=str)
            resp = HttpResponse(text[:int(preview_chars)], content_type="application/json")
            resp["X-Total-Chars"] = str(len(text))
            return resp
        return _json_download(workflow_json(wf), f"{workflow_id}.json")
    if what in ("input", "output", "variables"):
        return _json_download(getattr(wf, what), f"{workflow_id}-{what}.json")
    raise Http404("unknown payload")


def _task_of(workflow_id: str, task_id: str):
    try:
        task, wf = engine_selectors.task_get(task_id=task_id)
    except NotFound:
        raise Http404(f"Task not found for taskId: {task_id}") from None
    if task.workflow_id != workflow_id:
        raise Http404("task of another workflow")
    return task, wf


@view_required
@require_GET
def task_detail(request, workflow_id: str, task_id: str):
    """``/execution/<id>/task/<taskId>.json``: what the task panel shows."""
    task, wf = _task_of(workflow_id, task_id)
    data = task_json(task, wf)
    input_preview = live.preview(task.input_data)
    output_preview = live.preview(task.output_data)
    data.pop("inputData", None)
    data.pop("outputData", None)
    workflow_task = data.pop("workflowTask", None) or _definition_task(wf.definition, task)
    polls = [p for p in engine_queue.poll_data(task.task_def_name)
             if (p.get("domain") or "") == (task.domain or "")] if task.queue_name else []
    row = live.task_row(task)
    return JsonResponse({
        "task": data, "row": row,
        "input": input_preview, "output": output_preview,
        "workflowTask": workflow_task,
        "ai": ai_summary(task),
        # the lines themselves: the log viewer reads them (apps.ui.tasklogs), not every panel refresh
        "logCount": TaskExecLog.objects.filter(task_id=task_id).count(),
        "pollData": polls,
        "actions": actions.task_actions(wf.status, row) if can_operate(request.user) else [],
        "downloads": {k: reverse("ui:task_download", args=[workflow_id, task_id, k]) for k in ("input", "output", "json")},
        "actionUrls": {a: reverse("ui:task_action", args=[workflow_id, a]) + "?" + urlencode({"task": task_id})
                       for a in actions.TASK_ACTIONS},
    })


def _definition_task(definition: dict, task) -> dict | None:
    from apps.engine.blueprint import Blueprint

    return Blueprint(definition).get(strip_iteration(task.reference_task_name))


@view_required
@require_GET
def task_download(request, workflow_id: str, task_id: str, what: str):
    """``/execution/<id>/task/<taskId>/download/<input|output|json>``."""
    task, wf = _task_of(workflow_id, task_id)
    if what == "input":
        return _json_download(task.input_data, f"{task_id}-input.json")
    if what == "output":
        return _json_download(task.output_data, f"{task_id}-output.json")
    if what == "json":
        return _json_download(task_json(task, wf), f"{task_id}.json")
    raise Http404("unknown payload")


@require_http_methods(["GET", "POST"])
@view_required
def workflow_action(request, workflow_id: str, name: str):
    """``/execution/<id>/action/<name>``: GET shows the confirmation, POST runs it
    (operators only; anyone else gets 403)."""
    info = actions.WORKFLOW_ACTIONS.get(name)
    if info is None:
        raise Http404("unknown action")
    if not can_operate(request.user):
        return _render(request, "403.html", {"message": "You may not operate workflows."}, status=403)
    if request.method == "GET":
        wf = _load(workflow_id, include_tasks=name in dryrun.ACTIONS)
        plan = None
        if name in dryrun.ACTIONS:
            latest = WorkflowDef.objects.filter(name=wf.workflow_name).order_by("-version").values_list(
                "version", flat=True).first()
            plan = dryrun.plan(name, wf, latest_version=latest)
        return _render(request, "ui/action_confirm.html", {
            "wf": wf, "action": info, "plan": plan,
            "allowed": name in actions.allowed_actions(wf.status, sub_workflows=_has_sub_workflows(workflow_id)),
            "post_url": request.path, "kind": "workflow", "back": _back_url(request, workflow_id)})
    params = {}
    if name == "terminate":
        params = {"reason": request.POST.get("reason", "").strip(),
                  "trigger_failure_workflow": request.POST.get("trigger_failure_workflow") == "on"}
    result = actions.perform(request.user, name, workflow_id, params)
    _report(request, info, result)
    return _back_to_execution(request, workflow_id)


def _back_url(request, workflow_id: str) -> str:
    """Where an action on ``workflow_id`` returns: the execution page as the operator
    left it (``back``: its path with tab, task, attempt and iteration in the query), or
    the bare page when ``back`` is missing or points anywhere else."""
    from django.utils.http import url_has_allowed_host_and_scheme

    page = reverse("ui:execution", args=[workflow_id])
    back = request.POST.get("back") or request.GET.get("back") or ""
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) \
            and (back == page or back.startswith(page + "?")):
        return back
    return page


def _back_to_execution(request, workflow_id: str):
    return redirect(_back_url(request, workflow_id))


def _report(request, info: actions.OperatorAction, result: actions.Result) -> None:
    if result.ok:
        messages.success(request, f"{info.label}: done.")
    else:
        messages.error(request, f"{info.label} failed: {result.message}")


@require_http_methods(["GET", "POST"])
@view_required
def task_action(request, workflow_id: str, name: str):
    """``/execution/<id>/task-action/<name>?task=<taskId>`` (or ``ref=<reference>`` for a
    task that has not run, to skip it): confirmation with editable payloads, then the
    action (operators only)."""
    info = actions.TASK_ACTIONS.get(name)
    if info is None:
        raise Http404("unknown action")
    if not can_operate(request.user):
        return _render(request, "403.html", {"message": "You may not operate workflows."}, status=403)
    wf = _load(workflow_id, include_tasks=False)
    task_id = request.GET.get("task") or request.POST.get("task") or ""
    ref = request.GET.get("ref") or request.POST.get("ref") or ""
    task = None
    if task_id:
        task, _ = _task_of(workflow_id, task_id)
        ref = task.reference_task_name
    elif name != "skip" or not ref:
        raise Http404("which task?")
    row = live.task_row(task) if task else None
    defaults = {
        "task_input": json.dumps(task.input_data, indent=2) if task else "{}",
        "output": "{}", "reason": "",
    }
    if request.method == "GET":
        plan = None
        if name in dryrun.ACTIONS:
            plan = dryrun.plan(name, _load(workflow_id), task_id=task_id or None, ref=ref)
        return _render(request, "ui/action_confirm.html", {
            "wf": wf, "action": info, "kind": "task", "task": row, "ref": ref, "plan": plan,
            "allowed": name in actions.task_actions(wf.status, row), "form": defaults, "post_url": request.get_full_path(),
            "back": _back_url(request, workflow_id)})
    form = {k: request.POST.get(k, defaults[k]) for k in defaults}
    try:
        if name == "rerun":
            params = {"task_id": task_id, "task_input": _parse_json_field(form["task_input"], "Task input", default={})}
        elif name == "skip":
            params = {"task_reference_name": ref,
                      "task_output": _parse_json_field(form["output"], "Task output", default=None)}
        else:
            params = {"task_id": task_id, "output": _parse_json_field(form["output"], "Output", default={}),
                      "reason": form["reason"].strip()}
    except ValueError as exc:
        messages.error(request, str(exc))
        return _render(request, "ui/action_confirm.html", {
            "wf": wf, "action": info, "kind": "task", "task": row, "ref": ref, "allowed": True, "form": form,
            "post_url": request.get_full_path(), "back": _back_url(request, workflow_id)}, status=400)
    result = actions.perform(request.user, name, workflow_id, params)
    _report(request, info, result)
    return _back_to_execution(request, workflow_id)


# --- definitions ---------------------------------------------------------------------------

@view_required
@require_GET
def definitions(request):
    """``/definitions/``: registered workflow definitions."""
    return _render(request, "ui/definitions.html", {"definitions": selectors.definitions_overview(),
                                                    "task_defs": TaskDef.objects.order_by("name")})


@view_required
@require_GET
def definition(request, name: str, version: int):
    """``/definitions/<name>/<version>``: read-only definition with a graph preview."""
    row = WorkflowDef.objects.filter(name=name, version=version).first()
    if row is None:
        raise Http404(f"No such workflow found by name: {name}, version: {version}")
    versions = list(WorkflowDef.objects.filter(name=name).order_by("version").values_list("version", flat=True))
    earlier = [v for v in versions if v < version]
    return _render(request, "ui/definition.html", {
        "row": row, "versions": versions, "prev_version": earlier[-1] if earlier else None,
        "export_name": f"{name}-v{version}",
        "diff_url": (reverse("ui:definition_diff", args=[name]) + "?" + urlencode({"from": earlier[-1], "to": version}))
        if earlier else None,
        "graph": graph.build_graph(row.definition, None),
        "definition_json": json.dumps(row.definition, indent=2),
        "executions_url": reverse("ui:executions") + "?" + urlencode({"name": name, "version": version}),
        "start_url": reverse("ui:start") + "?" + urlencode({"name": name, "version": version}),
        "input_parameters": row.definition.get("inputParameters") or [],
    })


# --- definitions editor ---------------------------------------------------------------------

NEW_WORKFLOW_DEF = {"name": "", "description": "", "version": 1, "schemaVersion": 2, "ownerEmail": "",
                    "inputParameters": [], "tasks": [], "timeoutPolicy": "ALERT_ONLY", "timeoutSeconds": 0}
NEW_TASK_DEF = {"name": "", "description": "", "retryCount": 3, "retryLogic": "FIXED", "retryDelaySeconds": 60,
                "timeoutPolicy": "TIME_OUT_WF", "timeoutSeconds": 3600, "responseTimeoutSeconds": 600,
                "ownerEmail": ""}


def _editor_page(request, *, kind: str, definition: dict, name: str = "", version: int | None = None):
    used = editing.executions_using(name, version) if kind == "workflow" and version else 0
    return _render(request, "ui/definition_edit.html", {
        "kind": kind, "name": name, "version": version, "used_by": used,
        "next_version": editing.next_version(name) if kind == "workflow" and name else None,
        "definition_json": json.dumps(definition, indent=2),
        "graph": graph.build_graph(definition, None) if kind == "workflow" and definition.get("tasks") else
        {"nodes": [], "edges": []},
        "check_url": reverse("ui:definition_check", args=[kind]),
        "save_url": reverse("ui:definition_save", args=[kind]),
        "back_url": reverse("ui:definition", args=[name, version]) if kind == "workflow" and name
        else reverse("ui:definitions"),
    })


@operate_required
@require_GET
def definition_edit(request, name: str, version: int):
    """``/definitions/<name>/<version>/edit``: the editor on that version's JSON. Saving
    stores the next version; "overwrite" replaces this one only if no execution ran on it."""
    row = WorkflowDef.objects.filter(name=name, version=version).first()
    if row is None:
        raise Http404(f"No such workflow found by name: {name}, version: {version}")
    return _editor_page(request, kind="workflow", definition=row.definition, name=name, version=version)


@operate_required
@require_GET
def definition_new(request):
    """``/definitions/new``: the editor on an empty WorkflowDef (``?kind=task``: a TaskDef;
    ``?taskdef=<name>``: that TaskDef's JSON)."""
    if request.GET.get("taskdef"):
        row = TaskDef.objects.filter(pk=request.GET["taskdef"]).first()
        if row is None:
            raise Http404(f"No such taskType found by name: {request.GET['taskdef']}")
        return _editor_page(request, kind="task", definition=row.definition, name=row.name)
    if request.GET.get("kind") == "task":
        return _editor_page(request, kind="task", definition=NEW_TASK_DEF)
    return _editor_page(request, kind="workflow", definition=NEW_WORKFLOW_DEF)


def _editor_body(request) -> dict:
    """The editor's JSON request body ``{"text": str, ...}``; InvalidInput if it is not one."""
    from apps.core.errors import InvalidInput

    try:
        body = _strict_loads((request.body or b"{}").decode("utf-8"), "request body")
    except ValueError:  # UnicodeDecodeError included
        raise InvalidInput("The request body must be JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("text"), str):
        raise InvalidInput("The request body must be {\"text\": \"<definition JSON>\"}")
    return body


def _parse_definition(text: str):
    """The editor's text as JSON, or Conductor's 400 naming where the syntax breaks (or
    what the API's JSON rule refuses: NUL or lone surrogate escapes, NaN, too deep)."""
    from apps.core.errors import validation_failed

    try:
        return _strict_loads(text, "definition")
    except json.JSONDecodeError as exc:
        raise validation_failed([{"path": f"line {exc.lineno}, column {exc.colno}",
                                  "message": f"invalid JSON: {exc.msg}"}]) from None


def _editor_error(exc) -> JsonResponse:
    from apps.api.exceptions import body_for_exception

    status, body = body_for_exception(exc)
    return JsonResponse(body, status=status)


@operate_required
@require_POST
def definition_check(request, kind: str):
    """``POST /definitions/check/<workflow|task>`` (body ``{"text", "baseName"?,
    "baseVersion"?}``): validation as you type. Returns ``{"validationErrors": [{path,
    message}], "graph": elements or null (tasks marked added/changed/removed against the
    base version when one is given), "changes": {"added", "changed", "removed"} or null,
    "usedBy": executions on that name+version, "nextVersion": int}`` (200 even when
    invalid: the errors are the answer); 400 with Conductor's body for a body that is not
    ``{"text"}`` or text that is not JSON."""
    from apps.core.errors import ConductorError

    if kind not in ("workflow", "task"):
        raise Http404(kind)
    try:
        body = _editor_body(request)
        definition = _parse_definition(body["text"])
    except ConductorError as exc:
        return _editor_error(exc)
    if kind == "task":
        return JsonResponse({"validationErrors": editing.task_def_errors(definition), "graph": None})
    errors = editing.workflow_def_errors(definition)
    name = definition.get("name") if isinstance(definition, dict) and isinstance(definition.get("name"), str) else ""
    version = definition.get("version") if isinstance(definition, dict) else None
    preview, changes = None, None
    base = WorkflowDef.objects.filter(name=str(body.get("baseName") or ""),
                                      version=body.get("baseVersion") if isinstance(body.get("baseVersion"), int) else -1
                                      ).first()
    if isinstance(definition, dict) and isinstance(definition.get("tasks"), list):
        try:
            if base is not None:  # marked against the version the editor opened
                diff = selectors.definition_diff(base.definition, definition)
                changes = {k: diff[k] for k in ("added", "changed", "removed")}
                preview = graph.diff_overlay(base.definition, definition, diff)
            else:
                preview = graph.build_graph(definition, None)
        except Exception:  # noqa: BLE001 - a definition too broken to draw keeps the last preview
            preview, changes = None, None
    return JsonResponse({
        "validationErrors": errors, "graph": preview, "changes": changes,
        "usedBy": editing.executions_using(name, version) if name and isinstance(version, int) else 0,
        "nextVersion": editing.next_version(name) if name else 1})


@operate_required
@require_POST
def definition_save(request, kind: str):
    """``POST /definitions/save/<workflow|task>`` (body ``{"text", "mode", "base"}``): save
    through ``apps.ui.editing``; 200 ``{"name", "version"?, "url"}`` or Conductor's error
    body (400 validationErrors, 404, 409 when overwriting a version that executions use)."""
    from apps.core.errors import ConductorError

    if kind not in ("workflow", "task"):
        raise Http404(kind)
    try:
        body = _editor_body(request)
        definition = _parse_definition(body["text"])
        if kind == "task":
            saved = editing.save_task_def(request.user, definition)
            saved["url"] = reverse("ui:definition_new") + "?" + urlencode({"taskdef": saved["name"]})
        else:
            saved = editing.save_workflow_def(request.user, definition, mode=str(body.get("mode") or "new_version"),
                                              base=str(body.get("base") or ""))
            saved["url"] = reverse("ui:definition", args=[saved["name"], saved["version"]])
    except ConductorError as exc:
        return _editor_error(exc)
    return JsonResponse(saved)


@view_required
@require_GET
def compare(request):
    """``/compare?a=<id>&b=<id>``: two executions side by side, aligned by task reference
    and iteration, with status, attempts, durations and input/output diffs; ``b``
    defaults to the last good run of ``a``'s workflow."""
    a_id = (request.GET.get("a") or "").strip()
    if not a_id:
        raise Http404("which execution? (?a=<workflow id>)")
    a = _load(a_id)
    b_id = (request.GET.get("b") or "").strip() or selectors.last_good_run(a)
    b = _load(b_id) if b_id else None
    return _render(request, "ui/compare.html", {
        "a": a, "b": b, "cmp": selectors.compare_executions(a, b) if b else None})


@view_required
@require_GET
def definition_diff(request, name: str):
    """``/definitions/<name>/diff?from=1&to=3``: what changed between two versions, as a
    graph of ``to`` with added, changed and removed tasks marked and as a
    text diff of the JSON. Defaults: ``to`` the latest version, ``from`` the one before.
    A ``from``/``to`` that is not a number is a 400 naming it; a version the definition
    does not have, a 404."""
    versions = list(WorkflowDef.objects.filter(name=name).order_by("version").values_list("version", flat=True))
    if not versions:
        raise Http404(f"No such workflow found by name: {name}")
    for key in ("to", "from"):
        raw = request.GET.get(key) or ""
        if raw and not raw.strip().lstrip("-").isdecimal():
            return render(request, "400.html", {"message": f"Query parameter '{key}' must be a version number"},
                          status=400)

    def version(key: str, default: int) -> int:
        value = int(request.GET.get(key) or default)
        if value not in versions:
            raise Http404(f"No such workflow found by name: {name}, version: {value}")
        return value

    to = version("to", versions[-1])
    earlier = [v for v in versions if v < to]
    frm = version("from", earlier[-1] if earlier else to)
    old = WorkflowDef.objects.get(name=name, version=frm).definition
    new = WorkflowDef.objects.get(name=name, version=to).definition
    diff = selectors.definition_diff(old, new)
    return _render(request, "ui/definition_diff.html", {
        "name": name, "versions": versions, "frm": frm, "to": to, "diff": diff,
        "graph": graph.diff_overlay(old, new, diff)})


# --- queues --------------------------------------------------------------------------------

@view_required
@require_GET
def queues(request):
    """``/queues/``: depth per task type and domain, recent pollers, warnings."""
    rows = selectors.queues_overview(stale_seconds=live.ui_setting("QUEUE_STALE_POLL_SECONDS"),
                                     recent_seconds=live.ui_setting("QUEUE_RECENT_POLL_SECONDS"))
    return _render(request, "ui/queues.html", {
        "rows": rows, "stale_seconds": live.ui_setting("QUEUE_STALE_POLL_SECONDS"),
        "recent_seconds": live.ui_setting("QUEUE_RECENT_POLL_SECONDS"),
        "warnings": sum(1 for r in rows if r["warning"]), "pollers": PollData.objects.count()})


# --- start a workflow ------------------------------------------------------------------------

def _field_value(text: str, label: str):
    """A form value: JSON numbers, booleans, null, objects and arrays keep their type;
    anything else is a string. ValueError (a message for the operator) for JSON the API
    would refuse (a NUL or lone surrogate escape, NaN, too deep)."""
    from apps.core.errors import InvalidInput

    stripped = text.strip()
    if stripped and (stripped[0] in "{[-0123456789" or stripped in ("true", "false", "null")):
        try:
            return _strict_loads(stripped, label)
        except ValueError:
            pass
        except InvalidInput as exc:
            raise ValueError(exc.message) from None
    return text


@require_http_methods(["GET", "POST"])
@operate_required
def start(request):
    """``/start/``: choose a definition and version, fill its inputParameters (or give the
    input as JSON), set a correlationId, start it and open the new execution."""
    names = sorted(set(WorkflowDef.objects.values_list("name", flat=True)))
    data = request.POST if request.method == "POST" else request.GET
    name = data.get("name") or (names[0] if names else "")
    versions = list(WorkflowDef.objects.filter(name=name).order_by("-version").values_list("version", flat=True))
    given = (data.get("version") or "").strip()
    bad_version = given and not given.isdecimal()  # a version that is not a number is not the latest
    version = int(given) if given and not bad_version else (versions[0] if versions else None)
    row = WorkflowDef.objects.filter(name=name, version=version).first() if version is not None and not bad_version \
        else None
    params = [p for p in (row.definition.get("inputParameters") or []) if isinstance(p, str)] if row else []
    # no declared inputParameters: offer the inputs its tasks read (${workflow.input.x})
    read_inputs = not params and row is not None
    if read_inputs:
        params = selectors.workflow_input_references(row.definition)
    context = {"names": names, "name": name, "versions": versions, "version": version, "row": row,
               "params": params, "read_inputs": read_inputs, "values": {p: data.get("input." + p, "") for p in params},
               "input_json": data.get("input_json", ""), "correlation_id": data.get("correlation_id", "")}
    if bad_version:
        messages.error(request, f"'version' must be a version number, not {given[:40]!r}")
        return _render(request, "ui/start.html", context, status=400)
    if request.method == "GET":
        return _render(request, "ui/start.html", context)
    if row is None:
        messages.error(request, f"No such workflow definition: {name} version {version}")
        return _render(request, "ui/start.html", context, status=400)
    try:
        wf_input = _parse_json_field(context["input_json"], "Input JSON", default={})
        for p in params:
            value = context["values"][p]
            if value != "":
                wf_input[p] = _field_value(value, f"input field '{p}'")
    except ValueError as exc:
        messages.error(request, str(exc))
        return _render(request, "ui/start.html", context, status=400)
    result = actions.perform(request.user, "start", name, {
        "name": name, "version": version, "input": wf_input, "correlation_id": context["correlation_id"].strip(),
        "created_by": request.user.get_username()})
    if not result.ok:
        messages.error(request, f"Start failed: {result.message}")
        return _render(request, "ui/start.html", context, status=400)
    messages.success(request, f"Started {name} v{version}.")
    return redirect("ui:execution", workflow_id=result.value)


# --- audit ---------------------------------------------------------------------------------

@view_required
@require_GET
def audit(request):
    """``/audit/``: operator actions newest first, 100 a page by keyset (``?before=``
    marker of the older page; ``?target=`` filters by target, ``?group=`` to one bulk job's rows)."""
    target = request.GET.get("target", "").strip()
    group = request.GET.get("group", "").strip()
    page = selectors.audit_page(target=target, group=group, before=request.GET.get("before"))
    older_url = None
    if page["older"]:
        params = request.GET.copy()
        params["before"] = page["older"]
        older_url = "?" + params.urlencode()
    return _render(request, "ui/audit.html", {
        **page, "target": target, "group": group, "older_url": older_url,
        "newest_url": "?" + urlencode({k: v for k, v in (("target", target), ("group", group)) if v}),
        "newest_url_all": "?" + urlencode({"target": target} if target else {})})
