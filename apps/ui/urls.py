"""Operator UI routes (the WebSocket route is in ``apps.ui.routing``)."""
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.urls import path, re_path

from apps.overview import views as overview
from apps.ui import tasklogs, views

app_name = "ui"

urlpatterns = [
    path("", overview.page, name="home"),  # the Overview (apps.overview)
    path("overview.json", overview.data, name="overview_data"),
    path("login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("executions/", views.executions, name="executions"),
    path("executions/bulk", views.bulk, name="bulk"),
    path("executions/bulk-query", views.bulk_query, name="bulk_query"),
    path("bulk-jobs/<str:job_id>", views.bulk_job, name="bulk_job"),
    path("bulk-jobs/<str:job_id>/cancel", views.bulk_job_cancel, name="bulk_job_cancel"),
    path("execution/<str:workflow_id>", views.execution, name="execution"),
    path("execution/<str:workflow_id>/live.json", views.execution_live, name="execution_live"),
    path("execution/<str:workflow_id>/history.json", views.execution_history, name="execution_history"),
    path("execution/<str:workflow_id>/agent.json", views.execution_agent, name="execution_agent"),
    path("execution/<str:workflow_id>/at.json", views.execution_at, name="execution_at"),
    path("execution/<str:workflow_id>/download/<str:what>", views.execution_download, name="execution_download"),
    path("execution/<str:workflow_id>/action/<str:name>", views.workflow_action, name="workflow_action"),
    path("execution/<str:workflow_id>/task-action/<str:name>", views.task_action, name="task_action"),
    path("execution/<str:workflow_id>/task/<str:task_id>.json", views.task_detail, name="task_detail"),
    path("execution/<str:workflow_id>/task/<str:task_id>/download/<str:what>", views.task_download,
         name="task_download"),
    path("execution/<str:workflow_id>/task/<str:task_id>/logs.json", tasklogs.task_logs, name="task_logs"),
    path("execution/<str:workflow_id>/task/<str:task_id>/logs.txt", tasklogs.task_logs_download,
         name="task_logs_download"),
    path("compare", views.compare, name="compare"),
    path("tasks/", views.task_search_page, name="tasks"),
    path("definitions/", views.definitions, name="definitions"),
    path("definitions/new", views.definition_new, name="definition_new"),
    path("definitions/check/<str:kind>", views.definition_check, name="definition_check"),
    path("definitions/save/<str:kind>", views.definition_save, name="definition_save"),
    # <path:name>: a name with '/' (refused since, but possibly stored before) still has pages
    path("definitions/<path:name>/<int:version>", views.definition, name="definition"),
    path("definitions/<path:name>/<int:version>/edit", views.definition_edit, name="definition_edit"),
    path("definitions/<path:name>/diff", views.definition_diff, name="definition_diff"),
    path("queues/", views.queues, name="queues"),
    path("start/", views.start, name="start"),
    path("audit/", views.audit, name="audit"),
    path("favicon.ico", views.favicon, name="favicon"),
    # Static files (CSS, scripts, vendored libraries) straight from the app's folders, so
    # `make run` (the server alone, DEBUG off) serves the pages whole without collectstatic.
    re_path(r"^" + settings.STATIC_URL.lstrip("/") + r"(?P<path>.*)$", views.static_file, name="static"),
]
