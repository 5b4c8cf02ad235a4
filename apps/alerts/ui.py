"""Operator pages of the alert rules, under ``/alerts/``: the rules with their open
incidents and the newest incidents of all (``/alerts/``), one rule with its history
(``/alerts/<id>``). Viewing needs ``ui.view_executions``; creating, editing and deleting
need ``ui.operate_workflows`` (refused with 403 otherwise) and are written to the audit log.
"""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.alerts import services
from apps.alerts.models import Condition
from apps.core.errors import ConductorError, NotFound
from apps.ui import actions
from apps.ui.permissions import operate_required, ui_context, view_required

HISTORY_SHOWN = 50


def _page(request, template: str, context: dict, status: int = 200):
    ctx = ui_context(request)
    ctx.update({"conditions": Condition.choices}, **context)
    return render(request, template, ctx, status=status)


def _body(post) -> dict:
    """A rule's JSON from the form's fields (numbers as typed; ``normalise`` checks them)."""
    def num(key, cast=int):
        raw = (post.get(key) or "").strip()
        if not raw:
            return None
        try:
            return cast(raw)
        except ValueError:
            return raw
    rate = num("failurePercent", float)
    return {"name": post.get("name", ""), "workflowName": post.get("workflowName", ""),
            "condition": post.get("condition", ""), "thresholdSeconds": num("thresholdSeconds"),
            "windowSeconds": num("windowSeconds"), "minRuns": num("minRuns"),
            "failureRate": rate / 100 if isinstance(rate, float) else rate, "taskType": post.get("taskType", ""),
            "webhookUrl": post.get("webhookUrl", ""),
            "emails": [e.strip() for e in (post.get("emails") or "").replace(";", ",").split(",") if e.strip()],
            "enabled": post.get("enabled") == "on"}


def _list_page(request, form: dict, status: int = 200):
    return _page(request, "ui/alerts.html", {"rules": services.rule_list(), "form": form,
                                            "incidents": services.incidents(size=HISTORY_SHOWN)}, status)


def _rule_page(request, rule, form: dict | None = None, status: int = 200):
    data = services.rule_json(rule)
    return _page(request, "ui/alert.html", {"rule": data, "form": data if form is None else form,
                                           "incidents": services.incidents(rule_id=rule.pk, size=HISTORY_SHOWN)},
                 status)


@view_required
@require_GET
def alerts(request):
    """``/alerts/``: every rule and the newest incidents."""
    return _list_page(request, {"enabled": True})


def _rule(rule_id):
    try:
        return services.rule_get(rule_id)
    except NotFound as exc:
        raise Http404(exc.message) from None


@view_required
@require_GET
def alert(request, rule_id: str):
    """``/alerts/<id>``: one rule, its form (operators) and its incidents."""
    return _rule_page(request, _rule(rule_id))


@operate_required
@require_POST
def alert_save(request, rule_id: str | None = None):
    """Create (no id) or update a rule from the form; on a refusal the form comes back
    with the message and what was typed."""
    body = _body(request.POST)
    user = request.user.get_username()
    try:
        saved = services.rule_save(body, rule_id=rule_id, user=user)
    except NotFound as exc:
        raise Http404(exc.message) from None
    except ConductorError as exc:
        messages.error(request, f"Alert rule not saved: {actions.error_text(exc)}")
        if rule_id is None:
            return _list_page(request, body, 400)
        return _rule_page(request, _rule(rule_id), body, 400)
    actions.record(request.user, "alert_rule_save", saved["name"], message="created" if rule_id is None else "updated")
    messages.success(request, f"Alert rule {saved['name']} saved.")
    return redirect("alerts:alert", rule_id=saved["id"])


@operate_required
@require_POST
def alert_delete(request, rule_id: str):
    """Delete a rule with its history."""
    rule = _rule(rule_id)
    services.rule_delete(rule.pk)
    actions.record(request.user, "alert_rule_delete", rule.name, message="deleted")
    messages.success(request, f"Alert rule {rule.name} deleted.")
    return redirect("alerts:alerts")
