"""The rows of the file store: one ``StoredFile`` per file (Conductor's ``file_metadata``
table) and one ``MultipartUpload`` per multipart session still open.

A file belongs to one workflow execution (``workflow``, a foreign key with CASCADE): the
existing deletion path of executions (``retention.delete_executions``: the retention job,
``purge_executions``, ``DELETE /api/workflow/{id}/remove``) removes its rows, and
``services.connect_cleanup`` removes the stored content once that transaction committed.
Times are epoch milliseconds, sizes bytes.
"""
from __future__ import annotations

from django.db import models

UPLOADING = "UPLOADING"
UPLOADED = "UPLOADED"
UPLOAD_STATUSES = ("PENDING", UPLOADING, UPLOADED, "FAILED")  # Conductor's FileUploadStatus
STORAGE_TYPE = "CONDUCTOR"  # Conductor's StorageType for content served by the server itself


class StoredFile(models.Model):
    """One file. ``size_bytes``/``content_hash`` (SHA-256, hex) are those of the content
    written last; ``upload_status`` turns UPLOADED at upload-complete, after which the
    content never changes."""

    file_id = models.CharField(primary_key=True, max_length=64)
    workflow = models.ForeignKey("engine.WorkflowExecution", on_delete=models.CASCADE, related_name="+",
                                 db_column="workflow_id")
    task_id = models.CharField(max_length=64, null=True, blank=True)
    file_name = models.CharField(max_length=255)
    content_type = models.CharField(max_length=255)
    storage_type = models.CharField(max_length=32, default=STORAGE_TYPE)
    upload_status = models.CharField(max_length=16, default=UPLOADING)
    has_content = models.BooleanField(default=False)
    size_bytes = models.BigIntegerField(default=0)
    content_hash = models.CharField(max_length=128, null=True, blank=True)
    created_time = models.BigIntegerField()
    updated_time = models.BigIntegerField()

    class Meta:
        db_table = "files_stored_file"
        indexes = [models.Index(fields=["task_id"], name="files_task")]

    def __str__(self) -> str:
        return f"conductor://file/{self.file_id}"


class MultipartUpload(models.Model):
    """An open multipart session of a file (its parts are in the store until complete or
    abort); removed with its file."""

    upload_id = models.CharField(primary_key=True, max_length=64)
    file = models.ForeignKey(StoredFile, on_delete=models.CASCADE, related_name="+", db_column="file_id")
    created_time = models.BigIntegerField()

    class Meta:
        db_table = "files_multipart_upload"
