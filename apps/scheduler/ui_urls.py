"""Operator pages of the scheduler, under ``/schedules/``."""
from django.urls import path

from apps.scheduler import ui

app_name = "scheduler"

urlpatterns = [
    path("", ui.schedules, name="schedules"),
    path("<str:name>", ui.schedule, name="schedule"),
    path("<str:name>/backfill", ui.schedule_backfill, name="schedule_backfill"),
    path("<str:name>/<str:action>", ui.schedule_action, name="schedule_action"),
]
