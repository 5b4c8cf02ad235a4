"""Conductor's AgentController paths under /api/agent (apps/agents/views.py)."""
from django.urls import path

from apps.agents import views

urlpatterns = [
    path("compile", views.CompileApi.as_view()),
    path("deploy", views.DeployApi.as_view()),
    path("start", views.StartApi.as_view()),
    path("stream/<str:execution_id>", views.StreamApi.as_view()),
    path("events/<str:execution_id>", views.FrameworkEventApi.as_view()),
    path("execution/<str:execution_id>", views.ExecutionApi.as_view()),
    path("executions", views.ExecutionsApi.as_view()),
    path("tasks/<str:execution_id>/<str:ref>/<str:status>", views.TaskStatusApi.as_view()),
    path("<str:execution_id>/status", views.StatusApi.as_view()),
    path("<str:execution_id>/respond", views.RespondApi.as_view()),
    path("<str:execution_id>/stop", views.StopApi.as_view()),
    path("<str:execution_id>/signal", views.SignalApi.as_view()),
    path("<str:name>", views.AgentDefApi.as_view()),
]
