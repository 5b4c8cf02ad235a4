"""Evaluating the alert rules on the sweeper's tick (``apps.engine.sweeper.add_tick_hook``).

``tick`` looks, at most every ``ALERTS_TICK_MS`` per process, for enabled rules whose
``next_evaluate_at`` has come (one indexed query), claims each by compare-and-set on that
column (pushed ``ALERTS_EVALUATE_SECONDS`` ahead, so one evaluator per rule however many
sweepers run), asks ``conditions.firing`` what is wrong now and, in one transaction per
rule: opens an incident for each new subject (the partial unique constraint on the OPEN
incident of a (rule, subject) makes a second opener fail: the rule fires once per
incident), resolves the open incidents whose subject no longer fires, and writes one
PENDING ``AlertNotification`` per destination for each. Sending happens in the delivery
job (``apps.alerts.delivery``), never in the tick nor under any lock.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, transaction

from apps.alerts import conditions
from apps.alerts.models import AlertIncident, AlertNotification, AlertRule
from apps.core.clock import now_ms

log = logging.getLogger(__name__)

_last_tick = 0


def _conf(key: str, default):
    return settings.CONDUCTOR.get(key, default)


def tick() -> int:
    """The sweeper tick hook: evaluate the due rules (throttled per process), then start
    the delivery job when notifications are due. Returns the incidents opened or resolved."""
    global _last_tick
    now = now_ms()
    if 0 <= now - _last_tick < int(_conf("ALERTS_TICK_MS", 1000)):
        return 0
    _last_tick = now
    changed = evaluate_due(now)
    from apps.alerts import delivery

    delivery.kick(now)
    return changed


def evaluate_due(now: int | None = None, limit: int = 50) -> int:
    """Evaluate every enabled rule due at ``now`` (at most ``limit``); returns the
    incidents opened or resolved. A rule whose evaluation raises is logged and retried
    at its next turn."""
    now = now_ms() if now is None else now
    due = list(AlertRule.objects.filter(enabled=True, next_evaluate_at__lte=now)
               .order_by("next_evaluate_at").values_list("pk", "next_evaluate_at")[:limit])
    changed = 0
    interval = int(float(_conf("ALERTS_EVALUATE_SECONDS", 15)) * 1000)
    for pk, due_at in due:
        if not AlertRule.objects.filter(pk=pk, next_evaluate_at=due_at).update(next_evaluate_at=now + interval):
            continue  # another evaluator has it
        rule = AlertRule.objects.filter(pk=pk).first()
        if rule is None:
            continue
        try:
            changed += evaluate(rule, now)
        except Exception:  # noqa: BLE001 - one bad rule must not stop the others
            log.exception("alert rule %s could not be evaluated", rule.name)
    return changed


def _payload(rule: AlertRule, incident: AlertIncident, event: str) -> dict:
    return {"event": event, "alert": rule.name, "ruleId": rule.pk, "condition": rule.condition,
            "workflowName": rule.workflow_name or None, "incidentId": incident.pk, "subject": incident.subject,
            "summary": incident.summary, "details": incident.details, "openedAt": incident.opened_at,
            "resolvedAt": incident.resolved_at}


def _notify(rule: AlertRule, incident: AlertIncident, event: str, now: int) -> None:
    payload = _payload(rule, incident, event)
    targets = ([("webhook", rule.webhook_url)] if rule.webhook_url else []) + [("email", e) for e in rule.emails or []]
    AlertNotification.objects.bulk_create([
        AlertNotification(incident=incident, event=event, channel=channel, target=target, next_attempt_at=now,
                          payload=payload) for channel, target in targets])


def evaluate(rule: AlertRule, now: int) -> int:
    """Open and resolve the incidents of one rule at ``now``; returns how many changed."""
    found = conditions.firing(rule, now)
    changed = 0
    open_ = {i.subject: i for i in AlertIncident.objects.filter(rule=rule, state="OPEN")}
    for subject, incident in open_.items():
        if subject in found:
            continue
        with transaction.atomic():
            if AlertIncident.objects.filter(pk=incident.pk, state="OPEN").update(state="RESOLVED", resolved_at=now):
                incident.state, incident.resolved_at = "RESOLVED", now
                _notify(rule, incident, "RESOLVED", now)
                changed += 1
    for subject, (summary, details) in found.items():
        if subject in open_:
            continue
        try:
            with transaction.atomic():
                incident = AlertIncident.objects.create(rule=rule, subject=subject[:512], opened_at=now,
                                                        summary=summary[:1024], details=details)
                _notify(rule, incident, "OPENED", now)
                changed += 1
        except IntegrityError:
            continue  # another evaluator opened it first
    return changed
