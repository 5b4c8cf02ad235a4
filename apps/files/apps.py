from django.apps import AppConfig


class FilesConfig(AppConfig):
    """Conductor's file storage (``/api/files``): files owned by a workflow execution and
    passed between its tasks as ``conductor://file/<id>`` handles (docs/files.md)."""

    name = "apps.files"
    label = "files"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.files import services

        services.connect_cleanup()
