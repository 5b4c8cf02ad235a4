"""Routes under ``/api/scheduler`` (Conductor's SchedulerResource paths)."""
from django.urls import path

from apps.scheduler import views

urlpatterns = [
    path("schedules", views.SchedulesApi.as_view()),
    path("schedules/search", views.ScheduleSearchApi.as_view()),
    path("schedules/<str:name>", views.ScheduleApi.as_view()),
    path("schedules/<str:name>/pause", views.PauseScheduleApi.as_view()),
    path("schedules/<str:name>/resume", views.ResumeScheduleApi.as_view()),
    path("schedules/<str:name>/tags", views.ScheduleTagsApi.as_view()),
    # ours (no Conductor/Orkes equivalent): docs/schedules.md#backfill
    path("schedules/<str:name>/backfill", views.BackfillApi.as_view()),
    path("schedules/<str:name>/runs", views.ScheduleRunsApi.as_view()),
    path("bulk/pause", views.BulkScheduleApi.as_view(action="pause")),
    path("bulk/resume", views.BulkScheduleApi.as_view(action="resume")),
    path("nextFewSchedules", views.NextFewApi.as_view()),
    path("search/executions", views.ExecutionSearchApi.as_view()),
    path("admin/pause", views.AdminApi.as_view(action="pause")),
    path("admin/resume", views.AdminApi.as_view(action="resume")),
    path("admin/requeue", views.AdminApi.as_view(action="requeue")),
]
