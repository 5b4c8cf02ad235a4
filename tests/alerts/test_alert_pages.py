"""The alert pages (``/alerts/``): operators create, edit and delete rules through the
form (refusals come back with the field named, changes audited); read-only users see
the rules and the history and get 403 on every change."""
from __future__ import annotations

import pytest
from django.test import Client

from apps.alerts.models import AlertRule
from apps.ui.models import AuditLog
from tests.ui.conftest import make_user

pytestmark = pytest.mark.django_db


def test_operators_manage_rules_and_read_only_users_only_see():
    operator, viewer = Client(), Client()
    operator.force_login(make_user("al-operator", "operate_workflows"))
    viewer.force_login(make_user("al-viewer", "view_executions"))
    form = {"name": "slow orders", "workflowName": "order_fulfillment", "condition": "LONG_RUN",
            "thresholdSeconds": "600", "webhookUrl": "http://127.0.0.1:9/hook", "emails": "a@example.com, b@example.com",
            "enabled": "on"}
    created = operator.post("/alerts/new", form)
    rule = AlertRule.objects.get(name="slow orders")
    assert created.status_code == 302 and created["Location"] == f"/alerts/{rule.pk}"
    assert (rule.condition, rule.threshold_seconds, rule.emails) == ("LONG_RUN", 600, ["a@example.com", "b@example.com"])
    refused = operator.post("/alerts/new", {**form, "name": "other", "thresholdSeconds": ""})
    assert refused.status_code == 400 and "thresholdSeconds" in refused.content.decode()
    rate = operator.post(f"/alerts/{rule.pk}/edit", {**form, "condition": "FAILURE_RATE", "windowSeconds": "300",
                                                     "failurePercent": "25", "minRuns": "4"})
    assert rate.status_code == 302
    rule.refresh_from_db()
    assert (rule.failure_rate, rule.window_seconds, rule.min_runs) == (0.25, 300, 4)
    refused_edit = operator.post(f"/alerts/{rule.pk}/edit", {**form, "thresholdSeconds": "", "name": "renamed"})
    text = refused_edit.content.decode()
    assert refused_edit.status_code == 400 and "thresholdSeconds" in text and 'value="renamed"' in text
    assert 'id="alert-incidents"' in text and AlertRule.objects.get(pk=rule.pk).name == "slow orders"
    page = viewer.get("/alerts/").content.decode()
    assert "slow orders" in page and "failure rate ≥ 25% over 300 s" in page and 'id="new-rule"' not in page
    detail = viewer.get(f"/alerts/{rule.pk}").content.decode()
    assert 'id="edit-rule"' not in detail and 'id="alert-delete"' not in detail
    assert viewer.post("/alerts/new", form).status_code == 403
    assert viewer.post(f"/alerts/{rule.pk}/edit", form).status_code == 403
    assert viewer.post(f"/alerts/{rule.pk}/delete").status_code == 403
    assert viewer.get("/alerts/999999").status_code == 404
    assert operator.post(f"/alerts/{rule.pk}/delete").status_code == 302
    assert not AlertRule.objects.exists()
    assert [a.action for a in AuditLog.objects.order_by("pk")] == ["alert_rule_save", "alert_rule_save",
                                                                    "alert_rule_delete"]
