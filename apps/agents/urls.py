"""Conductor's AgentController paths under /api/agent (apps/agents/views.py)."""
from django.urls import path

from apps.agents import views

urlpatterns = [
    path("compile", views.CompileApi.as_view()),
    path("deploy", views.DeployApi.as_view()),
    path("inspect-plan", views.InspectPlanApi.as_view()),
    path("start", views.StartApi.as_view()),
    path("stream/<str:execution_id>", views.StreamApi.as_view()),
    path("events/<str:execution_id>", views.FrameworkEventApi.as_view()),
    path("execution/<str:execution_id>", views.ExecutionApi.as_view()),
    path("list", views.AgentListApi.as_view()),
    path("definitions/<str:name>", views.AgentDefinitionApi.as_view()),
    path("executions", views.ExecutionsApi.as_view()),
    path("executions/search", views.ExecutionsSearchApi.as_view()),
    path("executions/prune", views.PruneApi.as_view()),
    path("executions/bulk/<str:action>", views.BulkApi.as_view()),
    path("executions/<str:execution_id>", views.ExecutionDetailApi.as_view()),
    path("executions/<str:execution_id>/full", views.FullExecutionApi.as_view()),
    path("executions/<str:execution_id>/tasks", views.ExecutionTasksApi.as_view()),
    path("executions/<str:execution_id>/restart", views.RestartApi.as_view()),
    path("executions/<str:execution_id>/retry", views.RetryApi.as_view()),
    path("executions/<str:workflow_id>/rerun", views.RerunApi.as_view()),
    path("executions/<str:execution_id>/record", views.RecordApi.as_view()),
    path("tasks/<str:task_id>/log", views.TaskLogsApi.as_view()),
    path("tasks/<str:execution_id>/<str:ref>/<str:status>", views.TaskStatusApi.as_view()),
    path("<str:execution_id>/status", views.StatusApi.as_view()),
    path("<str:workflow_id>/pause", views.PauseApi.as_view()),
    path("<str:workflow_id>/resume", views.ResumeApi.as_view()),
    path("<str:execution_id>/cancel", views.CancelApi.as_view()),
    path("<str:execution_id>/respond", views.RespondApi.as_view()),
    path("<str:execution_id>/stop", views.StopApi.as_view()),
    path("<str:execution_id>/signal", views.SignalApi.as_view()),
    path("<str:name>", views.AgentDefApi.as_view()),
]
