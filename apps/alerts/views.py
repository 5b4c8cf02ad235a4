"""``/api/alerts`` (ours; Conductor has no alert API): rules and their incidents.
Reads need the read-only role, changes the operator role (``apps.api.auth``)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.alerts import services
from apps.api.params import qint, qstr
from apps.api.parsers import require_json
from apps.api.views.base import ConductorApi, empty


def _user(request) -> str:
    principal = getattr(request, "api_principal", None)
    return f"app:{principal.name}" if principal is not None else "api"


class RulesApi(ConductorApi):
    """``GET /alerts/rules`` (every rule) and ``POST /alerts/rules`` (create)."""

    @extend_schema(operation_id="getAlertRules", tags=["alerts-resource"])
    def get(self, request):
        return Response(services.rule_list())

    @extend_schema(operation_id="createAlertRule", tags=["alerts-resource"])
    def post(self, request):
        return Response(services.rule_save(require_json(request.data, "alert rule"), user=_user(request)))


class RuleApi(ConductorApi):
    """``GET|PUT|DELETE /alerts/rules/{id}``."""

    @extend_schema(operation_id="getAlertRule", tags=["alerts-resource"])
    def get(self, request, rule_id):
        return Response(services.rule_json(services.rule_get(rule_id)))

    @extend_schema(operation_id="updateAlertRule", tags=["alerts-resource"])
    def put(self, request, rule_id):
        return Response(services.rule_save(require_json(request.data, "alert rule"), rule_id=rule_id,
                                           user=_user(request)))

    @extend_schema(operation_id="deleteAlertRule", tags=["alerts-resource"])
    def delete(self, request, rule_id):
        services.rule_delete(rule_id)
        return empty()


class IncidentsApi(ConductorApi):
    """``GET /alerts/incidents?ruleId&state&size``: the newest incidents first."""

    @extend_schema(operation_id="getAlertIncidents", tags=["alerts-resource"])
    def get(self, request):
        q = request.query_params
        return Response(services.incidents(rule_id=qstr(q, "ruleId"), state=qstr(q, "state"),
                                           size=qint(q, "size", 100)))
