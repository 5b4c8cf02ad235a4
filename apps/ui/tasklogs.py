"""The task panel's log viewer: the lines of a task's execution log (what workers POST to
``/api/tasks/{taskId}/log``, Conductor's ``TaskExecLog``), read incrementally so the
viewer can follow a running task, and downloaded whole as text.

``/execution/<id>/task/<taskId>/logs.json?after=<lineId>`` answers
``{"lines": [{"id", "log", "createdTime"}], "last": lineId, "more": bool, "taskStatus",
"terminal": bool}``: at most ``LINES_PER_READ`` lines after ``after`` (0: from the
first), oldest first; ``more`` when further lines wait. The viewer polls it while the
task runs ("follow live") and stops once the task has ended and nothing is left.
``.../logs.txt`` is the whole log, one ``<ISO time UTC>  <line>`` per line.
Both need ``ui.view_executions``; a task of another workflow is a 404.
"""
from __future__ import annotations

from datetime import datetime, timezone

from django.http import Http404, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from apps.engine.models import TaskExecLog, TaskExecution
from apps.engine.status import TERMINAL_TASK
from apps.ui.permissions import view_required

LINES_PER_READ = 500
LINES_DOWNLOADED = 100_000


def _status(workflow_id: str, task_id: str) -> str:
    status = TaskExecution.objects.filter(pk=task_id, workflow_id=workflow_id).values_list("status", flat=True).first()
    if status is None:
        raise Http404(f"Task not found for taskId: {task_id}")
    return status


@view_required
@require_GET
def task_logs(request, workflow_id: str, task_id: str):
    """The lines after ``after`` (see the module docstring)."""
    status = _status(workflow_id, task_id)
    try:
        after = max(0, int(request.GET.get("after") or 0))
    except ValueError:
        return JsonResponse({"status": 400, "message": "after must be a line id (an integer)"}, status=400)
    rows = list(TaskExecLog.objects.filter(task_id=task_id, pk__gt=after).order_by("pk")
                .values("id", "log", "created_time")[:LINES_PER_READ + 1])
    more = len(rows) > LINES_PER_READ
    rows = rows[:LINES_PER_READ]
    return JsonResponse({"lines": [{"id": r["id"], "log": r["log"], "createdTime": r["created_time"]} for r in rows],
                         "last": rows[-1]["id"] if rows else after, "more": more, "taskStatus": status,
                         "terminal": status in TERMINAL_TASK})


@view_required
@require_GET
def task_logs_download(request, workflow_id: str, task_id: str):
    """The whole log as ``text/plain`` (an attachment ``<taskId>.log``)."""
    _status(workflow_id, task_id)
    lines = TaskExecLog.objects.filter(task_id=task_id).order_by("pk").values_list("created_time", "log")
    text = "".join(f"{datetime.fromtimestamp(t / 1000, tz=timezone.utc).isoformat(timespec='milliseconds')}  {log}\n"
                   for t, log in lines[:LINES_DOWNLOADED])
    resp = HttpResponse(text, content_type="text/plain; charset=utf-8")
    resp["Content-Disposition"] = f'attachment; filename="{task_id}.log"'
    return resp
