"""Alert rules as JSON (``/api/alerts``, ours; the UI calls the same functions).

A rule: ``{"id", "name", "workflowName" (null: every definition), "condition"
(FAILURE | FAILURE_RATE | LONG_RUN | QUEUE_AGE | NO_POLLER), "thresholdSeconds"
(LONG_RUN, QUEUE_AGE, NO_POLLER), "windowSeconds", "failureRate" (0..1) and "minRuns"
(FAILURE_RATE), "taskType" (QUEUE_AGE, NO_POLLER; optional), "webhookUrl", "emails",
"enabled", "createdBy", "updatedBy", "createTime", "updateTime", "openIncidents"}``.
An incident: ``{"id", "ruleId", "ruleName", "subject", "state" (OPEN | RESOLVED),
"openedAt", "resolvedAt", "summary", "details", "notifications": [{"event", "channel",
"target", "state", "attempts", "lastError", "sentAt"}]}``. Times epoch ms.
Errors: NotFound (404) for an unknown id; InvalidInput (400) naming the field.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from apps.alerts.models import AlertIncident, AlertRule, Condition
from apps.core.clock import now_ms
from apps.core.errors import NotFound, validation_failed

MAX_SECONDS = 30 * 24 * 3600
_NEEDS_THRESHOLD = {Condition.LONG_RUN, Condition.QUEUE_AGE, Condition.NO_POLLER}


def rule_json(rule: AlertRule, open_count: int | None = None) -> dict:
    """The JSON of a rule (see the module docstring)."""
    if open_count is None:
        open_count = rule.incidents.filter(state="OPEN").count()
    return {"id": rule.pk, "name": rule.name, "workflowName": rule.workflow_name or None,
            "condition": rule.condition, "thresholdSeconds": rule.threshold_seconds,
            "windowSeconds": rule.window_seconds, "failureRate": rule.failure_rate, "minRuns": rule.min_runs,
            "taskType": rule.task_type or None, "webhookUrl": rule.webhook_url or None, "emails": rule.emails,
            "enabled": rule.enabled, "createdBy": rule.created_by, "updatedBy": rule.updated_by,
            "createTime": rule.create_time, "updateTime": rule.update_time, "openIncidents": open_count}


def incident_json(incident: AlertIncident, with_notifications: bool = True) -> dict:
    """The JSON of an incident (see the module docstring)."""
    out = {"id": incident.pk, "ruleId": incident.rule_id, "ruleName": incident.rule.name,
           "subject": incident.subject, "state": incident.state, "openedAt": incident.opened_at,
           "resolvedAt": incident.resolved_at, "summary": incident.summary, "details": incident.details}
    if with_notifications:
        out["notifications"] = [{"event": n.event, "channel": n.channel, "target": n.target, "state": n.state,
                                 "attempts": n.attempts, "lastError": n.last_error or None, "sentAt": n.sent_at}
                                for n in sorted(incident.notifications.all(), key=lambda n: n.pk)]
    return out


def _int(body: dict, key: str, low: int, high: int, required: bool) -> int | None:
    value = body.get(key)
    if value is None:
        if required:
            raise validation_failed([{"path": key, "message": "is required for this condition"}])
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise validation_failed([{"path": key, "message": f"must be an integer from {low} to {high}",
                                  "invalidValue": value}])
    return value


def _text(body: dict, key: str, limit: int) -> str:
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise validation_failed([{"path": key, "message": f"must be a string of at most {limit} characters"}])
    return value.strip()


def normalise(body: Any) -> dict:
    """The model fields of a rule body, checked. Errors: InvalidInput naming the field."""
    if not isinstance(body, dict):
        raise validation_failed([{"path": "body", "message": "must be an alert rule JSON object"}])
    name = _text(body, "name", 255)
    if not name:
        raise validation_failed([{"path": "name", "message": "cannot be empty"}])
    condition = body.get("condition")
    if condition not in Condition.values:
        raise validation_failed([{"path": "condition", "message": "must be one of " + ", ".join(Condition.values),
                                  "invalidValue": condition}])
    condition = Condition(condition)
    fields = {"name": name, "workflow_name": _text(body, "workflowName", 255), "condition": condition.value,
              "task_type": _text(body, "taskType", 255), "webhook_url": _text(body, "webhookUrl", 2000),
              "threshold_seconds": _int(body, "thresholdSeconds", 1, MAX_SECONDS, condition in _NEEDS_THRESHOLD),
              "window_seconds": None, "failure_rate": None, "min_runs": 1}
    if condition == Condition.FAILURE_RATE:
        fields["window_seconds"] = _int(body, "windowSeconds", 1, MAX_SECONDS, True)
        fields["min_runs"] = _int(body, "minRuns", 1, 1_000_000, False) or 1
        rate = body.get("failureRate")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
            raise validation_failed([{"path": "failureRate", "message": "must be a number above 0 and at most 1 "
                                                                        "(0.5: half the runs)", "invalidValue": rate}])
        fields["failure_rate"] = float(rate)
    url = fields["webhook_url"]
    if url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise validation_failed([{"path": "webhookUrl", "message": "must be an http or https URL",
                                      "invalidValue": url}])
    emails = body.get("emails") or []
    if not isinstance(emails, list) or len(emails) > 20:
        raise validation_failed([{"path": "emails", "message": "must be a list of at most 20 e-mail addresses"}])
    for i, email in enumerate(emails):
        try:
            if not isinstance(email, str):
                raise ValidationError("not a string")
            validate_email(email)
        except ValidationError:
            raise validation_failed([{"path": f"emails[{i}]", "message": "is not an e-mail address",
                                      "invalidValue": str(email)[:200]}]) from None
    fields["emails"] = [e.strip() for e in emails]
    if not url and not emails:
        raise validation_failed([{"path": "webhookUrl", "message": "a rule needs a destination: a webhookUrl, "
                                                                  "emails, or both"}])
    enabled = body.get("enabled", True)
    if not isinstance(enabled, bool):
        raise validation_failed([{"path": "enabled", "message": "must be true or false", "invalidValue": enabled}])
    fields["enabled"] = enabled
    return fields


def rule_get(rule_id) -> AlertRule:
    """The rule of ``rule_id``. Errors: NotFound."""
    try:
        rule = AlertRule.objects.filter(pk=int(rule_id)).first()
    except (TypeError, ValueError):
        rule = None
    if rule is None:
        raise NotFound(f"Alert rule '{rule_id}' not found")
    return rule


def rule_list() -> list[dict]:
    """Every rule, by name, with its open incident count."""
    from django.db.models import Count, Q

    rows = AlertRule.objects.annotate(open_count=Count("incidents", filter=Q(incidents__state="OPEN"))).order_by("name")
    return [rule_json(r, r.open_count) for r in rows]


def rule_save(body: Any, *, rule_id=None, user: str = "") -> dict:
    """Create (``rule_id`` None) or replace a rule; answers its JSON. A changed rule is
    evaluated at the next tick; its open incidents stay until the new condition resolves
    them. Errors: InvalidInput (also a name another rule has: ``name``), NotFound."""
    if rule_id is not None:
        rule_get(rule_id)  # an unknown rule is a 404 whatever the body says
    fields = normalise(body)
    now = now_ms()
    try:
        with transaction.atomic():
            if rule_id is None:
                rule = AlertRule.objects.create(created_by=user, updated_by=user, create_time=now, update_time=now,
                                                next_evaluate_at=0, **fields)
            else:
                rule = rule_get(rule_id)
                for key, value in fields.items():
                    setattr(rule, key, value)
                rule.updated_by, rule.update_time, rule.next_evaluate_at = user, now, 0
                rule.save()
    except IntegrityError:
        raise validation_failed([{"path": "name", "message": "another alert rule has this name",
                                  "invalidValue": fields["name"]}]) from None
    return rule_json(rule)


def rule_delete(rule_id) -> None:
    """Delete a rule with its incidents and notifications. Errors: NotFound."""
    rule_get(rule_id).delete()


def incidents(*, rule_id=None, state: str | None = None, size: int = 100) -> list[dict]:
    """The newest incidents (of one rule, in one state), newest first, at most ``size``
    (1..1000), with their notifications (read in one query for all of them, not one per
    incident). Errors: InvalidInput naming ``ruleId`` (not an id), ``state`` or ``size``;
    NotFound for an unknown rule."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 1000:
        raise validation_failed([{"path": "size", "message": "must be an integer from 1 to 1000", "invalidValue": size}])
    qs = AlertIncident.objects.select_related("rule")
    if rule_id is not None:
        if not str(rule_id).isdigit():
            raise validation_failed([{"path": "ruleId", "message": "must be an alert rule's id (an integer)",
                                      "invalidValue": rule_id}])
        qs = qs.filter(rule=rule_get(rule_id))
    if state:
        if state not in ("OPEN", "RESOLVED"):
            raise validation_failed([{"path": "state", "message": "must be OPEN or RESOLVED", "invalidValue": state}])
        qs = qs.filter(state=state)
    return [incident_json(i) for i in qs.order_by("-opened_at", "-pk").prefetch_related("notifications")[:size]]
