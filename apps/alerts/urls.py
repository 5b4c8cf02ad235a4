"""Routes under ``/api/alerts`` (ours: docs/alerts.md)."""
from django.urls import path

from apps.alerts import views

urlpatterns = [
    path("rules", views.RulesApi.as_view()),
    path("rules/<str:rule_id>", views.RuleApi.as_view()),
    path("incidents", views.IncidentsApi.as_view()),
]
