"""Routes of the problem views; included before ``apps.ui.urls`` (its namespace is
``problems``)."""
from django.urls import path

from apps.problems import views

app_name = "problems"

urlpatterns = [
    path("executions/export.<str:fmt>", views.export, name="export"),
    path("executions/views/save", views.view_save, name="view_save"),
    path("executions/view/<str:name>", views.saved_view, name="saved_view"),
    path("executions/view/<str:name>/delete", views.view_delete, name="view_delete"),
    path("execution/<str:workflow_id>/stuck", views.stuck_panel, name="stuck_panel"),
    path("definitions/<path:name>/grid", views.run_grid, name="grid"),
    path("inbox/", views.inbox_page, name="inbox"),
    path("inbox/<str:task_id>/complete", views.inbox_complete, name="inbox_complete"),
]
