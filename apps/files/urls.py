"""Routes under ``/api/files`` (Conductor's FileResource paths)."""
from django.urls import path

from apps.files import views

urlpatterns = [
    path("files", views.FilesApi.as_view()),
    path("files/content/<str:workflow_id>/<str:file_id>", views.content, name="file-content"),
    path("files/<str:workflow_id>/<str:file_id>", views.FileApi.as_view()),
    path("files/<str:workflow_id>/<str:file_id>/upload-url", views.UploadUrlApi.as_view()),
    path("files/<str:workflow_id>/<str:file_id>/download-url", views.DownloadUrlApi.as_view()),
    path("files/<str:workflow_id>/<str:file_id>/upload-complete", views.UploadCompleteApi.as_view()),
    path("files/<str:workflow_id>/<str:file_id>/multipart", views.MultipartApi.as_view()),
    path("files/<str:workflow_id>/<str:file_id>/multipart/<str:upload_id>", views.MultipartAbortApi.as_view()),
    path("files/<str:workflow_id>/<str:file_id>/multipart/<str:upload_id>/part/<str:part_number>",
         views.MultipartPartApi.as_view()),
    path("files/<str:workflow_id>/<str:file_id>/multipart/<str:upload_id>/complete",
         views.MultipartCompleteApi.as_view()),
]
