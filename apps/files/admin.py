"""Read-only admin view of the stored files: which execution (and task) owns each, its
state, size and SHA-256; content is reached only through the API's signed URLs."""
from __future__ import annotations

from django.contrib import admin

from apps.engine.admin import ReadOnlyAdmin
from apps.files.models import StoredFile


@admin.register(StoredFile)
class StoredFileAdmin(ReadOnlyAdmin):
    list_display = ("file_id", "file_name", "content_type", "upload_status", "size_bytes", "workflow_id", "task_id",
                    "created_time")
    list_filter = ("upload_status", "storage_type")
    search_fields = ("file_id", "workflow__workflow_id", "task_id", "file_name")
