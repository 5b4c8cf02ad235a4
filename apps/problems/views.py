"""Pages and endpoints of the problem views (issue #31). Every page needs
``ui.view_executions``; saving or deleting a saved view and completing an inbox task need
``ui.operate_workflows`` (``apps.ui.permissions``), and completions go through
``apps.ui.actions.perform`` (engine service + audit log) like every other action."""
from __future__ import annotations

import json
from django.contrib import messages
from django.http import Http404, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.engine import store
from apps.engine.models import TaskExecution, WorkflowExecution
from apps.problems import grid, inbox, listing, stuck
from apps.problems.models import SavedView
from apps.ui import actions
from apps.ui.permissions import operate_required, ui_context, view_required
from apps.ui.selectors import SearchQuery, workflow_names

PAGING_KEYS = ("page", "after", "before")


def _render(request, template: str, context: dict, status: int = 200):
    ctx = ui_context(request)
    ctx.update(context)
    return render(request, template, ctx, status=status)


def _search_string(querydict) -> str:
    """A search's query string without its paging."""
    params = querydict.copy()
    for key in PAGING_KEYS + ("csrfmiddlewaretoken", "view_name", "saved"):
        params.pop(key, None)
    return params.urlencode()


# --- export and saved views --------------------------------------------------------------

@view_required
@require_GET
def export(request, fmt: str):
    """``/executions/export.<ids|csv|json>?<search>``: every execution the search matches
    (in its order, at most ``listing.EXPORT_MAX``), streamed as read."""
    if fmt not in ("ids", "csv", "json"):
        raise Http404(f"unknown export format: {fmt}")
    query = SearchQuery.from_querydict(request.GET)
    content_type = {"ids": "text/plain", "csv": "text/csv", "json": "application/json"}[fmt]
    response = StreamingHttpResponse(listing.export_lines(query, fmt), content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{listing.export_filename(fmt)}"'
    response["X-Export-Limit"] = str(listing.EXPORT_MAX)
    return response


@operate_required
@require_POST
def view_save(request):
    """``POST /executions/views/save`` (``view_name``, ``q``: the search's query string):
    store or replace the saved view of that name, then show it."""
    name = (request.POST.get("view_name") or "").strip()
    q = _search_string(QueryDict(request.POST.get("q", "")))
    if not name or len(name) > 100 or "/" in name:
        messages.error(request, "A saved view needs a name of 1 to 100 characters, without '/'.")
        return redirect(reverse("ui:executions") + ("?" + q if q else ""))
    SavedView.objects.update_or_create(name=name, defaults={"query": q, "created_by": request.user})
    actions.record(request.user, "save_view", f"SavedView {name}", {"query": q})
    messages.success(request, f"Saved the view '{name}'.")
    return redirect("problems:saved_view", name=name)


@view_required
@require_GET
def saved_view(request, name: str):
    """``/executions/view/<name>``: the executions list with that saved view's search (a
    redirect, so the address bar holds the search itself too)."""
    row = SavedView.objects.filter(name=name).first()
    if row is None:
        raise Http404(f"No saved view named {name!r}")
    params = QueryDict(row.query, mutable=True)
    params["saved"] = name
    return redirect(reverse("ui:executions") + "?" + params.urlencode())


@operate_required
@require_POST
def view_delete(request, name: str):
    """``POST /executions/view/<name>/delete``: forget a saved view."""
    deleted, _ = SavedView.objects.filter(name=name).delete()
    if deleted:
        actions.record(request.user, "delete_view", f"SavedView {name}", {})
        messages.success(request, f"Deleted the saved view '{name}'.")
    return redirect("ui:executions")


# --- why is it stuck ------------------------------------------------------------------------

@view_required
@require_GET
def stuck_panel(request, workflow_id: str):
    """``/execution/<id>/stuck``: the "why is it stuck?" panel's HTML (the execution page
    reloads it while the execution runs); 404 for an unknown execution."""
    status = WorkflowExecution.objects.filter(pk=workflow_id).values_list("status", flat=True).first()
    if status is None:
        raise Http404(f"No such workflow found by id: {workflow_id}")
    html = render_to_string("problems/_stuck_panel.html",
                            {"entries": stuck.diagnose(workflow_id) if status == "RUNNING" else [],
                             "status": status, "workflow_id": workflow_id}, request=request)
    return HttpResponse(html)


# --- run grid -------------------------------------------------------------------------------

@view_required
@require_GET
def run_grid(request, name: str):
    """``/definitions/<name>/grid?runs=N``: the last N runs of ``name`` (columns) by task
    (rows), with each run's duration and the failure rate above."""
    try:
        runs = int(request.GET.get("runs") or grid.DEFAULT_RUNS)
    except ValueError:
        runs = grid.DEFAULT_RUNS
    runs = runs if runs in grid.RUNS else grid.DEFAULT_RUNS
    data = grid.run_grid(name, runs)
    if not data["runs"] and name not in workflow_names():
        raise Http404(f"No such workflow found by name: {name}")
    top = max(1, data["max_duration_ms"])
    for r in data["runs"]:
        r["bar_pct"] = max(2, round(100 * r["duration_ms"] / top))
    return _render(request, "problems/grid.html", {
        "name": name, "grid": data, "runs": runs, "run_choices": grid.RUNS,
        "failure_pct": round(100 * data["failure_rate"]) if data["failure_rate"] is not None else None})


# --- human-task inbox -----------------------------------------------------------------------

@view_required
@require_GET
def inbox_page(request):
    """``/inbox/``: HUMAN tasks (and WAIT tasks waiting for a signal) waiting across
    executions, oldest first; filters ``workflow``, ``ref`` (taskReferenceName) and
    ``field``=``value`` on the input."""
    name = request.GET.get("workflow", "").strip()
    field = request.GET.get("field", "").strip() or inbox.ASSIGNEE_FIELD
    value = request.GET.get("value", "").strip()
    ref = request.GET.get("ref", "").strip()
    from apps.core.errors import InvalidInput

    try:
        tasks = inbox.waiting(workflow_name=name, ref=ref, field=field, value=value)
    except InvalidInput as exc:
        messages.error(request, exc.message)
        tasks = []
    items = []
    schemas: dict = {}  # one TaskDef read per task name
    # the executions' definition snapshots, in one query: a task made from its definition
    # stores no WorkflowTask of its own (its inline taskDefinition is there)
    definitions = dict(WorkflowExecution.objects.filter(pk__in={t.workflow_id for t in tasks})
                       .values_list("workflow_id", "definition"))
    for t in tasks:
        definition = definitions.get(t.workflow_id) or {}
        inline = store.workflow_task_of(t, definition).get("taskDefinition")
        key = (t.task_def_name, json.dumps(inline, sort_keys=True, default=str))
        if key not in schemas:
            schemas[key] = inbox.form_schema(t, definition)
        schema = schemas[key]
        items.append({"task": t, "fields": inbox.form_fields(schema), "schema": schema,
                      "input_json": json.dumps(t.input_data, indent=2, default=str)[:4000]})
    return _render(request, "problems/inbox.html", {
        "items": items, "names": inbox.definitions_waiting(), "workflow": name, "ref": ref, "field": field, "value": value,
        "limit": inbox.PAGE, "back": request.get_full_path()})


@operate_required
@require_POST
def inbox_complete(request, task_id: str):
    """``POST /inbox/<task_id>/complete``: complete (``outcome=COMPLETED``) or fail
    (``outcome=FAILED``, ``reason``) a waiting inbox task with the form's output (built
    from its schema and checked against it) or the JSON box's; audited as
    ``complete_task``/``fail_task``."""
    back = request.POST.get("back") or reverse("problems:inbox")
    if not back.startswith("/"):
        back = reverse("problems:inbox")
    task = TaskExecution.objects.filter(pk=task_id, task_type__in=inbox.INBOX_TYPES).first()
    if task is None:
        raise Http404(f"Task not found for taskId: {task_id}")
    schema = inbox.form_schema(task)
    fields = inbox.form_fields(schema)
    if fields:
        output, errors = inbox.read_form(fields, request.POST)
    else:
        errors, output = [], {}
        text = (request.POST.get("output_json") or "").strip()
        if text:
            try:
                output = json.loads(text)
            except ValueError as exc:
                errors.append(f"Output is not valid JSON: {exc}")
            else:
                if not isinstance(output, dict):
                    errors.append("Output must be a JSON object")
    outcome = request.POST.get("outcome") or "COMPLETED"
    if not errors and outcome == "COMPLETED":
        errors = inbox.schema_errors(schema, output)
    if errors:
        messages.error(request, f"{task.reference_task_name}: " + "; ".join(errors))
        return redirect(back)
    action = "complete_task" if outcome == "COMPLETED" else "fail_task"
    result = actions.perform(request.user, action, task.workflow_id, {
        "task_id": task.task_id, "output": output, "reason": request.POST.get("reason", "").strip()})
    if result.ok:
        messages.success(request, f"{'Completed' if action == 'complete_task' else 'Failed'} "
                                  f"{task.reference_task_name} of {task.workflow_id}.")
    else:
        messages.error(request, f"{task.reference_task_name}: {result.message}")
    return redirect(back)

