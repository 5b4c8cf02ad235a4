"""Operator pages of the alert rules, under ``/alerts/``."""
from django.urls import path

from apps.alerts import ui

app_name = "alerts"

urlpatterns = [
    path("", ui.alerts, name="alerts"),
    path("new", ui.alert_save, name="alert_new"),
    path("<str:rule_id>", ui.alert, name="alert"),
    path("<str:rule_id>/edit", ui.alert_save, name="alert_edit"),
    path("<str:rule_id>/delete", ui.alert_delete, name="alert_delete"),
]
