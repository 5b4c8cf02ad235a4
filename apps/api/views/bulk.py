"""``/workflow/bulk/*``: pause, resume, restart, retry, terminate, remove,
terminate-remove and search over a JSON list of workflow ids (at most 1000), answering
Conductor's ``BulkResponse`` with 200 even when some ids fail. The per-id loop is
``apps.engine.bulk.bulk_action``.
"""
from __future__ import annotations

from rest_framework.response import Response

from apps.api.params import qbool, qstr
from apps.api.parsers import require_json
from apps.api.views.base import ConductorApi
from apps.engine.bulk import bulk_action


class BulkApi(ConductorApi):
    """One bulk route: ``action`` (see ``bulk_action``) on the HTTP method Conductor maps
    it to (``http_method_names``); other methods answer 405."""

    action: str = ""

    def _kwargs(self, q) -> dict:
        if self.action == "restart":
            return {"use_latest_definitions": qbool(q, "useLatestDefinitions", False)}
        if self.action == "terminate":
            return {"reason": qstr(q, "reason"),
                    "trigger_failure_workflow": qbool(q, "triggerFailureWorkflow", False)}
        if self.action == "remove":
            return {"archive_workflow": qbool(q, "archiveWorkflow", True)}
        if self.action == "terminate-remove":
            return {"reason": qstr(q, "reason"), "archive_workflow": qbool(q, "archiveWorkflow", True)}
        if self.action == "search":
            return {"include_tasks": qbool(q, "includeTasks", True)}
        return {}

    def _handle(self, request):
        ids = require_json(request.data, "WorkflowIds list")
        if not ids and not isinstance(ids, list):
            ids = None  # no body at all (DRF gives an empty dict)
        return Response(bulk_action(self.action, ids, **self._kwargs(request.query_params)))

    def put(self, request):
        return self._handle(request)

    def post(self, request):
        return self._handle(request)

    def delete(self, request):
        return self._handle(request)


def bulk_view(action: str, method: str):
    """The view of ``/workflow/bulk/<action>`` accepting only ``method``."""
    return BulkApi.as_view(action=action, http_method_names=[method])
